package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// memoryProject is a project directory that runs the real
// server-memory package from the fixtures with npx, its own copy of the
// package writing marker when it starts; it returns the directory and
// the server command.
func memoryProject(t *testing.T, dir, marker string) (string, []string) {
	t.Helper()
	mcp, _ := filepath.Abs(mcpDir)
	proj := filepath.Join(dir, "proj")
	nm := filepath.Join(proj, "node_modules")
	scope := filepath.Join(nm, "@modelcontextprotocol")
	if err := os.MkdirAll(scope, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		copyFile(t, filepath.Join(mcp, f), filepath.Join(proj, f))
	}
	link := func(from, to string) {
		if err := os.Symlink(from, to); err != nil {
			t.Fatal(err)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(mcp, "node_modules"))
	for _, e := range ents {
		if e.Name() != ".bin" && e.Name() != "@modelcontextprotocol" {
			link(filepath.Join(mcp, "node_modules", e.Name()), filepath.Join(nm, e.Name()))
		}
	}
	// .bin's links are relative: copied, they point into this project.
	if out, err := exec.Command("cp", "-a", filepath.Join(mcp, "node_modules", ".bin"), nm).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	ents, _ = os.ReadDir(filepath.Join(mcp, "node_modules", "@modelcontextprotocol"))
	for _, e := range ents {
		if e.Name() != "server-memory" {
			link(filepath.Join(mcp, "node_modules", "@modelcontextprotocol", e.Name()), filepath.Join(scope, e.Name()))
		}
	}
	if out, err := exec.Command("cp", "-r", filepath.Join(mcp, "node_modules", "@modelcontextprotocol", "server-memory"), scope).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	index := filepath.Join(scope, "server-memory", "dist", "index.js")
	src, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	shebang, rest, _ := strings.Cut(string(src), "\n")
	src = []byte(shebang + "\nimport { appendFileSync as etdiTestMark } from \"node:fs\"; etdiTestMark(" + strconvQuote(marker) + ", \"started\\n\");\n" + rest)
	if err := os.WriteFile(index, src, 0o755); err != nil {
		t.Fatal(err)
	}
	return proj, []string{"npx", "--no-install", "@modelcontextprotocol/server-memory"}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// A real npm server whose package changed after approval (another
// version and integrity in the lockfile, the same tools), under a trust
// policy that blocks updates of unsigned servers, is not started:
// the host gets etdi's own initialize, no tools, a warning naming the
// exact review command, and every call refused; etdi exits 11 once the
// host leaves. The review and approval commands, pasted into another
// directory, work.
func TestAttackRunRefusedNPMUpdateTellsHost(t *testing.T) {
	needNode(t)
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn", "--on-update", "block")
	marker := filepath.Join(p.dir, "started")
	proj, server := memoryProject(t, p.dir, marker)
	trustF, pinsF := filepath.Join(p.dir, "trust.json"), filepath.Join(p.dir, "pins.db")
	approve := append([]string{"check", "--yes", "--trust", trustF, "--pins", pinsF, "--name", "memory", "--server", "--"}, server...)
	if r := runEtdi(t, proj, []string{"HOME=" + p.dir}, approve...); r.code != 0 {
		t.Fatalf("approve: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the marker of a started server was not written: %v", err)
	}
	os.Remove(marker)
	// The update: npm installed another version of the package.
	lockPath := filepath.Join(proj, "package-lock.json")
	var lock map[string]any
	data, _ := os.ReadFile(lockPath)
	if err := json.Unmarshal(data, &lock); err != nil {
		t.Fatal(err)
	}
	pkgs := lock["packages"].(map[string]any)
	mem := pkgs["node_modules/@modelcontextprotocol/server-memory"].(map[string]any)
	mem["version"] = "2026.9.30"
	mem["integrity"] = pkgs["node_modules/@modelcontextprotocol/server-filesystem"].(map[string]any)["integrity"]
	data, _ = json.Marshal(lock)
	os.WriteFile(lockPath, data, 0o644)

	steps := `[{"op":"listTools"},{"op":"listPrompts"},{"op":"call","name":"read_graph","arguments":{}},{"op":"waitFor","method":"notifications/message","timeoutMs":20000}]`
	gate := append([]string{etdiBin, "run", "--trust", trustF, "--pins", pinsF, "--name", "memory", "--"}, server...)
	p2 := &pinEnv{t, proj}
	tr := p2.host([]string{"HOME=" + p.dir}, steps, nil, gate...)
	var info struct{ Name string }
	json.Unmarshal(tr.Initialize.ServerInfo, &info)
	if info.Name != "etdi" || tr.Initialize.Instructions == nil || !strings.Contains(*tr.Initialize.Instructions, "etdi did not start unsigned:memory") {
		t.Fatalf("initialize: %s", tr.raw)
	}
	if len(tr.Steps) != 4 || len(tr.Steps[0].names(t)) != 0 || tr.Steps[2].Error == nil || tr.Steps[2].Error.Code != -32090 || !strings.Contains(tr.Steps[2].Error.Message, "etdi check") {
		t.Fatalf("steps: %s", tr.raw)
	}
	var review string
	for _, n := range tr.Notifications {
		var msg struct {
			Level, Logger string
			Data          struct{ Review, Approve, Message string }
		}
		json.Unmarshal(n.Params, &msg)
		if n.Method == "notifications/message" && msg.Level == "warning" && msg.Logger == "etdi" {
			review = msg.Data.Review
			if msg.Data.Approve != "" {
				t.Fatalf("the host was handed a command that approves without asking: %s", msg.Data.Approve)
			}
		}
	}
	if review == "" || strings.Contains(review, "COMMAND") || !strings.Contains(*tr.Initialize.Instructions, review) {
		t.Fatalf("no warning with the review command: %s", tr.raw)
	}
	if strings.Contains(tr.raw, "pin approve") {
		t.Fatalf("the host was handed etdi pin approve: %s", tr.raw)
	}
	if tr.ServerExit == nil || tr.ServerExit.Code == nil || *tr.ServerExit.Code != 11 {
		t.Fatalf("etdi run's exit: %s", tr.raw)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the changed server was started")
	}
	// Pasted into another directory: the review shows the update (no
	// terminal to approve on). Once the person lets updates be asked
	// about, the same command with --yes approves it, and the next session
	// starts the new version.
	sh := func(command string) result {
		c := exec.Command("sh", "-c", command)
		c.Dir = t.TempDir()
		c.Env = append(os.Environ(), "HOME="+p.dir, "PATH="+filepath.Dir(etdiBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := c.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return result{code: code, stdout: string(out)}
	}
	if r := sh(strings.Replace(review, " --approve", "", 1)); r.code != 11 || !strings.Contains(r.stdout, "2026.9.30") {
		t.Fatalf("the review command %q: %d\n%s", review, r.code, r.stdout)
	}
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn", "--on-update", "ask")
	if r := sh(strings.Replace(review, " --approve", " --yes", 1)); r.code != 0 {
		t.Fatalf("the review command with --yes: %d\n%s", r.code, r.stdout)
	}
	tr = p2.host([]string{"HOME=" + p.dir}, `[{"op":"listTools"}]`, nil, gate...)
	json.Unmarshal(tr.Initialize.ServerInfo, &info)
	if info.Name == "etdi" || len(tr.Steps) != 1 || len(tr.Steps[0].names(t)) == 0 || strings.Contains(tr.Stderr, "server_updated") {
		t.Fatalf("after the approval: %s", tr.raw)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the approved new version was not started: %v", err)
	}
}

// exitCodesIn returns the exit codes a paragraph names: the numbers 0-2
// and 10-14 standing alone (not section numbers or parts of others).
func exitCodesIn(text string) []int {
	seen := map[int]bool{}
	for _, m := range regexp.MustCompile(`(?:^|[^0-9.§\-])(1[0-4]|[0-2])(?:[^0-9.]|\.(?:\s|$)|$)`).FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		seen[n] = true
	}
	var out []int
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// paragraph is the text of doc from the line starting with anchor to the
// next blank line.
func paragraph(t *testing.T, doc, anchor string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+anchor)
	if i < 0 {
		t.Fatalf("no paragraph %q", anchor)
	}
	rest := doc[i+1:]
	if j := strings.Index(rest, "\n\n"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// Every exit code of etdi run is in its --help, the README and
// docs/gate.md, and none other.
func TestRunExitCodesDocumented(t *testing.T) {
	readme, _ := os.ReadFile("../../README.md")
	gate, _ := os.ReadFile("../../docs/gate.md")
	help := runEtdi(t, t.TempDir(), nil, "run", "--help").stdout
	help = help[:strings.Index(help, "Usage:")]
	want := slices.Clone(runExitCodes)
	slices.Sort(want)
	for name, text := range map[string]string{
		"--help":       help[strings.Index(help, "Exit codes:"):],
		"README":       paragraph(t, string(readme), "`etdi run` exit codes:"),
		"docs/gate.md": paragraph(t, string(gate), "**Exit codes** of `etdi run`:"),
	} {
		if got := exitCodesIn(text); !slices.Equal(got, want) {
			t.Errorf("%s names exit codes %v, etdi run has %v:\n%s", name, got, want, text)
		}
	}
}

// With --listen, a replaced program (under a trust policy that blocks
// updates of unsigned servers) is not started for any session: each host
// session is answered by etdi, and etdi exits 11 when interrupted.
func TestAttackListenRefusedReplacedProgram(t *testing.T) {
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn", "--on-update", "block")
	bin := buildWeather(t, p.dir, "weather", "")
	other := buildWeather(t, p.dir, "weather-next", "next")
	run := filepath.Join(p.dir, "bin", "weather")
	os.MkdirAll(filepath.Dir(run), 0o755)
	copyFile(t, bin, run)
	if r := p.liveCheck(nil, "--yes", "--name", "weather", "--server", "--", run); r.code != 0 {
		t.Fatalf("approve: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	copyFile(t, other, run)
	l := startListen(t, p.dir, "--name", "weather", "--", run)
	client := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1.0.0"}, nil)
	cs, err := client.Connect(l.ctx, &mcp.StreamableClientTransport{Endpoint: l.endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if init := cs.InitializeResult(); init.ServerInfo.Name != "etdi" || !strings.Contains(init.Instructions, "--name weather --approve --server -- ") {
		t.Fatalf("initialize: %+v", init)
	}
	if lt, err := cs.ListTools(l.ctx, nil); err != nil || len(lt.Tools) != 0 {
		t.Fatalf("tools: %v %+v", err, lt)
	}
	if kids := l.children(t); len(kids) != 0 {
		t.Fatalf("etdi started %v", kids)
	}
	cs.Close()
	var ee *exec.ExitError
	if err := l.stop(); !errors.As(err, &ee) || ee.ExitCode() != 11 {
		t.Fatalf("exit: %v\n%s", err, l.logText())
	}
}
