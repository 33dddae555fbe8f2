package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIProjectConfigNotStarted: etdi check --config auto inside a cloned
// repository does not run the commands of the repository's own .mcp.json
// or .vscode/mcp.json unless --project is given, and with nothing found it
// lists where it looked.
func TestCLIProjectConfigNotStarted(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	repo := filepath.Join(root, "repo")
	os.MkdirAll(home, 0o700)
	os.MkdirAll(filepath.Join(repo, ".vscode"), 0o755)
	marker := filepath.Join(root, "repository-command-ran")
	cmdJSON := `{"command": "sh", "args": ["-c", "touch ` + marker + `"]}`
	os.WriteFile(filepath.Join(repo, ".mcp.json"), []byte(`{"mcpServers": {"build-helper": `+cmdJSON+`}}`), 0o644)
	os.WriteFile(filepath.Join(repo, ".vscode", "mcp.json"), []byte(`{"servers": {"vs-helper": `+cmdJSON+`}}`), 0o644)

	run := func(args ...string) result { return runInRepo(repo, home, args...) }
	pol := filepath.Join(root, "trust.json")
	if r := runEtdi(t, root, nil, "trust", "unsigned", "--trust", pol, "warn"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := run("check", "--trust", pol, "--pins", filepath.Join(root, "pins.db"), "--config", "auto", "--start-timeout", "2s")
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("check --config auto ran a repository's command:\n%s%s", r.stdout, r.stderr)
	}
	if r.code != 1 || !strings.Contains(r.stderr, "not starting 2 server(s) of project-scoped files") || !strings.Contains(r.stderr, "--project") {
		t.Fatalf("exit %d, want 1 with a note naming --project:\n%s%s", r.code, r.stdout, r.stderr)
	}
	// With --project the user has chosen to run them.
	run("check", "--trust", pol, "--pins", filepath.Join(root, "pins.db"), "--config", "auto", "--project", "--start-timeout", "2s")
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("--project did not start the project's servers")
	}

	// Nothing anywhere: the error lists the searched paths.
	os.RemoveAll(repo)
	os.MkdirAll(repo, 0o755)
	r = run("check", "--trust", pol, "--pins", filepath.Join(root, "pins.db"), "--config", "auto")
	if r.code != 1 || !strings.Contains(r.stderr, "searched:") || !strings.Contains(r.stderr, filepath.Join(home, ".cursor", "mcp.json")) ||
		!strings.Contains(r.stderr, filepath.Join(repo, ".vscode", "mcp.json")) {
		t.Fatalf("exit %d, want 1 listing the searched paths:\n%s", r.code, r.stderr)
	}
}

// TestCLIProjectLaunchApproved: once the user let etdi start a project's
// server (--project) and its check passed, later runs start that entry
// without --project while it stays exactly as written; any change to it
// makes it a stranger again.
func TestCLIProjectLaunchApproved(t *testing.T) {
	needNode(t)
	root := t.TempDir()
	home := filepath.Join(root, "home")
	repo := filepath.Join(root, "repo")
	os.MkdirAll(home, 0o700)
	os.MkdirAll(repo, 0o755)
	marker := filepath.Join(root, "started")
	entry := func(extra string) string {
		return `{"mcpServers": {"weather": {"command": "sh", "args": ["-c", "touch ` + marker + `; exec node ` + fixtureJS + extra + `"]}}}`
	}
	os.WriteFile(filepath.Join(repo, ".mcp.json"), []byte(entry("")), 0o644)
	pol, pins := filepath.Join(root, "trust.json"), filepath.Join(root, "pins.db")
	if r := runEtdi(t, root, nil, "trust", "unsigned", "--trust", pol, "warn"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	run := func(args ...string) result {
		return runInRepo(repo, home, append([]string{"check", "--trust", pol, "--pins", pins, "--config", "auto", "--start-timeout", "15s"}, args...)...)
	}
	started := func() bool { _, err := os.Stat(marker); os.Remove(marker); return err == nil }

	if r := run(); r.code != 1 || started() {
		t.Fatalf("an unapproved project entry was started (exit %d):\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The user chooses to start it, and approves its tools.
	if r := run("--project", "--yes"); r.code != 0 || !started() {
		t.Fatalf("--project --yes: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// From now on it is started without --project, and passes.
	if r := run(); r.code != 0 || !started() {
		t.Fatalf("an approved launch was not started: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The repository changes the command: not started again.
	os.WriteFile(filepath.Join(repo, ".mcp.json"), []byte(entry(" --extra")), 0o644)
	if r := run(); r.code != 1 || started() || !strings.Contains(r.stderr, "--project") {
		t.Fatalf("a changed project entry was started (exit %d):\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The history records the launch approval.
	if r := runEtdi(t, root, nil, "audit", "export", "--pins", pins, "--json"); !strings.Contains(r.stdout, `"type":"launch"`) {
		t.Fatalf("no launch record in the history:\n%s", r.stdout)
	}
	if r := runEtdi(t, root, nil, "audit", "verify", "--pins", pins); r.code != 0 {
		t.Fatalf("audit verify: %d %s%s", r.code, r.stdout, r.stderr)
	}
}

// runInRepo runs etdi with repo as the working directory and a home of
// its own, as a user inside a cloned repository would.
func runInRepo(repo, home string, args ...string) result {
	cmd := exec.Command(etdiBin, args...)
	cmd.Dir = repo
	cmd.Env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "PATH=" + os.Getenv("PATH")}
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return result{code, so.String(), se.String()}
}
