package main

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/hostconfig"
	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/internal/redact"
	"github.com/etdi-dev/etdi/verify"
)

// minCredential is the length under which a configured credential is not
// looked for in definitions: a shorter value cannot be told apart from
// the words of a description.
const minCredential = 6

// credential is a configured value that is a credential, and where it is
// configured; where never holds the value.
type credential struct {
	where string
	value string
}

// add appends a credential unless it is too short to look for.
func addCredential(cs []credential, where, value string) []credential {
	if len(value) < minCredential {
		return cs
	}
	cs = append(cs, credential{where, value})
	// "Bearer <token>": the token alone may be shown too.
	if f := strings.Fields(value); len(f) > 1 {
		for _, w := range f {
			if len(w) >= 8 || redact.LooksSecret(w) {
				cs = append(cs, credential{where, w})
			}
		}
	}
	return cs
}

// credentialsOfArgs are the credentials of a command line: the argument
// after a flag named like a credential (--api-key VALUE), the value of
// such a flag or NAME=VALUE (--token=VALUE, API_KEY=VALUE), any argument
// or value that looks like a credential, and the credentials of URLs.
func credentialsOfArgs(argv []string) []credential {
	var cs []credential
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
			cs = append(cs, credentialsOfURL(v, nil)...)
		} else if strings.Contains(a, "://") {
			cs = append(cs, credentialsOfURL(a, nil)...)
		}
	}
	return cs
}

// credentialsOfURL are the credentials of a URL and its headers: the
// password, the query values named like a credential or looking like
// one, the path segments that look like one, and the header values named
// like a credential (Authorization, X-Api-Key, ...) or looking like one.
func credentialsOfURL(raw string, h http.Header) []credential {
	var cs []credential
	if u, err := url.Parse(raw); err == nil {
		if pw, ok := u.User.Password(); ok {
			cs = addCredential(cs, "the URL's password", pw)
		}
		q := u.Query()
		for _, k := range sortedKeysOf(q) {
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
	for _, k := range sortedKeysOf(h) {
		for _, v := range h[k] {
			if redact.CredentialName(k) || redact.LooksSecret(v) {
				cs = addCredential(cs, fmt.Sprintf("header %q", k), v)
			}
		}
	}
	return cs
}

// credentialsOfEntry are the credentials of a host configuration entry:
// env values of variables named like a credential (API_KEY, GITHUB_TOKEN,
// ...) or looking like one, and the credentials of its headers, URL and
// arguments.
func credentialsOfEntry(en *hostconfig.Entry) []credential {
	var cs []credential
	keys := make([]string, 0, len(en.Env))
	for k := range en.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v := en.Env[k]; redact.CredentialName(k) || redact.LooksSecret(v) {
			cs = addCredential(cs, fmt.Sprintf("env %s", k), v)
		}
	}
	h := http.Header{}
	for k, v := range en.Headers {
		h.Set(k, v)
	}
	cs = append(cs, credentialsOfURL(en.URL, h)...)
	return append(cs, credentialsOfArgs(en.Args)...)
}

func sortedKeysOf[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// shown returns where the credentials shown in text are configured, or
// nil. A credential counts in each form it takes in JSON (canonical or as
// encoding/json writes it), a Go quoted string or a URL.
func (t *target) shown(text string) []string {
	if t.credForms == nil {
		t.credForms = make([][]string, len(t.credentials))
		for i, c := range t.credentials {
			canon := string(etdi.AppendCanonical(nil, &etdi.Value{Kind: etdi.String, Str: c.value}))
			forms := append(redact.Forms(c.value), canon[1:len(canon)-1])
			slices.Sort(forms)
			t.credForms[i] = slices.Compact(forms)
		}
	}
	var where []string
	for i, c := range t.credentials {
		for _, f := range t.credForms[i] {
			if len(f) >= minCredential && strings.Contains(text, f) {
				if len(where) == 0 || where[len(where)-1] != c.where {
					where = append(where, c.where)
				}
				break
			}
		}
	}
	return where
}

// shownCredentials looks for the target's credentials in what its server
// shows the model: each tool definition (its canonical bytes, which the
// digest covers), the instructions and the _meta objects of tools/list
// (where an in-band bundle comes from). Each place that shows one is an
// error finding that names the place and where the credential is
// configured, never the credential, which is masked in the tool's name
// too.
func (t *target) shownCredentials(l *mcpclient.Listing) []verify.Finding {
	if len(t.credentials) == 0 {
		return nil
	}
	var creds redact.Set
	for _, c := range t.credentials {
		creds.Add(c.value)
	}
	var fs []verify.Finding
	add := func(tool, what string, where []string) {
		fs = append(fs, verify.Finding{Kind: verify.SecretInDefinition, Severity: verify.Error, Tool: tool,
			Message: creds.String(fmt.Sprintf("%s shows the model a secret the server is configured with (%s): it is not compared, approved or recorded; take the secret out of what the server shows",
				what, strings.Join(where, ", ")))})
	}
	for _, lt := range l.Tools {
		where := t.shown(string(lt.Canonical))
		if where == nil {
			continue
		}
		name := creds.String(lt.Name)
		if len(t.shown(lt.Name)) > 0 {
			name = redact.Mask
		}
		var fields []string
		if v, err := etdi.ParseJSON(lt.Canonical); err == nil && v.Kind == etdi.Object {
			for _, m := range v.Members {
				if t.shown(m.Name) != nil || t.shown(string(etdi.AppendCanonical(nil, m.Value))) != nil {
					fields = append(fields, creds.String(m.Name))
				}
			}
		}
		add(name, fmt.Sprintf("tool %q (in %s)", name, strings.Join(fields, ", ")), where)
		fs[len(fs)-1].Fields = fields
	}
	if l.Instructions != nil {
		if where := t.shown(*l.Instructions); where != nil {
			add("", "the server's instructions", where)
		}
	}
	for _, m := range append(append([]*etdi.Value{}, l.Metas...), l.ToolMetas...) {
		if where := t.shown(string(etdi.AppendCanonical(nil, m))); where != nil {
			add("", "the _meta of the server's tools/list", where)
			break
		}
	}
	return fs
}
