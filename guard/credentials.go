package guard

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/redact"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/strictjson"
)

// MinCredential is the length under which a configured credential is not
// looked for in definitions: a shorter value cannot be told apart from
// the words of a description.
const MinCredential = 6

// Credential is a value the server is configured with that is a
// credential (an API key in its environment, an Authorization header, a
// --token argument), and where it is configured. Where never holds the
// value: it is what findings say (SPEC.md §14).
type Credential struct {
	Where string
	Value string
}

// addCredential appends a credential unless it is too short to look for.
func addCredential(cs []Credential, where, value string) []Credential {
	if len(value) < MinCredential {
		return cs
	}
	cs = append(cs, Credential{where, value})
	// "Bearer <token>": the token alone may be shown too.
	if f := strings.Fields(value); len(f) > 1 {
		for _, w := range f {
			if len(w) >= 8 || redact.LooksSecret(w) {
				cs = append(cs, Credential{where, w})
			}
		}
	}
	return cs
}

// CommandCredentials are the credentials of a command line: the argument
// after a flag named like a credential (--api-key VALUE), the value of
// such a flag or NAME=VALUE (--token=VALUE, API_KEY=VALUE), any argument
// or value that looks like a credential, and the credentials of URLs.
func CommandCredentials(argv []string) []Credential {
	var cs []Credential
	for i, a := range argv {
		k, v, assign := strings.Cut(a, "=")
		if strings.Contains(k, "://") {
			k, v, assign = a, "", false // a URL with a query
		}
		name := strings.TrimLeft(k, "-")
		switch {
		case assign && (redact.CredentialName(name) || redact.LooksSecret(v)):
			cs = addCredential(cs, fmt.Sprintf("the value of argument %d (%s)", i, redact.Args([]string{a})[0]), v)
		case !assign && redact.LooksSecret(a):
			cs = addCredential(cs, fmt.Sprintf("argument %d", i), a)
		}
		if !assign && strings.HasPrefix(a, "-") && redact.CredentialName(name) && i+1 < len(argv) {
			cs = addCredential(cs, fmt.Sprintf("argument %d, after %s", i+1, a), argv[i+1])
		}
		if assign && strings.Contains(v, "://") {
			cs = append(cs, URLCredentials(v, nil)...)
		} else if strings.Contains(a, "://") {
			cs = append(cs, URLCredentials(a, nil)...)
		}
	}
	return cs
}

// URLCredentials are the credentials of a URL and its headers: the
// password, the query values named like a credential or looking like
// one, the path segments that look like one, and the header values named
// like a credential (Authorization, X-Api-Key, ...) or looking like one.
func URLCredentials(raw string, h http.Header) []Credential {
	var cs []Credential
	if u, err := url.Parse(raw); err == nil {
		if pw, ok := u.User.Password(); ok {
			cs = addCredential(cs, "the URL's password", pw)
		}
		q := u.Query()
		for _, k := range sortedKeys(q) {
			for _, v := range q[k] {
				if redact.CredentialName(k) || redact.LooksSecret(v) {
					cs = addCredential(cs, fmt.Sprintf("the URL's query value %q", redact.Args([]string{k})[0]), v)
				}
			}
		}
		for _, seg := range strings.Split(u.Path, "/") {
			if redact.LooksSecret(seg) {
				cs = addCredential(cs, "a segment of the URL's path", seg)
			}
		}
	}
	for _, k := range sortedKeys(h) {
		for _, v := range h[k] {
			if redact.CredentialName(k) || redact.LooksSecret(v) {
				cs = addCredential(cs, fmt.Sprintf("header %q", k), v)
			}
		}
	}
	return cs
}

// EnvCredentials are the credentials of environment values configured
// for a server: the values of variables named like a credential (API_KEY,
// GITHUB_TOKEN, ...) or looking like one.
func EnvCredentials(env map[string]string) []Credential {
	var cs []Credential
	for _, k := range sortedKeys(env) {
		if v := env[k]; redact.CredentialName(k) || redact.LooksSecret(v) {
			cs = addCredential(cs, fmt.Sprintf("env %s", k), v)
		}
	}
	return cs
}

