// Package redact keeps the secrets a server is configured with out of what
// etdi prints and stores (docs/output.md#redacting-configured-secrets).
//
// A Set collects the values that may be secrets: the environment values and
// header values of a host configuration entry, the user information and
// query values of a URL, the values of NAME=VALUE and --flag=value
// arguments, the argument after a flag named like a credential (--token,
// --api-key, ...) and any argument that looks like a credential. Set.String
// and Set.Error replace every one of them in text, such as a server's
// captured stderr or an error that quotes it. URL and Args give the forms of
// a URL and a command line that are safe to show.
//
// Values shorter than MinLen bytes are not replaced: masking every "1" or
// "on" would garble the text and hides nothing worth hiding.
package redact

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Mask replaces a secret in text.
const Mask = "[redacted]"

// MinLen is the length under which a value is not replaced in text.
const MinLen = 4

// Set is a set of secret values. The zero Set is empty and ready to use.
type Set struct {
	vals map[string]bool
}

// Add adds values, with the forms they take when quoted or escaped.
func (s *Set) Add(vals ...string) {
	for _, v := range vals {
		s.add(v)
		// "Bearer <token>": the token alone may appear too.
		if f := strings.Fields(v); len(f) > 1 {
			for _, w := range f {
				if len(w) >= 8 || LooksSecret(w) {
					s.add(w)
				}
			}
		}
	}
}

func (s *Set) add(v string) {
	if len(v) < MinLen {
		return
	}
	if s.vals == nil {
		s.vals = map[string]bool{}
	}
	for _, f := range Forms(v) {
		s.vals[f] = true
	}
}

// Forms returns v and the forms it takes inside a Go %q, a JSON string
// (escaped as encoding/json escapes it, or with only the escapes JSON
// requires, as RFC 8785 canonical JSON does) and a URL.
func Forms(v string) []string {
	q := strconv.Quote(v)
	out := []string{v, q[1 : len(q)-1], url.QueryEscape(v), url.PathEscape(v)}
	if j, err := json.Marshal(v); err == nil {
		out = append(out, string(j[1:len(j)-1]))
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) == nil {
		j := strings.TrimSpace(b.String())
		out = append(out, j[1:len(j)-1])
	}
	return out
}

// Holds reports whether text holds a value of the set, in any of its
// forms: whether String would change it. A nil Set holds nothing.
func (s *Set) Holds(text string) bool {
	if s == nil {
		return false
	}
	for v := range s.vals {
		if strings.Contains(text, v) {
			return true
		}
	}
	return false
}

// AddURL adds the user information, query values and fragment of a URL,
// and the path segments that look like credentials.
func (s *Set) AddURL(raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		// Unparsable: everything after the scheme may be a secret.
		if _, rest, ok := strings.Cut(raw, "://"); ok {
			s.Add(rest)
		}
		return
	}
	if u.User != nil {
		name := u.User.Username()
		pw, hasPW := u.User.Password()
		// A short user name is still user information: mask it in the
		// forms URLs print it (net/http shows "user:***@host").
		s.Add(name, pw, u.User.String(), name+"@", name+":***", name+":"+pw)
		if hasPW {
			s.Add(base64.StdEncoding.EncodeToString([]byte(name + ":" + pw)))
		}
	}
	for _, vs := range u.Query() {
		s.Add(vs...)
	}
	for _, kv := range strings.Split(u.RawQuery, "&") {
		if _, v, ok := strings.Cut(kv, "="); ok {
			s.Add(v)
		} else {
			s.Add(kv)
		}
	}
	s.Add(u.Fragment, u.RawFragment)
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		if SegmentSecret(seg) {
			s.Add(seg)
			if d, err := url.PathUnescape(seg); err == nil {
				s.Add(d)
			}
		}
	}
}

// AddArgs adds the values of a command line that may be secrets.
func (s *Set) AddArgs(argv []string) {
	for i, a := range argv {
		k, v, assign := strings.Cut(a, "=")
		if assign {
			if !packageFlags[k] || LooksSecret(v) {
				s.Add(v)
			}
			if strings.Contains(v, "://") {
				s.AddURL(v)
			}
		}
		if strings.Contains(a, "://") {
			s.AddURL(a)
		}
		if LooksSecret(k) || !assign && LooksSecret(a) {
			s.Add(a)
		}
		if credentialFlag(a) && i+1 < len(argv) {
			s.Add(argv[i+1])
		}
	}
}

// Empty reports whether the set holds no value.
func (s *Set) Empty() bool { return len(s.vals) == 0 }

