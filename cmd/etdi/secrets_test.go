package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/etdi-dev/etdi/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Secrets a server is configured with; none may appear in any output.
const (
	secretEnv      = "ghp_EnvValue0fTheH0stConfig0123456789"
	secretEnvFail  = "env-value-of-a-failing-server-7781"
	secretArg      = "arg-token-given-on-the-command-line-4412"
	secretDocker   = "ghp_D0ckerEnvT0kenValue0123456789abcd"
	secretPassword = "url-password-5531-horse"
	secretQuery    = "query-token-8820-battery"
	secretHeader   = "header-bearer-value-9931-staple"
	secretConfHdr  = "config-header-value-1207-apple"
	secretBadHdr   = "malformed-header-value-3307-pear"
	secretUser     = "bob"
)

var allSecrets = []string{secretUser + ":", secretUser + "@", secretEnv, secretEnvFail, secretArg, secretDocker, secretPassword, secretQuery, secretHeader, secretConfHdr, secretBadHdr}

var (
	echoOnce sync.Once
	echoBin  string
	echoErr  error
)

// echoServer builds testdata/echoserver: an MCP server that writes its
// arguments and environment to stderr first.
func echoServer(t *testing.T) string {
	t.Helper()
	bin, err := buildEchoServer()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// buildEchoServer builds testdata/echoserver once per test binary.
func buildEchoServer() (string, error) {
	echoOnce.Do(func() {
		dir, err := os.MkdirTemp("", "etdi-echo")
		if err != nil {
			echoErr = err
			return
		}
		echoBin = filepath.Join(dir, "echoserver")
		if out, err := exec.Command("go", "build", "-o", echoBin, "./testdata/echoserver").CombinedOutput(); err != nil {
			echoErr = fmt.Errorf("building echoserver: %v\n%s", err, out)
		}
	})
	return echoBin, echoErr
}

// httpEcho serves one tool over Streamable HTTP on 127.0.0.1, named
// echo_<first path segment> (httpEchoHandler), until the test ends.
func httpEcho(t *testing.T) string {
	t.Helper()
	ts := httptest.NewServer(httpEchoHandler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// httpEchoHandler serves one tool over Streamable HTTP, named
// echo_<first path segment>. Requests to /fail are answered 401 with the
// request's URL and headers in the body, as a careless server might.
func httpEchoHandler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		server := mcp.NewServer(&mcp.Implementation{Name: "echo-http", Version: "1.0.0"}, nil)
		seg, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		mcp.AddTool(server, &mcp.Tool{Name: "echo_" + seg, Description: "Echo the text back."},
			func(ctx context.Context, req *mcp.CallToolRequest, args echoArgs) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: args.Text}}}, nil, nil
			})
		return server
	}, &mcp.StreamableHTTPOptions{JSONResponse: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/fail") {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, "denied %s %s %v", r.URL.String(), r.Header.Get("Authorization"), r.Header)
			return
		}
		h.ServeHTTP(w, r)
	})
}

type echoArgs struct {
	Text string `json:"text"`
}

// secretEnvT is a directory with a trust policy that warns on unsigned
// tools, and the runner of the built etdi in it.
type secretEnvT struct {
	t   *testing.T
	dir string
	env []string
	// outputs collects every stdout and stderr seen.
	outputs []string
}

func newSecretEnv(t *testing.T) *secretEnvT {
	s := &secretEnvT{t: t, dir: t.TempDir()}
	s.run(0, "trust", "unsigned", "--policy", "trust.json", "warn")
	return s
}

func (s *secretEnvT) run(want int, args ...string) result {
	s.t.Helper()
	r := runEtdi(s.t, s.dir, s.env, args...)
	s.outputs = append(s.outputs, fmt.Sprintf("[etdi %s]\n%s\n%s", args[0], r.stdout, r.stderr))
	if r.code != want {
		s.t.Fatalf("etdi %q: exit %d, want %d\n%s\n%s", args, r.code, want, r.stdout, r.stderr)
	}
	return r
}

func (s *secretEnvT) check(want int, args ...string) result {
	s.t.Helper()
	return s.run(want, append([]string{"check", "--trust", "trust.json", "--pins", "pins.db", "--start-timeout", "20s", "--timeout", "60s"}, args...)...)
}

