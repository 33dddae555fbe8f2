package action

// A small runner for the composite action in ../action.yml, doing what the
// GitHub Actions runner does with it: inputs and their defaults, ${{ }}
// expressions in env, with and if (the subset action.yml uses; anything
// else fails the test), a bash step per run: with the files and variables
// the runner provides (GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH,
// GITHUB_STEP_SUMMARY, GITHUB_ACTION_PATH, RUNNER_TEMP, GITHUB_WORKSPACE),
// step outputs parsed as the runner parses them, and workflow commands
// read from the log with ::stop-commands:: honoured. The two remote actions
// are not fetched: setup-go is checked for its go.mod (this machine has
// Go), and the SARIF upload records what it would send.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

type actionInput struct {
	Description string `yaml:"description"`
	Required    bool   `yaml:"required"`
	Default     string `yaml:"default"`
}

type actionStep struct {
	Name  string            `yaml:"name"`
	ID    string            `yaml:"id"`
	If    string            `yaml:"if"`
	Uses  string            `yaml:"uses"`
	Run   string            `yaml:"run"`
	Shell string            `yaml:"shell"`
	With  map[string]string `yaml:"with"`
	Env   map[string]string `yaml:"env"`
}

type actionFile struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Author      string `yaml:"author"`
	Branding    struct {
		Icon  string `yaml:"icon"`
		Color string `yaml:"color"`
	} `yaml:"branding"`
	Inputs  map[string]actionInput `yaml:"inputs"`
	Outputs map[string]struct {
		Description string `yaml:"description"`
		Value       string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string       `yaml:"using"`
		Steps []actionStep `yaml:"steps"`
	} `yaml:"runs"`
}

// repoRoot is the action's directory: GITHUB_ACTION_PATH.
var repoRoot, _ = filepath.Abs("..")

func loadAction(t *testing.T) *actionFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a actionFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	return &a
}

// upload is what the SARIF upload step was given.
type upload struct {
	SarifFile string
	Category  string
}

type runResult struct {
	Outputs  map[string]string
	Steps    map[string]map[string]string // step id -> outputs
	Ran      []string                     // names of the steps that ran
	Failed   string                       // the name of the step that failed
	ExitCode int                          // its exit code
	Log      string
	Commands []string // workflow commands the runner would act on
	Uploads  []upload
	Summary  string
}

type runner struct {
	t         *testing.T
	action    *actionFile
	inputs    map[string]string
	env       map[string]string // the job's environment and GITHUB_ENV
	path      []string          // GITHUB_PATH entries, newest first
	steps     map[string]map[string]string
	failed    bool
	temp      string
	workspace string
	actionRef string // github.action_ref, from GITHUB_ACTION_REF in jobEnv
	// contexts are further values of the workflow's contexts
	// (github.ref_name, github.token, ...) when the runner runs a
	// workflow's job rather than the action.
	contexts map[string]string
}

// runAction runs action.yml with the given inputs, in workspace, with the
// job environment jobEnv on top of this process's (without its own GitHub
// variables).
func runAction(t *testing.T, workspace string, inputs, jobEnv map[string]string) *runResult {
	t.Helper()
	a := loadAction(t)
	r := &runner{t: t, action: a, inputs: map[string]string{}, env: map[string]string{},
		steps: map[string]map[string]string{}, temp: t.TempDir(), workspace: workspace}
	for k, v := range inputs {
		if _, ok := a.Inputs[k]; !ok {
			t.Fatalf("input %q is not declared in action.yml", k)
		}
		r.inputs[k] = v
	}
	for k, in := range a.Inputs {
		if _, ok := r.inputs[k]; !ok {
			if in.Required {
				t.Fatalf("required input %q not given", k)
			}
			r.inputs[k] = in.Default
		}
	}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GITHUB_") || strings.HasPrefix(k, "RUNNER_") || strings.HasPrefix(k, "ACTIONS_") ||
			strings.HasPrefix(k, "INPUT_") || strings.HasPrefix(k, "ETDI_") {
			continue
		}
		r.env[k] = v
	}
	r.env["HOME"] = filepath.Join(r.temp, "home")
	// The Go caches stay where they are, as setup-go's cache restores
	// them on a runner: the build is then a link, not a compile.
	for k, v := range goEnv(t) {
		r.env[k] = v
	}
	os.MkdirAll(r.env["HOME"], 0o755)
	r.env["PATH"] = goShimDir + string(os.PathListSeparator) + r.env["PATH"]
	r.env["GITHUB_ACTIONS"] = "true"
	r.env["GITHUB_WORKSPACE"] = workspace
	r.env["RUNNER_TEMP"] = r.temp
	for k, v := range jobEnv {
		r.env[k] = v
	}
	r.actionRef = jobEnv["GITHUB_ACTION_REF"]
	summaryFile := filepath.Join(r.temp, "step_summary.md")
	res := &runResult{Steps: r.steps, Outputs: map[string]string{}}
	var log strings.Builder
	for i, s := range a.Runs.Steps {
		if !r.shouldRun(s.If) {
			continue
		}
		res.Ran = append(res.Ran, s.Name)
		switch {
		case s.Uses != "":
			r.uses(s, res)
		case s.Run != "":
			code, out, commands := r.runStep(i, s, summaryFile)
			log.WriteString(out)
			res.Commands = append(res.Commands, commands...)
			if code != 0 {
				r.failed = true
				if res.Failed == "" {
					res.Failed, res.ExitCode = s.Name, code
				}
			}
		default:
			t.Fatalf("step %q neither uses nor runs", s.Name)
		}
	}
	for name, o := range a.Outputs {
		res.Outputs[name] = r.interpolate(o.Value)
	}
	res.Log = log.String()
	sum, _ := os.ReadFile(summaryFile)
	res.Summary = string(sum)
	return res
}