// String returns text with every value of the set replaced by Mask,
// longest values first.
func (s *Set) String(text string) string {
	if s == nil || len(s.vals) == 0 {
		return text
	}
	vals := make([]string, 0, len(s.vals))
	for v := range s.vals {
		vals = append(vals, v)
	}
	sort.Slice(vals, func(i, j int) bool {
		if len(vals[i]) != len(vals[j]) {
			return len(vals[i]) > len(vals[j])
		}
		return vals[i] < vals[j]
	})
	pairs := make([]string, 0, 2*len(vals))
	for _, v := range vals {
		pairs = append(pairs, v, Mask)
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

// Tail is String for text that is the end of a longer stream, such as the
// last bytes a server wrote to stderr: a secret cut by the start of text
// leaves its end there, which is masked too when MinLen bytes or longer.
func (s *Set) Tail(text string) string {
	if s == nil || len(s.vals) == 0 {
		return text
	}
	cut := 0
	for v := range s.vals {
		for n := len(v) - 1; n >= MinLen && n > cut; n-- {
			if strings.HasPrefix(text, v[len(v)-n:]) {
				cut = n
				break
			}
		}
	}
	if cut > 0 {
		return Mask + s.String(text[cut:])
	}
	return s.String(text)
}

// Error returns err with its message redacted; errors.Is and errors.As
// still see the original. A nil err stays nil.
func (s *Set) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := s.String(err.Error())
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// URL returns a form of raw that is safe to show: without user
// information or fragment, each query value and each path segment that
// looks like a credential replaced by Mask. A URL that does not parse is
// shown as Mask.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return Mask
	}
	u.User = nil
	u.Fragment, u.RawFragment = "", ""
	segs := strings.Split(u.EscapedPath(), "/")
	changed := false
	for i, seg := range segs {
		if SegmentSecret(seg) {
			segs[i], changed = Mask, true
		}
	}
	if changed {
		p := strings.Join(segs, "/")
		u.Path, u.RawPath = p, p
	}
	var q []string
	if u.RawQuery != "" {
		for _, kv := range strings.Split(u.RawQuery, "&") {
			k, _, _ := strings.Cut(kv, "=")
			if SegmentSecret(k) {
				k = Mask
			}
			q = append(q, k+"="+Mask)
		}
	}
	u.RawQuery = ""
	u.ForceQuery = false
	out := u.String()
	if len(q) > 0 {
		out += "?" + strings.Join(q, "&")
	}
	return out
}

// Args returns a form of a command line that is safe to show: the value of
// each NAME=VALUE or --flag=value argument, the argument after a flag
// named like a credential and every argument that looks like a credential
// replaced by Mask; URLs as URL shows them.
func Args(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		switch {
		case i > 0 && credentialFlag(argv[i-1]):
			out[i] = Mask
		case strings.Contains(a, "://"):
			if k, v, ok := strings.Cut(a, "="); ok && !strings.Contains(k, "://") {
				out[i] = k + "=" + URL(v) // --url=https://...
			} else {
				out[i] = URL(a)
			}
		case strings.Contains(a, "="):
			k, _, _ := strings.Cut(a, "=")
			if LooksSecret(k) {
				k = Mask
			}
			out[i] = k + "=" + Mask
		case LooksSecret(a):
			out[i] = Mask
		default:
			out[i] = a
		}
	}
	return out
}

// packageFlags name the package a runner starts (npx --package=PKG, uvx
// --from=PKG, pipx run --spec=PKG): their value is the server's name, not
// a secret, unless it looks like one or holds a URL (whose credentials
// AddURL adds).
var packageFlags = map[string]bool{"--package": true, "--from": true, "--spec": true}

// CredentialName reports whether name is that of a credential: an
// environment variable, header or flag (without its dashes) named like
// API_KEY, GITHUB_TOKEN, Authorization, X-Api-Key, password, ...
func CredentialName(name string) bool {
	return credentialFlag("--" + strings.TrimLeft(name, "-"))
}

// credentialFlag reports whether a is a flag whose value is a credential:
// --token, --api-key, -password, --auth-header, ... (without "=value").
func credentialFlag(a string) bool {
	if !strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
		return false
	}
	name := strings.ToLower(strings.TrimLeft(a, "-"))
	for _, w := range []string{"token", "secret", "password", "passwd", "apikey", "api-key", "api_key", "auth", "credential", "bearer", "cookie", "private-key", "access-key", "client-key"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return name == "key" || name == "pat" || strings.HasSuffix(name, "-key") || strings.HasSuffix(name, "_key")
}

// SegmentSecret reports whether a URL path segment or query key looks like
// a credential.
func SegmentSecret(seg string) bool {
	if seg == "" {
		return false
	}
	if d, err := url.PathUnescape(seg); err == nil {
		seg = d
	}
	return strings.ContainsAny(seg, "=;") || LooksSecret(seg)
}

// Prefixes of well-known credential formats (case matters).
var credentialPrefixes = []string{
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "gldt-",
	"sk-", "sk_live_", "sk_test_", "rk_live_", "rk_test_", "pk_live_",
	"xoxb-", "xoxp-", "xoxa-", "xoxs-", "xapp-", "AKIA", "ASIA", "AIza", "ya29.",
	"npm_", "pypi-", "hf_", "shpat_", "shpss_", "dop_v1_", "lin_api_", "ntn_",
	"eyJ", // a JWT: base64url of '{"'
}

var (
	hexRun    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[0-9a-fA-F]{32,}`) })
	tokenRun  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z0-9+/_\-]{20,}`) })
	digitRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[0-9]`) })
	upperRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Z]`) })
	lowerRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[a-z]`) })
	longAlnum = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z0-9]{40,}`) })
)

// LooksSecret reports whether s looks like a credential: it starts with
// the prefix of a well-known token format followed by 16 or more bytes
// with a digit among them, or it holds a run of 32 or more
// hexadecimal digits, a run of 40 or more letters and digits, or a run of
// 20 or more token characters that mixes upper case, lower case and
// digits. Package names, image names and file names do not: they are
// lower case, or short, or split by punctuation.
func LooksSecret(s string) bool {
	for _, p := range credentialPrefixes {
		// The random part of a token is long and, in practice, holds a digit.
		if rest, ok := strings.CutPrefix(s, p); ok && len(rest) >= 16 && digitRE().MatchString(rest) {
			return true
		}
	}
	if hexRun().MatchString(s) || longAlnum().MatchString(s) {
		return true
	}
	for _, run := range tokenRun().FindAllString(s, -1) {
		if digitRE().MatchString(run) && upperRE().MatchString(run) && lowerRE().MatchString(run) {
			return true
		}
	}
	return false
}
