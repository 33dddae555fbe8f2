package action

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/internal/testbuild"
)

// etdiBin is etdi built from this checkout, for what the tests do around
// the action (keys, trust, verification). The action builds its own.
var etdiBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "etdi-action-test")
	if err != nil {
		panic(err)
	}
	builds := testbuild.Dir(repoRoot, "", dir)
	etdiBin = filepath.Join(builds, "tests", "etdi")
	if err := os.MkdirAll(filepath.Dir(etdiBin), 0o755); err != nil {
		panic(err)
	}
	cmd := exec.Command("go", "build", "-o", etdiBin, "./cmd/etdi")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	if goShimDir, err = writeGoShim(filepath.Join(dir, "go-shim"), filepath.Join(builds, "action")); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const password = "correct horse battery staple"

// etdi runs the etdi built for the tests in dir.
func etdi(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(etdiBin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "ETDI_PASSWORD=" + password}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		}
		t.Fatal(err)
	}
	return string(out), 0
}

func mustEtdi(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, code := etdi(t, dir, args...)
	if code != 0 {
		t.Fatalf("etdi %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func demodata(name string) string { return filepath.Join(repoRoot, "cmd", "etdi", "demodata", name) }

func sha256File(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// provider makes a workspace with a key pair (keys/acme.key, .pub) and the
// demo manifest at mcp/weather.manifest.json.
func provider(t *testing.T) string {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "keys"), 0o755)
	mustEtdi(t, ws, "key", "generate", "--out", filepath.Join(ws, "keys", "acme"))
	copyFile(t, demodata("weather.manifest.json"), filepath.Join(ws, "mcp", "weather.manifest.json"))
	return ws
}

func hasCommand(res *runResult, prefix string) bool {
	for _, c := range res.Commands {
		if strings.HasPrefix(c, prefix) {
			return true
		}
	}
	return false
}

// TestActionSignWithKey signs with a key file and its password from the
// step's env, as a release workflow does, and verifies what it wrote.
func TestActionSignWithKey(t *testing.T) {
	t.Parallel()
	ws := provider(t)
	res := runAction(t, ws, map[string]string{
		"command":  "sign",
		"manifest": "mcp/weather.manifest.json",
		"key":      filepath.Join(ws, "keys", "acme.key"),
		"expires":  "30d",
	}, map[string]string{"ETDI_PASSWORD": password, "GITHUB_ACTION_REF": "v1.4.2"})
	if res.Failed != "" {
		t.Fatalf("step %q failed (exit %d):\n%s", res.Failed, res.ExitCode, res.Log)
	}
	if got := strings.Join(res.Ran, ", "); got != "Set up Go for etdi, Build etdi, etdi sign" {
		t.Errorf("steps run: %s", got)
	}
	// The action's ref is the version etdi reports.
	if !strings.Contains(res.Log, "etdi v1.4.2 (") {
		t.Errorf("the built etdi does not report the action's ref as its version:\n%s", res.Log)
	}
	if res.Outputs["bundle"] != "mcp/weather.etdi.json" {
		t.Fatalf("bundle output %q", res.Outputs["bundle"])
	}
	bundle := filepath.Join(ws, "mcp", "weather.etdi.json")
	if d := sha256File(t, bundle); res.Outputs["digest"] != d {
		t.Errorf("digest output %q, file %s", res.Outputs["digest"], d)
	}
	if !strings.Contains(res.Summary, res.Outputs["digest"]) {
		t.Errorf("job summary lacks the digest: %q", res.Summary)
	}
	for _, k := range []string{"sarif", "findings", "exit-code"} {
		if res.Outputs[k] != "" {
			t.Errorf("sign set check output %s=%q", k, res.Outputs[k])
		}
	}
	// A client trusting the public key verifies the bundle.
	mustEtdi(t, ws, "trust", "add", "--policy", "trust.json", "--provider", "acme", "--key", "keys/acme.pub")
	out := mustEtdi(t, ws, "verify", "--trust", "trust.json", bundle)
	if !regexp.MustCompile(`provider\s+acme `).MatchString(out) {
		t.Errorf("verify: %s", out)
	}

	// A wrong password fails the step and sets no output.
	res = runAction(t, ws, map[string]string{
		"command":  "sign",
		"manifest": "mcp/weather.manifest.json",
		"bundle":   "other.etdi.json",
		"key":      filepath.Join(ws, "keys", "acme.key"),
	}, map[string]string{"ETDI_PASSWORD": "wrong"})
	if res.Failed != "etdi sign" || res.Outputs["bundle"] != "" || res.Outputs["digest"] != "" {
		t.Fatalf("wrong password: failed %q, outputs %v\n%s", res.Failed, res.Outputs, res.Log)
	}
	if _, err := os.Stat(filepath.Join(ws, "other.etdi.json")); err == nil {
		t.Error("a bundle was written with the wrong password")
	}
	if !hasCommand(res, "::error title=etdi::etdi sign failed") {
		t.Errorf("no error annotation: %q", res.Commands)
	}
}

// consumer sets up a trust policy for the provider's key and pins approved
// from the unchanged listing; it returns the workspace.
func consumer(t *testing.T) string {
	ws := provider(t)
	mustEtdi(t, ws, "sign", "--key", "keys/acme.key", "--out", "weather.etdi.json", "mcp/weather.manifest.json")
	mustEtdi(t, ws, "trust", "add", "--policy", ".etdi/trust.json", "--provider", "acme", "--key", "keys/acme.pub")
	copyFile(t, demodata("live-ok.json"), filepath.Join(ws, "live-ok.json"))
	copyFile(t, demodata("live-rugpull.json"), filepath.Join(ws, "live-rugpull.json"))
	mustEtdi(t, ws, "check", "--trust", ".etdi/trust.json", "--pins", ".etdi/pins.db", "--bundle", "weather.etdi.json", "--tools", "live-ok.json", "--yes")
	return ws
}

func sarifRules(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs []struct {
			Results []struct {
				RuleID string `json:"ruleId"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range doc.Runs {
		for _, x := range r.Results {
			ids = append(ids, x.RuleID)
		}
	}
	return ids
}

// TestActionCheck checks a clean listing (exit 0, SARIF uploaded, the job
// passes) and a rug pull (exit 11: the SARIF is uploaded first, then the
// job fails with 11, or passes with a warning when fail-on-findings is
// false).
func TestActionCheck(t *testing.T) {
	t.Parallel()
	ws := consumer(t)
	in := func(tools string, extra ...string) map[string]string {
		m := map[string]string{"command": "check", "trust": ".etdi/trust.json", "pins": ".etdi/pins.db",
			"bundle": "weather.etdi.json", "tools": tools}
		for i := 0; i < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}

	res := runAction(t, ws, in("live-ok.json"), nil)
	if res.Failed != "" {
		t.Fatalf("clean check: step %q failed:\n%s", res.Failed, res.Log)
	}
	if got := strings.Join(res.Ran, ", "); got != "Set up Go for etdi, Build etdi, etdi check, Upload SARIF to code scanning, Fail on etdi check findings" {
		t.Errorf("steps run: %s", got)
	}
	if res.Outputs["exit-code"] != "0" || res.Outputs["findings"] != "0" {
		t.Errorf("clean check outputs: %v", res.Outputs)
	}
	sarif := res.Outputs["sarif"]
	if sarif != filepath.Join(filepath.Dir(res.Uploads[0].SarifFile), "etdi.sarif") || len(res.Uploads) != 1 || res.Uploads[0].SarifFile != sarif || res.Uploads[0].Category != "etdi" {
		t.Errorf("sarif %q, uploads %+v", sarif, res.Uploads)
	}

	res = runAction(t, ws, in("live-rugpull.json", "sarif", "out/etdi.sarif", "category", "mcp-servers"), nil)
	if res.Outputs["exit-code"] != "11" {
		t.Fatalf("rug pull: exit-code %q\n%s", res.Outputs["exit-code"], res.Log)
	}
	rules := sarifRules(t, filepath.Join(ws, "out", "etdi.sarif"))
	if !slicesContains(rules, "etdi/rug_pull") || res.Outputs["findings"] != strconv.Itoa(len(rules)) {
		t.Errorf("rug pull SARIF rules %v, findings output %q", rules, res.Outputs["findings"])
	}
	if len(res.Uploads) != 1 || res.Uploads[0].SarifFile != "out/etdi.sarif" || res.Uploads[0].Category != "mcp-servers" {
		t.Errorf("the rug pull's SARIF was not uploaded before failing: %+v", res.Uploads)
	}
	if res.Failed != "Fail on etdi check findings" || res.ExitCode != 11 {
		t.Errorf("rug pull: failed %q with %d, want the gate with 11\n%s", res.Failed, res.ExitCode, res.Log)
	}
	if !hasCommand(res, "::error title=etdi check::etdi check exited 11: rug pull") {
		t.Errorf("annotations: %q", res.Commands)
	}

	res = runAction(t, ws, in("live-rugpull.json", "fail-on-findings", "false", "upload-sarif", "false"), nil)
	if res.Failed != "" || res.Outputs["exit-code"] != "11" || len(res.Uploads) != 0 {
		t.Errorf("fail-on-findings false, upload-sarif false: failed %q, outputs %v, uploads %v", res.Failed, res.Outputs, res.Uploads)
	}
	if !hasCommand(res, "::warning title=etdi check::etdi check exited 11") {
		t.Errorf("no warning annotation: %q", res.Commands)
	}

	// A usage error produces no SARIF: the check step fails, nothing is
	// uploaded.
	res = runAction(t, ws, in("live-ok.json", "args", "--no-such-flag"), nil)
	if res.Failed != "etdi check" || len(res.Uploads) != 0 || res.Outputs["sarif"] != "" {
		t.Errorf("usage error: failed %q, uploads %v, outputs %v\n%s", res.Failed, res.Uploads, res.Outputs, res.Log)
	}
	// Nothing to check is refused before etdi runs.
	res = runAction(t, ws, map[string]string{"command": "check"}, nil)
	if res.Failed != "etdi check" || !hasCommand(res, "::error title=etdi::command check needs what to check") {
		t.Errorf("nothing to check: failed %q, %q", res.Failed, res.Commands)
	}
	// An unknown command stops before the build.
	res = runAction(t, ws, map[string]string{"command": "publish"}, nil)
	if res.Failed != "Build etdi" || !hasCommand(res, "::error title=etdi::input command must be sign or check") {
		t.Errorf("unknown command: failed %q, %q", res.Failed, res.Commands)
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// noPwned fails if a hostile input ran: any file named PWNED* anywhere
// under the workspace or the runner's temp.
func noPwned(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && strings.HasPrefix(e.Name(), "PWNED") {
				t.Errorf("a hostile input ran: %s exists", p)
			}
			return nil
		})
	}
}

// TestActionHostileInputs gives the action input values that a script
// interpolating them would run ($(...), backticks, quotes) or that would
// forge outputs and workflow commands (newlines): they stay data.
func TestActionHostileInputs(t *testing.T) {
	t.Parallel()
	ws := provider(t)
	dir := `a $(touch PWNED1) "q" 'x' ` + "`touch PWNED2`"
	manifest := filepath.Join(dir, "m;touch PWNED3.manifest.json")
	copyFile(t, filepath.Join(ws, "mcp", "weather.manifest.json"), filepath.Join(ws, manifest))
	bundle := "out $(touch PWNED4)\ndigest=sha256:forged\n::error::forged\nb.etdi.json"
	res := runAction(t, ws, map[string]string{
		"command":  "sign",
		"manifest": manifest,
		"bundle":   bundle,
		"key":      filepath.Join(ws, "keys", "acme.key"),
		"args":     "--sequence\n7",
	}, map[string]string{"ETDI_PASSWORD": password})
	if res.Failed != "" {
		t.Fatalf("step %q failed:\n%s", res.Failed, res.Log)
	}
	if res.Outputs["bundle"] != bundle {
		t.Errorf("bundle output %q, want %q", res.Outputs["bundle"], bundle)
	}
	if d := sha256File(t, filepath.Join(ws, bundle)); res.Outputs["digest"] != d {
		t.Errorf("digest output %q, file %s", res.Outputs["digest"], d)
	}
	if hasCommand(res, "::error::forged") {
		t.Error("a newline in an input forged a workflow command")
	}
	mustEtdi(t, ws, "trust", "add", "--policy", "trust.json", "--provider", "acme", "--key", "keys/acme.pub")
	if out := mustEtdi(t, ws, "verify", "--json", "--trust", "trust.json", filepath.Join(ws, bundle)); !strings.Contains(out, `"sequence": 7`) {
		t.Errorf("args did not reach etdi sign as two arguments: %s", out)
	}

	// A failing input: the error annotation carries it escaped, on one line.
	res = runAction(t, ws, map[string]string{
		"command":  "sign",
		"manifest": manifest + "\n::error title=forged::x $(touch PWNED5)",
		"key":      filepath.Join(ws, "keys", "acme.key"),
	}, map[string]string{"ETDI_PASSWORD": password})
	if res.Failed != "etdi sign" || hasCommand(res, "::error title=forged") {
		t.Errorf("hostile manifest name: failed %q, commands %q", res.Failed, res.Commands)
	}
	if !hasCommand(res, "::error title=etdi::manifest 'a $(touch PWNED1)") || !strings.Contains(strings.Join(res.Commands, "\n"), "%0A::error title=forged") {
		t.Errorf("the error annotation does not escape the input: %q", res.Commands)
	}

	// check: each line of args is one argument, never a command.
	ws2 := consumer(t)
	res = runAction(t, ws2, map[string]string{
		"command": "check",
		"trust":   ".etdi/trust.json",
		"pins":    ".etdi/pins.db $(touch PWNED6)",
		"tools":   "live-ok.json`touch PWNED7`",
		"args":    "--bundle\n$(touch PWNED8)\n--name\n'; touch PWNED9; '",
		"sarif":   "s $(touch PWNED10).sarif",
	}, nil)
	if res.Outputs["exit-code"] != "1" || res.Outputs["sarif"] != "s $(touch PWNED10).sarif" {
		t.Errorf("hostile check: outputs %v\n%s", res.Outputs, res.Log)
	}
	// etdi's own output ran with workflow commands stopped.
	if !regexp.MustCompile(`(?m)^::stop-commands::[0-9a-f]{32}$`).MatchString(res.Log) {
		t.Errorf("etdi ran without ::stop-commands::\n%s", res.Log)
	}
	noPwned(t, ws, ws2)
}

// TestSetOutput writes outputs through lib.sh and reads them back as the
// runner does: values with newlines, "=", "<<" and lines that look like
// other outputs arrive exactly, each with its own random delimiter.
func TestSetOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "output")
	values := map[string]string{
		"plain":   "sha256:0123",
		"lines":   "first\nfindings=99\nEOF\nlast",
		"heredoc": "x<<EOF\ny",
		"empty":   "",
		"spaces":  "  lead and trail  ",
	}
	names := make([]string, 0, len(values))
	for k := range values {
		names = append(names, k)
	}
	sort.Strings(names)
	script := `. "$1/lib.sh"; shift; while [ $# -gt 0 ]; do set_output "$1" "$2"; shift 2; done`
	args := []string{"-c", script, "bash", repoRoot + "/action"}
	for _, k := range names {
		args = append(args, k, values[k])
	}
	cmd := exec.Command("bash", args...)
	cmd.Env = []string{"GITHUB_OUTPUT=" + out, "PATH=" + os.Getenv("PATH")}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	text := readFile(t, out)
	got, err := parseFileCommand(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(values) {
		t.Errorf("outputs %v", got)
	}
	for k, v := range values {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	delims := regexp.MustCompile(`(?m)^[a-z]+<<(ETDI_EOF_[0-9a-f]{32})$`).FindAllStringSubmatch(text, -1)
	if len(delims) != len(values) {
		t.Fatalf("not every output uses NAME<<DELIMITER:\n%s", text)
	}
	seen := map[string]bool{}
	for _, d := range delims {
		if seen[d[1]] {
			t.Errorf("delimiter %s used twice", d[1])
		}
		seen[d[1]] = true
	}
	// An output name that would break the file is refused.
	cmd = exec.Command("bash", "-c", `. "$1/lib.sh"; set_output "$2" v`, "bash", repoRoot+"/action", "a\nb=c")
	cmd.Env = []string{"GITHUB_OUTPUT=" + out, "PATH=" + os.Getenv("PATH")}
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "invalid output name") {
		t.Errorf("bad output name accepted: %v %s", err, b)
	}
}