// goShimDir holds a go command, first on the PATH of every step, that
// makes each distinct go build once per test binary: the first build with
// given arguments (all but -o), directory and Go settings is made by the
// real go onto a program kept in a folder of buildCache, and every such
// build gets a copy of it. The action's install step still runs its own go
// build command with its own tags and flags, and the go command links the
// kept program again whenever its sources or flags changed; only the
// repeated link of an identical program is saved. Anything else goes to
// the real go.
var goShimDir string

// writeGoShim writes the go command of goShimDir to dir, keeping the
// programs it builds in kept.
func writeGoShim(dir, kept string) (string, error) {
	real, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	made := filepath.Join(dir, "made") // the builds made by this test binary
	for _, d := range []string{made, kept} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	script := `#!/usr/bin/env bash
set -euo pipefail
real=` + shellQuote(real) + `
kept=` + shellQuote(kept) + `
made=` + shellQuote(made) + `
if [ "${1:-}" != build ]; then exec "$real" "$@"; fi
out= prev= args=()
for a in "$@"; do
	if [ "$prev" = -o ]; then out=$a; args+=(-o-OUT); else args+=("$a"); fi
	prev=$a
done
if [ -z "$out" ]; then exec "$real" "$@"; fi
key=$(printf '%s\0' "$PWD" "${GOFLAGS:-}" "${GOWORK:-}" "${GOOS:-}" "${GOARCH:-}" "${CGO_ENABLED:-}" "${args[@]}" | sha256sum | cut -c1-64)
if [ ! -f "$made/$key" ]; then
	exec 9>"$kept/$key.lock"
	flock 9
	if [ ! -f "$made/$key" ]; then
		build=() prev=
		for a in "$@"; do
			if [ "$prev" = -o ]; then build+=("$kept/$key"); else build+=("$a"); fi
			prev=$a
		done
		"$real" "${build[@]}"
		touch "$made/$key"
	fi
	exec 9>&-
fi
cp "$kept/$key" "$out"
`
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

// shellQuote quotes s for bash.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var goEnvOnce struct {
	sync.Once
	m   map[string]string
	err error
}

func goEnv(t *testing.T) map[string]string {
	goEnvOnce.Do(func() {
		out, err := exec.Command("go", "env", "-json", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
		if err != nil {
			goEnvOnce.err = err
			return
		}
		goEnvOnce.err = json.Unmarshal(out, &goEnvOnce.m)
	})
	if goEnvOnce.err != nil {
		t.Fatal(goEnvOnce.err)
	}
	return goEnvOnce.m
}

// shouldRun evaluates a step's if: without a status function it is
// success() && (expr), as on GitHub.
func (r *runner) shouldRun(cond string) bool {
	if cond == "" {
		return !r.failed
	}
	cond = strings.TrimSpace(cond)
	if strings.HasPrefix(cond, "${{") {
		cond = strings.TrimSuffix(strings.TrimPrefix(cond, "${{"), "}}")
	}
	v := truthy(r.eval(cond))
	if !strings.Contains(cond, "always()") && !strings.Contains(cond, "failure()") && !strings.Contains(cond, "success()") {
		return v && !r.failed
	}
	return v
}

var setupGo = regexp.MustCompile(`^actions/setup-go@[0-9a-f]{40}$`)
var uploadSarif = regexp.MustCompile(`^github/codeql-action/upload-sarif@[0-9a-f]{40}$`)

func (r *runner) uses(s actionStep, res *runResult) {
	t := r.t
	with := map[string]string{}
	for k, v := range s.With {
		with[k] = r.interpolate(v)
	}
	switch {
	case setupGo.MatchString(s.Uses):
		f := with["go-version-file"]
		if f != filepath.Join(repoRoot, "go.mod") {
			t.Fatalf("setup-go go-version-file is %q, not the action's go.mod", f)
		}
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
	case uploadSarif.MatchString(s.Uses):
		f := with["sarif_file"]
		abs := f
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(r.workspace, f) // the action's working directory
		}
		b, err := os.ReadFile(abs)
		if err != nil {
			t.Fatalf("upload-sarif: %v", err)
		}
		var doc struct {
			Version string            `json:"version"`
			Runs    []json.RawMessage `json:"runs"`
		}
		if err := json.Unmarshal(b, &doc); err != nil || doc.Version != "2.1.0" || len(doc.Runs) == 0 {
			t.Fatalf("upload-sarif got no SARIF 2.1.0 log (%v): %.200s", err, b)
		}
		res.Uploads = append(res.Uploads, upload{SarifFile: f, Category: with["category"]})
	default:
		t.Fatalf("step %q uses %q, which this runner does not know (pin actions by full commit SHA)", s.Name, s.Uses)
	}
}

