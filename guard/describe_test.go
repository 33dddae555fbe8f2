package guard

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/hostconfig"
)

// A server without a bundle is pinned under what it runs: the package a
// runner starts (npx, uvx), the image docker runs, the package.json name
// of the script node runs; never a secret of its arguments.
func TestDescribeDerivedIdentity(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "server.js")
	os.WriteFile(script, []byte("// a server\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name": "@acme/local-weather"}`), 0o644)
	for _, tt := range []struct {
		argv []string
		want string
	}{
		{[]string{"npx", "-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/home"}, "@modelcontextprotocol/server-filesystem"},
		{[]string{"npx", "--api-key", "sk-live-4f9a8b7c6d5e4f3a2b1c", "-y", "weather-mcp"}, "weather-mcp"},
		{[]string{"uvx", "mcp-server-fetch==1.2.0"}, "mcp-server-fetch"},
		{[]string{"docker", "run", "-i", "--rm", "ghcr.io/acme/weather:1.2"}, "ghcr.io/acme/weather"},
		{[]string{"node", script}, "@acme/local-weather"},
		{[]string{filepath.Join(dir, "weather-server"), "--token=tok-9f8e7d6c5b4a3f2e"}, "weather-server"},
	} {
		s := Describe(tt.argv, "", nil, "", nil, false)
		if s.Name != tt.want {
			t.Errorf("%q: pinned under %q, want %q", tt.argv, s.Name, tt.want)
		}
		if strings.Contains(s.Label, "sk-live") || strings.Contains(s.Label, "tok-9f8e") {
			t.Errorf("%q: label shows a secret: %s", tt.argv, s.Label)
		}
	}
	if s := Describe([]string{"npx", "-y", "weather-mcp"}, "", nil, "mine", nil, false); s.Name != "mine" {
		t.Errorf("a name given is kept: %q", s.Name)
	}
}

// The headers of a URL server are credentials a definition may not show,
// masked wherever the server is named; a URL whose path is a secret gives
// no name.
func TestDescribeURLHeaderCredentials(t *testing.T) {
	h, err := ParseHeaders([]string{"Authorization: Bearer tok-1a2b3c4d5e6f7a8b", " X-Team : blue "})
	if err != nil {
		t.Fatal(err)
	}
	if h.Get("X-Team") != "blue" {
		t.Fatalf("header trimmed: %q", h)
	}
	s := Describe(nil, "https://user:pw-9z8y7x6w5v@mcp.example/v1/mcp?key=qk-5a4b3c2d1e", h, "", nil, false)
	if s.Name != "mcp.example/v1/mcp" {
		t.Errorf("pinned under %q", s.Name)
	}
	var where []string
	for _, c := range s.Credentials {
		where = append(where, c.Where)
	}
	for _, w := range []string{`header "Authorization"`, "the URL's password", `the URL's query value "key"`} {
		if !slices.Contains(where, w) {
			t.Errorf("credential %s not found: %q", w, where)
		}
	}
	for _, secret := range []string{"tok-1a2b3c4d5e6f7a8b", "pw-9z8y7x6w5v", "qk-5a4b3c2d1e"} {
		if strings.Contains(s.Label, secret) {
			t.Errorf("label shows %s: %s", secret, s.Label)
		}
		if got := s.Secrets.String("at " + secret); strings.Contains(got, secret) {
			t.Errorf("%s not masked: %s", secret, got)
		}
	}
	if srv := s.Server(); srv.URL == "" || srv.Header.Get("Authorization") == "" || srv.Command != nil {
		t.Errorf("server: %+v", srv)
	}
	if s := Describe(nil, "https://mcp.example/ghp_0123456789abcdefghijklmnopqrstuvwxyz", nil, "", nil, false); strings.Contains(s.Name, "ghp_") {
		t.Errorf("a URL whose path is a secret pinned under %q", s.Name)
	}
}

// A header that is not "Name: value", or a variable that is not set, is
// refused, and the error never quotes a header's text, which may be a
// secret.
func TestDescribeHostileHeaders(t *testing.T) {
	const secret = "Bearertok-5f4e3d2c1b0a"
	_, err := ParseHeaders([]string{"A: b", secret})
	var he *HeaderError
	if !errors.As(err, &he) || he.Index != 1 || strings.Contains(err.Error(), secret) {
		t.Fatalf("a header without a colon: %v", err)
	}
	if _, err := ParseHeaders([]string{" : value"}); err == nil {
		t.Fatal("a header without a name accepted")
	}
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"TOKEN": "env-tok-0a9b8c7d6e", "EMPTY": ""}[k]
		return v, ok
	}
	h := http.Header{}
	if err := AddHeaderEnv(h, []string{"Authorization=TOKEN"}, lookup); err != nil || h.Get("Authorization") != "env-tok-0a9b8c7d6e" {
		t.Fatalf("header from the environment: %v %q", err, h)
	}
	for _, kv := range []string{"Authorization=UNSET", "Authorization=EMPTY"} {
		var ee *HeaderEnvError
		if err := AddHeaderEnv(http.Header{}, []string{kv}, lookup); !errors.As(err, &ee) || !ee.Unset {
			t.Errorf("%s: %v", kv, err)
		}
	}
	for _, kv := range []string{"Authorization", "=TOKEN", "Authorization="} {
		var ee *HeaderEnvError
		if err := AddHeaderEnv(http.Header{}, []string{kv}, lookup); !errors.As(err, &ee) || ee.Unset {
			t.Errorf("%s: %v", kv, err)
		}
	}
	if got := HeaderEnvVariables([]string{"Authorization=TOKEN", "X=OTHER"}); !slices.Equal(got, []string{"TOKEN", "OTHER"}) {
		t.Errorf("variables read: %q", got)
	}
}

