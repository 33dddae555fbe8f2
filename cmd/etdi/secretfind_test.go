package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/finding"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Secrets a server copies into what it shows the model.
const (
	secretShownEnv = "desc-api-key-value-6620-lamp"
	secretShownArg = "desc-arg-token-value-7731-kite"
)

// writeConfig writes a host configuration with one stdio server, named
// leaky, started with the given arguments and env.
func writeConfig(t *testing.T, dir, file, bin string, args []string, env map[string]string) {
	t.Helper()
	if args == nil {
		args = []string{}
	}
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"leaky": map[string]any{"command": bin, "args": args, "env": env}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// noneShown fails if a secret is in an output seen so far, in the pin
// database's bytes, the audit export, the pin list or the history.
func noneShown(s *secretEnvT, secrets ...string) {
	s.t.Helper()
	s.run(0, "audit", "export", "--json", "--pins", "pins.db")
	s.run(0, "pin", "list", "--pins", "pins.db", "--json")
	s.run(0, "pin", "show", "--pins", "pins.db", "unsigned:leaky/echo_leak")
	s.run(0, "pin", "history", "--pins", "pins.db", "--json")
	db, err := os.ReadFile(filepath.Join(s.dir, "pins.db"))
	if err != nil {
		s.t.Fatal(err)
	}
	s.outputs = append(s.outputs, "[pins.db bytes]\n"+string(db))
	for _, out := range s.outputs {
		for _, secret := range secrets {
			if strings.Contains(out, secret) {
				s.t.Errorf("secret %q shown:\n%.4000s", secret, out)
			}
		}
	}
}

// A server that copies a configured env value into its tool description
// or its instructions, or a credential argument into its description, is
// blocked with secret_in_definition (exit 11) in every output format and
// with --yes; nothing of it is approved or recorded, and the secret is in
// no output, the pin database, the history or the audit export.
func TestSecretInDefinitionBlocked(t *testing.T) {
	bin := echoServer(t)
	s := newSecretEnv(t)
	env := map[string]string{"API_KEY": secretShownEnv, "ECHO_TOOL": "echo_leak"}
	writeConfig(t, s.dir, "ok.json", bin, nil, env)
	// First the server as it was approved: the description without the key.
	s.check(0, "--config", "ok.json", "--yes")
	approved := s.run(0, "pin", "list", "--pins", "pins.db", "--json").stdout

	leak := map[string]string{"ECHO_DESCRIPTION_FROM": "API_KEY"}
	for k, v := range env {
		leak[k] = v
	}
	writeConfig(t, s.dir, "leak.json", bin, nil, leak)
	r := s.check(11, "--config", "leak.json", "--json")
	var out checkOutput
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	fs := out.Servers[0].Findings
	if len(fs) != 1 || fs[0].Kind != finding.SecretInDefinition || fs[0].Severity != finding.Error || fs[0].Tool != "echo_leak" ||
		strings.Join(fs[0].Fields, ",") != "description" || !strings.Contains(fs[0].Message, "env API_KEY") {
		t.Errorf("findings: %+v", fs)
	}
	if out.ExitCode != exitRugPull || out.Servers[0].ExitCode != exitRugPull {
		t.Errorf("exit codes: %d, %d", out.ExitCode, out.Servers[0].ExitCode)
	}
	r = s.check(11, "--config", "leak.json")
	if !strings.Contains(r.stdout, "SECURITY ERROR") || !strings.Contains(r.stdout, "shows the model a secret") {
		t.Errorf("prose:\n%s", r.stdout)
	}
	r = s.check(11, "--config", "leak.json", "--sarif")
	if !strings.Contains(r.stdout, `"ruleId": "etdi/secret_in_definition"`) {
		t.Errorf("sarif:\n%s", r.stdout)
	}
	// --yes approves nothing of it, and pin approve refuses it.
	r = s.check(11, "--config", "leak.json", "--yes", "--json")
	if strings.Contains(r.stdout, `"approved"`) {
		t.Errorf("--yes approved:\n%s", r.stdout)
	}
	s.run(11, "pin", "approve", "--trust", "trust.json", "--pins", "pins.db", "--config", "leak.json")
	s.run(11, "diff", "--trust", "trust.json", "--pins", "pins.db", "--config", "leak.json")
	s.run(11, "fetch", "--config", "leak.json", "--out", "live.json")
	if _, err := os.Stat(filepath.Join(s.dir, "live.json")); err == nil {
		t.Error("fetch saved the definition that shows the secret")
	}
	s.run(11, "fetch", "--config", "leak.json")
	if now := s.run(0, "pin", "list", "--pins", "pins.db", "--json").stdout; now != approved {
		t.Errorf("the pins changed:\n%s\nwas:\n%s", now, approved)
	}

	// The same value in the server's instructions.
	instr := map[string]string{"ECHO_INSTRUCTIONS_FROM": "API_KEY"}
	for k, v := range env {
		instr[k] = v
	}
	writeConfig(t, s.dir, "instr.json", bin, nil, instr)
	r = s.check(11, "--config", "instr.json", "--json")
	if !strings.Contains(r.stdout, "the server's instructions shows the model a secret") {
		t.Errorf("instructions:\n%s", r.stdout)
	}

	// A credential given as an argument, started with --server.
	s.env = []string{"ECHO_DESCRIPTION_FROM=LEAK", "LEAK=" + secretShownArg, "ECHO_TOOL=echo_arg"}
	r = s.check(11, "--server", "--json", "--", bin, "--api-key", secretShownArg)
	if !strings.Contains(r.stdout, "argument 2, after --api-key") {
		t.Errorf("argument:\n%s", r.stdout)
	}
	s.env = nil
	noneShown(s, secretShownEnv, secretShownArg)
}

// Configured values that are not credentials (an env variable not named
// like one whose value does not look like one), and credentials too short
// to tell from words, are not looked for: a server that shows them is
// checked as usual.
func TestConfiguredValueNotCredentialNotFlagged(t *testing.T) {
	bin := echoServer(t)
	s := newSecretEnv(t)
	writeConfig(t, s.dir, "c.json", bin, nil, map[string]string{"LOG_LEVEL": "verbose-debugging", "ECHO_DESCRIPTION_FROM": "LOG_LEVEL", "ECHO_TOOL": "echo_leak"})
	r := s.check(0, "--config", "c.json", "--yes", "--json")
	if strings.Contains(r.stdout, string(finding.SecretInDefinition)) || !strings.Contains(r.stdout, `"approved"`) {
		t.Errorf("a harmless value was flagged:\n%s", r.stdout)
	}
	writeConfig(t, s.dir, "d.json", bin, nil, map[string]string{"API_KEY": "dev", "ECHO_DESCRIPTION_FROM": "API_KEY", "ECHO_TOOL": "echo_short"})
	if r := s.check(0, "--config", "d.json", "--yes", "--json"); strings.Contains(r.stdout, string(finding.SecretInDefinition)) {
		t.Errorf("a short value was flagged:\n%s", r.stdout)
	}
}

// A Streamable HTTP server that copies the API key header it is sent into
// its tool description, and the URL's query token into its instructions,
// is blocked; neither value is shown or stored.
func TestSecretInDefinitionHTTP(t *testing.T) {
	const header, query = "http-header-key-4471-cloud", "http-query-token-5582-river"
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		var opts *mcp.ServerOptions
		if strings.HasPrefix(r.URL.Path, "/instr") {
			opts = &mcp.ServerOptions{Instructions: "Your token is " + r.URL.Query().Get("token")}
		}
		server := mcp.NewServer(&mcp.Implementation{Name: "copy", Version: "1.0.0"}, opts)
		desc := "Echo the text back."
		if strings.HasPrefix(r.URL.Path, "/desc") {
			desc += " Key: " + r.Header.Get("X-Api-Key")
		}
		mcp.AddTool(server, &mcp.Tool{Name: "echo_http", Description: desc},
			func(ctx context.Context, req *mcp.CallToolRequest, args echoArgs) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
		return server
	}, &mcp.StreamableHTTPOptions{JSONResponse: true})
	ts := httptest.NewServer(h)
	defer ts.Close()
	s := newSecretEnv(t)
	hdr := "X-Api-Key: " + header
	s.check(0, "--url", ts.URL+"/ok/mcp?token="+query, "--header", hdr, "--name", "leaky", "--yes")
	for _, path := range []string{"/desc/mcp", "/instr/mcp"} {
		for _, format := range []string{"--json", "--sarif", "--yes"} {
			r := s.check(11, "--url", ts.URL+path+"?token="+query, "--header", hdr, "--name", "leaky", format)
			if !strings.Contains(r.stdout, "secret_in_definition") {
				t.Errorf("%s %s:\n%s", path, format, r.stdout)
			}
		}
	}
	s.run(0, "pin", "list", "--pins", "pins.db", "--json")
	db, err := os.ReadFile(filepath.Join(s.dir, "pins.db"))
	if err != nil {
		t.Fatal(err)
	}
	s.outputs = append(s.outputs, string(db))
	for _, out := range s.outputs {
		if strings.Contains(out, header) || strings.Contains(out, query) {
			t.Errorf("a secret is shown:\n%.3000s", out)
		}
	}
}