// InheritedCredentials are the credentials of a whole process environment
// a server inherits (etdi run passes on what the host gave it): only the
// values of variables named like a credential. Values that merely look
// like one are not taken: a home directory or a path may, and a tool that
// names one is no leak.
func InheritedCredentials(env []string) []Credential {
	var cs []Credential
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && redact.CredentialName(k) {
			cs = addCredential(cs, fmt.Sprintf("env %s", k), v)
		}
	}
	return cs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// credentialSearch looks for credentials in text, in each form they take
// in JSON (canonical or as encoding/json writes it), a Go quoted string
// or a URL; the forms are computed once.
type credentialSearch struct {
	creds []Credential
	forms [][]string
}

func newCredentialSearch(creds []Credential) *credentialSearch {
	s := &credentialSearch{creds: creds, forms: make([][]string, len(creds))}
	for i, c := range creds {
		canon := string(strictjson.AppendCanonical(nil, &strictjson.Value{Kind: strictjson.String, Str: c.Value}))
		forms := append(redact.Forms(c.Value), canon[1:len(canon)-1])
		slices.Sort(forms)
		s.forms[i] = slices.Compact(forms)
	}
	return s
}

// shown returns where the credentials shown in text are configured, or
// nil.
func (s *credentialSearch) shown(text string) []string {
	var where []string
	for i, c := range s.creds {
		for _, f := range s.forms[i] {
			if len(f) >= MinCredential && strings.Contains(text, f) {
				if len(where) == 0 || where[len(where)-1] != c.Where {
					where = append(where, c.Where)
				}
				break
			}
		}
	}
	return where
}

// CredentialFindings looks for the credentials in what a server shows the
// model: each tool definition (its canonical bytes, which the digest
// covers), the instructions and the _meta objects of tools/list (where an
// in-band bundle comes from). Each place that shows one is an error
// finding that names the place and where the credential is configured,
// never the credential, which is masked in the tool's name too. A
// definition that shows a configured credential is never compared,
// approved, recorded or saved (SPEC.md §14).
func CredentialFindings(l *Listing, creds []Credential) []finding.Finding {
	if len(creds) == 0 || l == nil {
		return nil
	}
	s := newCredentialSearch(creds)
	var mask redact.Set
	for _, c := range creds {
		mask.Add(c.Value)
	}
	var fs []finding.Finding
	add := func(item, tool, what string, where []string) {
		fs = append(fs, finding.Finding{Kind: finding.SecretInDefinition, Severity: finding.Error, Item: item, Tool: tool,
			Message: mask.String(fmt.Sprintf("%s shows the model a secret the server is configured with (%s): it is not compared, approved or recorded; take the secret out of what the server shows",
				what, strings.Join(where, ", ")))})
	}
	lists := [][]etdi.LiveTool{l.Tools, l.Prompts, l.Resources, l.Templates}
	for i, item := range []string{pin.ItemTool, pin.ItemPrompt, pin.ItemResource, pin.ItemTemplate} {
		for _, lt := range lists[i] {
			where := s.shown(string(lt.Canonical))
			if where == nil {
				continue
			}
			name := mask.String(lt.Name)
			if len(s.shown(lt.Name)) > 0 {
				name = redact.Mask
			}
			var fields []string
			if v, err := strictjson.Parse(lt.Canonical); err == nil && v.Kind == strictjson.Object {
				for _, m := range v.Members {
					if s.shown(m.Name) != nil || s.shown(string(strictjson.AppendCanonical(nil, m.Value))) != nil {
						fields = append(fields, mask.String(m.Name))
					}
				}
			}
			add(item, name, fmt.Sprintf("%s %q (in %s)", pin.ItemWord(item), name, strings.Join(fields, ", ")), where)
			fs[len(fs)-1].Fields = fields
		}
	}
	if l.Instructions != nil {
		if where := s.shown(*l.Instructions); where != nil {
			add("", "", "the server's instructions", where)
		}
	}
	for _, m := range append(append([]*strictjson.Value{}, l.Metas...), l.ToolMetas...) {
		if where := s.shown(string(strictjson.AppendCanonical(nil, m))); where != nil {
			add("", "", "the _meta of the server's tools/list", where)
			break
		}
	}
	return fs
}