// noSecrets fails if any secret is in an output, in the pin database's
// bytes or in the audit export.
func (s *secretEnvT) noSecrets() {
	s.t.Helper()
	if _, err := os.Stat(filepath.Join(s.dir, "pins.db")); err == nil {
		s.run(0, "audit", "export", "--json", "--pins", "pins.db")
		s.run(0, "pin", "list", "--pins", "pins.db", "--json")
		s.run(0, "pin", "history", "--pins", "pins.db")
		db, err := os.ReadFile(filepath.Join(s.dir, "pins.db"))
		if err != nil {
			s.t.Fatal(err)
		}
		s.outputs = append(s.outputs, "[pins.db bytes]\n"+string(db))
	}
	for _, out := range s.outputs {
		for _, secret := range allSecrets {
			if strings.Contains(out, secret) {
				s.t.Errorf("secret %q shown:\n%.4000s", secret, out)
			}
		}
	}
}

// A host configuration with env secrets, headers and a URL with a password
// and a query token, and a docker run -e TOKEN=... command: no secret
// reaches stdout, stderr, --json, --sarif, the history, audit export or
// the pin database; the failing server's stderr is shown redacted.
func TestSecretsNeverShown(t *testing.T) {
	bin := echoServer(t)
	base := httpEcho(t)
	s := newSecretEnv(t)
	host := strings.TrimPrefix(base, "http://")
	cfg := map[string]any{"mcpServers": map[string]any{
		"echo-ok": map[string]any{"command": bin, "args": []string{"--api-key", secretArg},
			"env": map[string]string{"API_TOKEN": secretEnv, "ECHO_TOOL": "echo_ok"}},
		"echo-fail": map[string]any{"command": bin, "args": []string{"--token=" + secretArg},
			"env": map[string]string{"API_TOKEN": secretEnvFail, "ECHO_MODE": "fail"}},
		"remote": map[string]any{"url": "http://alice:" + secretPassword + "@" + host + "/cfg/mcp?token=" + secretQuery,
			"headers": map[string]string{"Authorization": "Bearer " + secretConfHdr}},
		"remote-fail": map[string]any{"url": "http://alice:" + secretPassword + "@" + host + "/fail/mcp?token=" + secretQuery,
			"headers": map[string]string{"Authorization": "Bearer " + secretConfHdr}},
	}}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(s.dir, "claude_desktop_config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	r := s.check(1, "--config", "claude_desktop_config.json", "--yes", "--json")
	var rep struct {
		Servers []checkReport `json:"servers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	errs := map[string]string{}
	for _, sr := range rep.Servers {
		errs[sr.Target[:strings.IndexByte(sr.Target, ' ')]] = sr.Error
	}
	// The failing server's stderr is shown, with its env and argument
	// values masked: the redaction is really exercised.
	if e := errs["echo-fail"]; !strings.Contains(e, "API_TOKEN="+redact.Mask) || !strings.Contains(e, "--token="+redact.Mask) || !strings.Contains(e, "refusing to start") {
		t.Errorf("echo-fail error: %q", e)
	}
	if errs["echo-ok"] != "" || errs["remote"] != "" || errs["remote-fail"] == "" {
		t.Errorf("errors: %q", errs)
	}
	s.check(1, "--config", "claude_desktop_config.json", "--sarif")
	s.check(1, "--config", "claude_desktop_config.json")

	// --url with a password, a query token and a header, without --name:
	// the derived name is valid and holds none of them.
	u := "http://" + secretUser + ":" + secretPassword + "@" + host + "/cli/mcp?token=" + secretQuery
	r = s.check(0, "--url", u, "--header", "Authorization: Bearer "+secretHeader, "--yes", "--json")
	if !strings.Contains(r.stdout, `"server": "unsigned:`+host+`/cli/mcp"`) {
		t.Errorf("--url identity: %s", r.stdout)
	}
	s.check(0, "--url", u, "--header", "Authorization: Bearer "+secretHeader, "--sarif")
	s.check(1, "--url", strings.Replace(u, "/cli/", "/fail/", 1), "--header", "Authorization: Bearer "+secretHeader)
	// Nothing listens on port 1: the client's error quotes the URL.
	s.check(1, "--url", "http://"+secretUser+":"+secretPassword+"@127.0.0.1:1/mcp?token="+secretQuery, "--header", "Authorization: Bearer "+secretHeader, "--json")
	r = s.check(2, "--url", u, "--header", "Authorization Bearer "+secretBadHdr)
	if !strings.Contains(r.stderr, "--header #1") {
		t.Errorf("malformed --header: %s", r.stderr)
	}

	// docker run -e TOKEN=...: a fake docker first on PATH starts the
	// echo server with docker's arguments.
	fake := filepath.Join(s.dir, "bin")
	if err := os.MkdirAll(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fake, "docker"), []byte("#!/bin/sh\nexec "+bin+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.env = []string{"PATH=" + fake + string(os.PathListSeparator) + os.Getenv("PATH"), "ECHO_TOOL=echo_docker"}
	docker := []string{"--server", "--", "docker", "run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN=" + secretDocker, "ghcr.io/github/github-mcp-server:v1"}
	r = s.check(0, append([]string{"--yes", "--json"}, docker...)...)
	if !strings.Contains(r.stdout, `"server": "unsigned:ghcr.io/github/github-mcp-server"`) {
		t.Errorf("docker identity: %s", r.stdout)
	}
	s.check(0, append([]string{"--sarif"}, docker...)...)
	// A name with '/' selects its server's history.
	if r := s.run(0, "pin", "history", "--pins", "pins.db", "--json", "unsigned:ghcr.io/github/github-mcp-server"); !strings.Contains(r.stdout, `"tool": "echo_docker"`) {
		t.Errorf("pin history of a server with '/': %s", r.stdout)
	}
	s.env = append(s.env, "ECHO_MODE=fail")
	r = s.check(1, docker...)
	if !strings.Contains(r.stdout, "echoserver: args run -i --rm -e GITHUB_PERSONAL_ACCESS_TOKEN="+redact.Mask) {
		t.Errorf("docker stderr not shown redacted: %s", r.stdout)
	}
	s.noSecrets()
}

// The env values of a host configuration are never printed, even when the
// server writes them to its stderr and fails.
func TestHostConfigEnvValuesNeverPrinted(t *testing.T) {
	bin := echoServer(t)
	s := newSecretEnv(t)
	cfg := fmt.Sprintf(`{"mcpServers": {"leaky": {"command": %q, "env": {"SERVICE_TOKEN": %q, "ECHO_MODE": "fail"}}}}`, bin, secretEnvFail)
	if err := os.WriteFile(filepath.Join(s.dir, "claude_desktop_config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--json"}, {"--sarif"}, {}} {
		r := s.check(1, append([]string{"--config", "claude_desktop_config.json"}, args...)...)
		if out := r.stdout + r.stderr; !strings.Contains(out, "SERVICE_TOKEN=") || strings.Contains(out, secretEnvFail) {
			t.Errorf("check %q: the server's stderr is not shown redacted:\n%s\n%s", args, r.stdout, r.stderr)
		}
	}
	// The server's stderr is kept as its last 4 KiB, which here begin in
	// the middle of the env value: that half is masked too.
	cut := fmt.Sprintf(`{"mcpServers": {"cut": {"command": %q, "env": {"SERVICE_TOKEN": %q, "ECHO_CUT": %q}}}}`, bin, secretEnvFail, secretEnvFail)
	if err := os.WriteFile(filepath.Join(s.dir, "cut.json"), []byte(cut), 0o600); err != nil {
		t.Fatal(err)
	}
	r := s.check(1, "--config", "cut.json", "--json")
	if half := secretEnvFail[len(secretEnvFail)/2:]; strings.Contains(r.stdout, half) || !strings.Contains(r.stdout, "server stderr: "+redact.Mask+"...") {
		t.Errorf("the half of a secret at the start of the stderr tail is shown:\n%s", r.stdout)
	}
	// One server only: observeOne's path (pin approve) redacts as well.
	r = s.run(1, "pin", "approve", "--trust", "trust.json", "--pins", "pins.db", "--config", "claude_desktop_config.json", "--name", "leaky")
	if !strings.Contains(r.stderr, "SERVICE_TOKEN=") || strings.Contains(r.stderr, secretEnvFail) {
		t.Errorf("pin approve: %s", r.stderr)
	}
	s.noSecrets()
}
