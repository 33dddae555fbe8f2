package guard

import (
	"os"
	"runtime"
	"strings"

	"github.com/etdi-dev/etdi/trust"
)

// ListenTokenEnv is the variable etdi run reads the --listen token from
// (docs/gate.md#runtime-gate); [ServerEnv] never passes it on, even when asked to keep it.
const ListenTokenEnv = "ETDI_LISTEN_TOKEN"

// ServerEnv is the environment a server is started with, from env (the
// environment etdi was given, and what a host configuration sets for the
// server): every ETDI_* variable is removed (etdi's own settings and
// secrets: key and audit passwords, etcd credentials, the --listen
// token), and so is every variable named in secret (those etdi read a
// secret from: --header-env, the trust policy's introspection client
// secret; [SecretEnv]). A variable named in keep is kept: one the host
// configuration sets for the server on purpose; the --listen token never.
// Names are compared as the system does (without case on Windows).
//
// A variable that carries the value of one removed (a configuration's
// "X": "${ETDI_PASSWORD}") is removed too, when that value is at least
// [MinCredential] bytes long: shorter ones cannot be told from ordinary
// settings. A variable whose value holds a removed secret's (one named
// in secret, or an ETDI_* password or token: "Bearer ${ETDI_PASSWORD}")
// is removed as well.
func ServerEnv(env, secret, keep []string) []string {
	removed := func(name string) bool {
		return removedEnv(name, secret) && (!inEnvList(name, keep) || sameEnvName(name, ListenTokenEnv))
	}
	values := map[string]bool{}
	var inside []string // secrets' values, caught within another value too
	for _, kv := range env {
		if name, v, ok := strings.Cut(kv, "="); ok && name != "" && removed(name) && len(v) >= MinCredential {
			values[v] = true
			if secretName(name, secret) {
				inside = append(inside, v)
			}
		}
	}
	carries := func(v string) bool {
		for _, s := range inside {
			if strings.Contains(v, s) {
				return true
			}
		}
		return false
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, v, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			out = append(out, kv) // not a variable (Windows' "=C:=C:\" entries)
			continue
		}
		if removed(name) || values[v] || carries(v) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// secretName reports whether the variable name holds a secret, so that a
// value merely holding its value ("Bearer ${ETDI_PASSWORD}") is removed
// too: one etdi read a secret from, or an ETDI_* password or token.
func secretName(name string, secret []string) bool {
	up := strings.ToUpper(name)
	return inEnvList(name, secret) || strings.HasPrefix(up, "ETDI_") &&
		(strings.Contains(up, "PASSWORD") || strings.Contains(up, "TOKEN") || strings.Contains(up, "SECRET"))
}

// removedEnv reports whether ServerEnv removes the variable name.
// Any name Windows takes for an ETDI_* one is removed everywhere: it
// upper-cases names to compare them, under which "ı" is "I".
func removedEnv(name string, secret []string) bool {
	return len(name) >= 5 && strings.EqualFold(name[:5], "ETDI_") ||
		strings.HasPrefix(strings.ToUpper(name), "ETDI_") || inEnvList(name, secret)
}

func inEnvList(name string, list []string) bool {
	for _, n := range list {
		if sameEnvName(name, n) {
			return true
		}
	}
	return false
}

func sameEnvName(a, b string) bool {
	if runtime.GOOS == "windows" {
		return strings.EqualFold(a, b) || strings.ToUpper(a) == strings.ToUpper(b)
	}
	return a == b
}

// SecretEnv are the variables the trust policy has etdi read a secret
// from (an identity provider's introspection client secret), which a
// server is not given ([ServerEnv]).
func SecretEnv(p *trust.Policy) []string {
	var out []string
	if p == nil {
		return nil
	}
	for _, prov := range p.Providers {
		if prov.IDP != nil && prov.IDP.Introspection != nil && prov.IDP.Introspection.ClientSecretEnv != "" {
			out = append(out, prov.IDP.Introspection.ClientSecretEnv)
		}
	}
	return out
}

// serverEnv is the environment s is started with: its Env (etdi's own
// when nil) under ServerEnv's rule.
func (s Launch) serverEnv() []string {
	env := s.Env
	if env == nil {
		env = os.Environ()
	}
	return ServerEnv(env, s.SecretEnv, s.KeepEnv)
}
