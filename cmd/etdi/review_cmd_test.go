package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/internal/hostconfig"
	"github.com/etdi-dev/etdi/internal/redact"
)

// reviewFor is the review command etdi run would print, started in dir
// with the variables vars and the flags.
func reviewFor(t *testing.T, vars map[string]string, flags []string, name string, argv []string, url string) (string, string) {
	t.Helper()
	e := &env{ctx: context.Background(), lookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	cmd := e.runCmd()
	if err := cmd.ParseFlags(flags); err != nil {
		t.Fatal(err)
	}
	var secrets redact.Set
	if url != "" {
		secrets.AddURL(url)
	} else {
		secrets.AddArgs(argv)
	}
	return e.reviewCommand(cmd, name, argv, url, &secrets)
}

// The review command is exact wherever it is pasted: files absolute, the
// trust policy and pins taken from the environment named, the server's
// directory entered when its command depends on it, secrets never shown
// (a wrapped entry named by its configuration file instead).
func TestReviewCommandExact(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("server.js", nil, 0o644)
	vars := map[string]string{"ETDI_TRUST": "conf/trust.json", "ETDI_WRAP_STATE": filepath.Join(dir, "wrapped.json")}
	review, target := reviewFor(t, vars, []string{"--pins", "pins.db"}, "notes", []string{"npx", "-y", "notes-mcp@1.2.3"}, "")
	if review != "etdi check --trust "+filepath.Join(dir, "conf/trust.json")+" --pins "+filepath.Join(dir, "pins.db")+" --name notes" ||
		target != "--server -- npx -y notes-mcp@1.2.3" {
		t.Fatalf("npx: %q %q", review, target)
	}
	for _, argv := range [][]string{{"node", "server.js"}, {"./bin/server"}, {"srv", "--root=."}, {"uvx", "--from", "..", "srv"}} {
		review, _ := reviewFor(t, nil, nil, "notes", argv, "")
		if !strings.HasPrefix(review, "cd "+dir+" && etdi check ") {
			t.Errorf("%q depends on the directory: %q", argv, review)
		}
	}
	// A secret in the arguments is masked; once etdi wrap recorded the
	// entry, the review names it instead.
	secret := "ghp_" + strings.Repeat("a1B2", 9)
	argv := []string{"notes-server", "--token", secret}
	_, target = reviewFor(t, vars, nil, "notes", argv, "")
	if strings.Contains(target, secret) || !strings.Contains(target, "--server --") {
		t.Fatalf("masked: %q", target)
	}
	cfg := filepath.Join(dir, ".mcp.json")
	st := wrapState{Version: 1, Files: map[string][]hostconfig.Record{cfg: {{Path: []string{"mcpServers", "notes"}}}}}
	data, _ := json.Marshal(st)
	os.WriteFile(vars["ETDI_WRAP_STATE"], data, 0o600)
	if _, target = reviewFor(t, vars, nil, "notes", argv, ""); target != "--config "+cfg {
		t.Fatalf("a wrapped entry with a secret: %q", target)
	}
	if _, target = reviewFor(t, vars, nil, "notes", nil, "https://mcp.example.com/mcp?key="+secret); target != "--config "+cfg {
		t.Fatalf("a wrapped URL with a secret: %q", target)
	}
	// Without a secret the command itself is named; an entry name wrapped
	// in two files names neither.
	if _, target = reviewFor(t, vars, nil, "notes", []string{"notes-server"}, ""); target != "--server -- notes-server" {
		t.Fatalf("no secret: %q", target)
	}
	st.Files[filepath.Join(dir, "other.json")] = []hostconfig.Record{{Path: []string{"servers", "notes"}}}
	data, _ = json.Marshal(st)
	os.WriteFile(vars["ETDI_WRAP_STATE"], data, 0o600)
	if _, target = reviewFor(t, vars, nil, "notes", argv, ""); strings.Contains(target, "--config") || strings.Contains(target, secret) {
		t.Fatalf("two wrapped entries: %q", target)
	}
}