func (r *runner) runStep(i int, s actionStep, summaryFile string) (int, string, []string) {
	t := r.t
	if s.Shell != "bash" {
		t.Fatalf("step %q: shell %q, want bash", s.Name, s.Shell)
	}
	if strings.Contains(s.Run, "${{") {
		t.Fatalf("step %q interpolates an expression into its script: %q", s.Name, s.Run)
	}
	dir := filepath.Join(r.temp, fmt.Sprintf("step%d", i))
	os.MkdirAll(dir, 0o755)
	script := filepath.Join(dir, "script.sh")
	os.WriteFile(script, []byte(s.Run), 0o644)
	files := map[string]string{
		"GITHUB_OUTPUT": filepath.Join(dir, "output"),
		"GITHUB_ENV":    filepath.Join(dir, "env"),
		"GITHUB_PATH":   filepath.Join(dir, "path"),
	}
	for _, f := range files {
		os.WriteFile(f, nil, 0o644)
	}
	env := map[string]string{}
	for k, v := range r.env {
		env[k] = v
	}
	for k, v := range s.Env {
		env[k] = r.interpolate(v)
	}
	for k, f := range files {
		env[k] = f
	}
	env["GITHUB_STEP_SUMMARY"] = summaryFile
	env["GITHUB_ACTION_PATH"] = repoRoot
	if len(r.path) > 0 {
		env["PATH"] = strings.Join(r.path, string(os.PathListSeparator)) + string(os.PathListSeparator) + env["PATH"]
	}
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script)
	cmd.Dir = r.workspace
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	code := 0
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("step %q: %v", s.Name, err)
		}
		code = ee.ExitCode()
	}
	outputs, err := parseFileCommand(readFile(t, files["GITHUB_OUTPUT"]))
	if err != nil {
		t.Fatalf("step %q: GITHUB_OUTPUT: %v", s.Name, err)
	}
	if s.ID != "" {
		r.steps[s.ID] = outputs
	}
	envs, err := parseFileCommand(readFile(t, files["GITHUB_ENV"]))
	if err != nil {
		t.Fatalf("step %q: GITHUB_ENV: %v", s.Name, err)
	}
	for k, v := range envs {
		r.env[k] = v
	}
	for _, p := range strings.Split(readFile(t, files["GITHUB_PATH"]), "\n") {
		if p = strings.TrimSpace(p); p != "" {
			r.path = append([]string{p}, r.path...)
		}
	}
	return code, out.String(), workflowCommands(out.String())
}

func readFile(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// parseFileCommand reads GITHUB_OUTPUT or GITHUB_ENV as the runner does:
// NAME=VALUE lines, or NAME<<DELIMITER, the value's lines, DELIMITER.
func parseFileCommand(s string) (map[string]string, error) {
	m := map[string]string{}
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if line == "" {
			continue
		}
		eq, hd := strings.Index(line, "="), strings.Index(line, "<<")
		switch {
		case eq >= 0 && (hd < 0 || eq < hd):
			if eq == 0 {
				return nil, fmt.Errorf("line %d: empty name", i+1)
			}
			m[line[:eq]] = line[eq+1:]
		case hd > 0:
			name, delim := line[:hd], line[hd+2:]
			if delim == "" {
				return nil, fmt.Errorf("line %d: empty delimiter", i+1)
			}
			var val []string
			for i++; ; i++ {
				if i >= len(lines) {
					return nil, fmt.Errorf("%s: delimiter %q not found", name, delim)
				}
				if lines[i] == delim {
					break
				}
				val = append(val, lines[i])
			}
			m[name] = strings.Join(val, "\n")
		default:
			return nil, fmt.Errorf("line %d: %q is neither NAME=VALUE nor NAME<<DELIMITER", i+1, line)
		}
	}
	return m, nil
}