// A gate passes its environment on: with inherit, the credentials of it
// are the server's, and masked.
func TestDescribeInheritedCredentials(t *testing.T) {
	environ := []string{"GITHUB_TOKEN=ghp-inherited-0123456789", "HOME=/home/me"}
	s := Describe([]string{"weather-server"}, "", nil, "", environ, true)
	if !slices.ContainsFunc(s.Credentials, func(c Credential) bool { return c.Where == "env GITHUB_TOKEN" }) {
		t.Errorf("inherited credential missing: %+v", s.Credentials)
	}
	if got := s.Secrets.String("ghp-inherited-0123456789"); strings.Contains(got, "inherited") {
		t.Errorf("inherited credential not masked: %s", got)
	}
	if s := Describe([]string{"weather-server"}, "", nil, "", environ, false); len(s.Credentials) != 0 {
		t.Errorf("without inherit: %+v", s.Credentials)
	}
}

// An entry's secrets (env values read from the user's environment or an
// env file, header values) are masked in its problems and findings, a
// variable set to etdi's own value is not kept for the server (so that a
// secret etdi read does not reach it), and an
// entry its host finds ambiguous, or imitating etdi's gate, is described
// so that it is not started as written.
func TestDescribeEntry(t *testing.T) {
	const secret = "envfile-secret-7a6b5c4d3e"
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"OWN": "etdi-own-value"}[k]
		return v, ok
	}
	en := &hostconfig.Entry{Name: "weather", Host: "cursor", File: "/p/mcp.json", Line: 3, Transport: "stdio",
		Command: "weather", Program: "/opt/bin/weather", Args: []string{"--verbose"}, Cwd: "/p", Bundle: "w.etdi.json",
		Env: map[string]string{"API_KEY": secret, "OWN": "etdi-own-value"}, EnvKeys: []string{"API_KEY", "OWN"},
		Problems: []string{"the program printed " + secret}, Launch: "sha256:abc"}
	s := DescribeEntry(en, lookup, []string{"PATH=/usr/bin"})
	if s.Label != "weather (cursor, /p/mcp.json)" || s.Name != "weather" || s.Bundle != "/p/w.etdi.json" || s.Launch != "sha256:abc" {
		t.Errorf("described as %+v", s)
	}
	if !slices.Equal(s.Command, []string{"/opt/bin/weather", "--verbose"}) || !slices.Equal(s.KeepEnv, []string{"API_KEY"}) {
		t.Errorf("command %q, keeps %q", s.Command, s.KeepEnv)
	}
	if !slices.Contains(s.Env, "API_KEY="+secret) {
		t.Errorf("env: %q", s.Env)
	}
	if strings.Contains(strings.Join(s.Problems, " "), secret) {
		t.Errorf("problem shows the secret: %q", s.Problems)
	}
	if !slices.ContainsFunc(s.Credentials, func(c Credential) bool { return c.Where == "env API_KEY" && c.Value == secret }) {
		t.Errorf("credentials: %+v", s.Credentials)
	}
	s.SecretEnv = []string{"OWN"}
	if srv := s.Server(); slices.Contains(srv.Env, "OWN=etdi-own-value") || !slices.Contains(srv.Env, "API_KEY="+secret) {
		t.Errorf("a secret etdi read reaches the server, or the entry's own variable does not: %q", srv.Env)
	}

	amb := &hostconfig.Entry{Name: "both", File: "/p/mcp.json", Command: "weather", Program: "/opt/bin/weather",
		URL: "https://mcp.example/mcp", Ambiguous: "both a command and a URL", Launch: "sha256:def"}
	if s := DescribeEntry(amb, lookup, nil); s.Command != nil || s.URL != "" || s.Launch != "" || s.Label != "both (/p/mcp.json)" {
		t.Errorf("an ambiguous entry is described as startable: %+v", s)
	}

	fake := &hostconfig.Entry{Name: "fake", File: "/p/mcp.json", Command: "etdi", Program: "/tmp/etdi",
		Args: []string{"run", "--token=" + secret}, Imitation: "/tmp/etdi is no etdi of yours (--token=" + secret + ")"}
	s = DescribeEntry(fake, lookup, nil)
	if len(s.Findings) != 1 || s.Findings[0].Kind != finding.FakeWrapper || s.Findings[0].Severity != finding.Error ||
		strings.Contains(s.Findings[0].Message, secret) {
		t.Errorf("an entry imitating etdi's gate: %+v", s.Findings)
	}
}