// workflowCommands returns the lines the runner would take for workflow
// commands (::name ...::message), skipping those between ::stop-commands::T
// and ::T::.
func workflowCommands(log string) []string {
	var cmds []string
	stop := ""
	for _, line := range strings.Split(log, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "::") {
			continue
		}
		if stop != "" {
			if line == "::"+stop+"::" {
				stop = ""
			}
			continue
		}
		if tok, ok := strings.CutPrefix(line, "::stop-commands::"); ok {
			stop = tok
			continue
		}
		cmds = append(cmds, line)
	}
	return cmds
}

// interpolate replaces each ${{ expr }} in s by its value.
func (r *runner) interpolate(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "${{")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			r.t.Fatalf("unterminated expression in %q", s)
		}
		b.WriteString(s[:i])
		b.WriteString(str(r.eval(s[i+3 : i+j])))
		s = s[i+j+2:]
	}
}

// eval evaluates the expression subset action.yml uses: contexts inputs,
// steps.ID.outputs, github.action_path, github.action_ref,
// github.workspace, runner.temp; 'strings'; == and != (case-insensitive,
// as GitHub compares strings); && and ||; always(), success(), failure().
func (r *runner) eval(expr string) any {
	p := &exprParser{r: r, toks: tokenize(r.t, expr)}
	v := p.or()
	if p.i != len(p.toks) {
		r.t.Fatalf("expression %q: unexpected %q", expr, p.toks[p.i])
	}
	return v
}

var tokenRE = regexp.MustCompile(`\s*('(?:[^']|'')*'|==|!=|&&|\|\||[A-Za-z_][A-Za-z0-9_.-]*\(\)|[A-Za-z_][A-Za-z0-9_.-]*|[()!])`)

func tokenize(t *testing.T, s string) []string {
	var toks []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		m := tokenRE.FindStringSubmatchIndex(s)
		if m == nil || m[0] != 0 {
			t.Fatalf("expression: cannot read %q", s)
		}
		toks = append(toks, s[m[2]:m[3]])
		s = s[m[1]:]
	}
	return toks
}

type exprParser struct {
	r    *runner
	toks []string
	i    int
}

func (p *exprParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *exprParser) or() any {
	v := p.and()
	for p.peek() == "||" {
		p.i++
		w := p.and()
		if !truthy(v) {
			v = w
		}
	}
	return v
}

func (p *exprParser) and() any {
	v := p.cmp()
	for p.peek() == "&&" {
		p.i++
		w := p.cmp()
		if truthy(v) {
			v = w
		}
	}
	return v
}

func (p *exprParser) cmp() any {
	v := p.unary()
	if op := p.peek(); op == "==" || op == "!=" {
		p.i++
		w := p.unary()
		eq := strings.EqualFold(str(v), str(w))
		return eq == (op == "==")
	}
	return v
}

func (p *exprParser) unary() any {
	tok := p.peek()
	p.i++
	switch {
	case tok == "!":
		return !truthy(p.unary())
	case tok == "(":
		v := p.or()
		if p.peek() != ")" {
			p.r.t.Fatalf("expression: missing )")
		}
		p.i++
		return v
	case strings.HasPrefix(tok, "'"):
		return strings.ReplaceAll(tok[1:len(tok)-1], "''", "'")
	case tok == "always()":
		return true
	case tok == "success()":
		return !p.r.failed
	case tok == "failure()":
		return p.r.failed
	}
	return p.r.context(tok)
}

func (p *runner) context(ref string) any {
	if v, ok := p.contexts[ref]; ok {
		return v
	}
	parts := strings.Split(ref, ".")
	switch {
	case len(parts) == 2 && parts[0] == "inputs":
		v, ok := p.inputs[parts[1]]
		if !ok {
			p.t.Fatalf("expression reads undeclared input %q", parts[1])
		}
		return v
	case len(parts) == 4 && parts[0] == "steps" && parts[2] == "outputs":
		return p.steps[parts[1]][parts[3]]
	case ref == "github.action_path":
		return repoRoot
	case ref == "github.action_ref":
		return p.actionRef
	case ref == "github.workspace":
		return p.workspace
	case ref == "runner.temp":
		return p.temp
	}
	p.t.Fatalf("expression reads %q, which this runner does not provide", ref)
	return nil
}

func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		return x != ""
	}
	return v != nil
}

func str(v any) string {
	switch x := v.(type) {
	case bool:
		if x {
			return "true"
		}
		return "false"
	case string:
		return x
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}
