package action

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/internal/sigstoretest"
	"go.yaml.in/yaml/v3"
)

var (
	inputRef    = regexp.MustCompile(`\$\{\{\s*inputs\.([A-Za-z0-9_-]+)\s*\}\}`)
	scriptRef   = regexp.MustCompile(`"\$GITHUB_ACTION_PATH/action/([a-z]+\.sh)"`)
	scriptInput = regexp.MustCompile(`\bINPUT_[A-Z0-9_]+\b`)
	pinnedUses  = regexp.MustCompile(`(?m)^\s*(?:-\s*)?uses:\s*(\S+)(.*)$`)
	shaPin      = regexp.MustCompile(`^[\w.-]+/[\w./-]+@[0-9a-f]{40}$`)
	versionNote = regexp.MustCompile(`^\s*#\s*v\d+\.\d+\.\d+\s*$`)
)

// TestActionDefinition checks action.yml against its scripts: every
// INPUT_ variable a script reads is passed by the step that runs it, as
// ${{ inputs.<name> }} of the input whose name it spells; every input is
// used; no step puts an expression into script text; every output reads a
// step that exists; remote actions are pinned by commit with the version
// in a comment.
func TestActionDefinition(t *testing.T) {
	t.Parallel()
	a := loadAction(t)
	if a.Runs.Using != "composite" {
		t.Fatalf("runs.using %q", a.Runs.Using)
	}
	used := map[string]bool{}
	ids := map[string]bool{}
	for _, s := range a.Runs.Steps {
		ids[s.ID] = true
		for _, m := range regexp.MustCompile(`\binputs\.([A-Za-z0-9_-]+)`).FindAllStringSubmatch(s.If, -1) {
			used[m[1]] = true
		}
		for _, v := range s.With {
			for _, m := range inputRef.FindAllStringSubmatch(v, -1) {
				used[m[1]] = true
			}
		}
		for k, v := range s.Env {
			for _, m := range inputRef.FindAllStringSubmatch(v, -1) {
				used[m[1]] = true
				if strings.HasPrefix(k, "INPUT_") && k != "INPUT_"+strings.ToUpper(strings.ReplaceAll(m[1], "-", "_")) {
					t.Errorf("step %q: %s carries inputs.%s", s.Name, k, m[1])
				}
			}
		}
		if s.Run == "" {
			continue
		}
		if strings.Contains(s.Run, "${{") {
			t.Errorf("step %q puts an expression into its script: %q", s.Name, s.Run)
		}
		m := scriptRef.FindStringSubmatch(s.Run)
		if m == nil {
			t.Errorf("step %q does not run a script under action/: %q", s.Name, s.Run)
			continue
		}
		src := readFile(t, filepath.Join(repoRoot, "action", m[1])) + readFile(t, filepath.Join(repoRoot, "action", "lib.sh"))
		for _, v := range uniq(scriptInput.FindAllString(src, -1)) {
			if _, ok := s.Env[v]; !ok {
				t.Errorf("step %q: %s reads %s, which the step does not pass", s.Name, m[1], v)
			}
		}
	}
	for name := range a.Inputs {
		if !used[name] {
			t.Errorf("input %q is declared but no step uses it", name)
		}
	}
	for name, o := range a.Outputs {
		m := regexp.MustCompile(`^\$\{\{ steps\.([a-z]+)\.outputs\.([a-z-]+) \}\}$`).FindStringSubmatch(o.Value)
		if m == nil || !ids[m[1]] {
			t.Errorf("output %q reads %q, not a step of the action", name, o.Value)
		}
	}
	checkPinned(t, "action.yml", readFile(t, filepath.Join(repoRoot, "action.yml")), nil)
}

// checkPinned requires every remote uses: to name a full commit SHA and
// the version in a comment, except refs allowed by except.
func checkPinned(t *testing.T, name, text string, except func(string) bool) {
	t.Helper()
	n := 0
	for _, m := range pinnedUses.FindAllStringSubmatch(text, -1) {
		ref := m[1]
		if strings.HasPrefix(ref, "./") || (except != nil && except(ref)) {
			continue
		}
		n++
		if !shaPin.MatchString(ref) || !versionNote.MatchString(m[2]) {
			t.Errorf("%s: %q is not pinned by full commit SHA with its version in a comment (%q)", name, ref, m[2])
		}
	}
	if n == 0 {
		t.Errorf("%s: no remote action found: the pattern is broken", name)
	}
}

func uniq(s []string) []string {
	sort.Strings(s)
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

type workflow struct {
	On          map[string]any    `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Jobs        map[string]struct {
		Permissions map[string]string `yaml:"permissions"`
		Steps       []actionStep      `yaml:"steps"`
	} `yaml:"jobs"`
}

// TestExampleWorkflows parses the workflows under examples/workflows and
// checks what they ask of the action against action.yml: its inputs, the
// values command takes, its outputs, and the permissions each command
// needs (id-token: write for keyless signing, security-events: write for
// the SARIF upload).
func TestExampleWorkflows(t *testing.T) {
	t.Parallel()
	a := loadAction(t)
	files, _ := filepath.Glob(filepath.Join(repoRoot, "examples", "workflows", "*.yml"))
	if len(files) < 2 {
		t.Fatalf("example workflows: %v", files)
	}
	commands := map[string]bool{}
	for _, f := range files {
		text := readFile(t, f)
		var w workflow
		if err := yaml.Unmarshal([]byte(text), &w); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		base := filepath.Base(f)
		checkPinned(t, base, text, func(ref string) bool { return strings.HasPrefix(ref, "etdi-dev/etdi@") })
		for job, j := range w.Jobs {
			perms := map[string]string{}
			for k, v := range w.Permissions {
				perms[k] = v
			}
			for k, v := range j.Permissions {
				perms[k] = v
			}
			etdiSteps := map[string]bool{}
			for _, s := range j.Steps {
				if strings.Contains(s.Run, "${{") {
					t.Errorf("%s: step %q puts an expression into its script", base, s.Name)
				}
				for _, v := range s.Env {
					for _, m := range regexp.MustCompile(`steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)`).FindAllStringSubmatch(v, -1) {
						if _, ok := a.Outputs[m[2]]; etdiSteps[m[1]] && !ok {
							t.Errorf("%s: step %q reads output %q, which the action does not have", base, s.Name, m[2])
						}
					}
				}
				if !strings.HasPrefix(s.Uses, "etdi-dev/etdi@") {
					continue
				}
				etdiSteps[s.ID] = true
				for k := range s.With {
					if _, ok := a.Inputs[k]; !ok {
						t.Errorf("%s: job %s passes input %q, which action.yml does not declare", base, job, k)
					}
				}
				for k, in := range a.Inputs {
					if _, ok := s.With[k]; in.Required && !ok {
						t.Errorf("%s: required input %q missing", base, k)
					}
				}
				cmd := s.With["command"]
				commands[cmd] = true
				switch cmd {
				case "sign":
					if s.With["manifest"] == "" {
						t.Errorf("%s: sign without a manifest", base)
					}
					if s.With["key"] == "" && perms["id-token"] != "write" {
						t.Errorf("%s: keyless signing without permissions id-token: write", base)
					}
				case "check":
					if s.With["upload-sarif"] != "false" && perms["security-events"] != "write" {
						t.Errorf("%s: SARIF upload without permissions security-events: write", base)
					}
				default:
					t.Errorf("%s: command %q", base, cmd)
				}
			}
			if len(etdiSteps) == 0 {
				t.Errorf("%s: job %s does not use the action", base, job)
			}
		}
		switch {
		case commands["sign"] && strings.Contains(base, "provider"):
			push, _ := w.On["push"].(map[string]any)
			if push == nil || push["tags"] == nil {
				t.Errorf("%s: the release workflow does not run on tags: %v", base, w.On)
			}
			if !strings.Contains(text, "gh release upload") || w.Permissions["contents"] != "write" {
				t.Errorf("%s: the bundle is not attached to the release", base)
			}
		case commands["check"] && strings.Contains(base, "consumer"):
			if _, ok := w.On["pull_request"]; !ok {
				t.Errorf("%s: no pull_request trigger", base)
			}
			if _, ok := w.On["schedule"]; !ok {
				t.Errorf("%s: no schedule trigger", base)
			}
		}
	}
	if !commands["sign"] || !commands["check"] {
		t.Errorf("the examples do not show both commands: %v", commands)
	}
}

// TestActionKeylessNeedsIDToken: without the job's OIDC request variables
// (the workflow lacks permissions id-token: write) and without an identity
// token, keyless signing stops before etdi runs and says what to add; the
// keyless-only inputs are refused beside a key.
func TestActionKeylessNeedsIDToken(t *testing.T) {
	t.Parallel()
	ws := provider(t)
	res := runAction(t, ws, map[string]string{"command": "sign", "manifest": "mcp/weather.manifest.json"}, nil)
	if res.Failed != "etdi sign" || !hasCommand(res, "::error title=etdi::keyless signing needs the job's OIDC token: give the workflow 'permissions: id-token: write'") {
		t.Errorf("keyless without id-token: failed %q, %q", res.Failed, res.Commands)
	}
	if strings.Contains(res.Log, "::stop-commands::") {
		t.Error("etdi ran without an identity")
	}
	res = runAction(t, ws, map[string]string{"command": "sign", "manifest": "mcp/weather.manifest.json",
		"key": filepath.Join(ws, "keys", "acme.key"), "fulcio-url": "https://fulcio.example"}, map[string]string{"ETDI_PASSWORD": password})
	if res.Failed != "etdi sign" || !hasCommand(res, "::error title=etdi::input fulcio-url is for keyless signing") {
		t.Errorf("key with fulcio-url: failed %q, %q", res.Failed, res.Commands)
	}
}

// TestActionKeyless runs the keyless path end to end with the variables
// GitHub gives a job with id-token: write: the OIDC token request API,
// Fulcio and Rekor all run on 127.0.0.1 (internal/sigstoretest, built on
// sigstore-go's virtual Sigstore). The action asks for the job's token with
// the request token, signs, and writes a Sigstore bundle that a client
// trusting the release workflow verifies.
func TestActionKeyless(t *testing.T) {
	t.Parallel()
	ws := provider(t)
	in := sigstoretest.New(t)
	in.GitHubClaims = sigstoretest.GitHubClaims("acme/weather-mcp", "refs/tags/v1.2.0", ".github/workflows/release.yml")
	os.WriteFile(filepath.Join(ws, "root.json"), in.TrustedRoot(t), 0o644)
	res := runAction(t, ws, map[string]string{
		"command":    "sign",
		"manifest":   "mcp/weather.manifest.json",
		"fulcio-url": in.URL,
		"rekor-url":  in.URL,
	}, map[string]string{
		"ACTIONS_ID_TOKEN_REQUEST_URL":   in.TokenURL,
		"ACTIONS_ID_TOKEN_REQUEST_TOKEN": in.RequestToken,
	})
	if res.Failed != "" {
		t.Fatalf("step %q failed (exit %d):\n%s", res.Failed, res.ExitCode, res.Log)
	}
	if in.Tokens != 1 || in.Entries != 1 {
		t.Fatalf("tokens served %d, log entries %d", in.Tokens, in.Entries)
	}
	if strings.Contains(res.Log, in.RequestToken) {
		t.Error("the request token was printed")
	}
	bundle := filepath.Join(ws, filepath.FromSlash(res.Outputs["bundle"]))
	if res.Outputs["bundle"] == "" || res.Outputs["digest"] != sha256File(t, bundle) {
		t.Fatalf("outputs %v", res.Outputs)
	}
	data, _ := os.ReadFile(bundle)
	if !strings.Contains(string(data), `"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"`) {
		t.Fatalf("not a Sigstore bundle: %.200s", data)
	}
	mustEtdi(t, ws, "trust", "add", "--policy", "trust.json", "--provider", "acme", "--trusted-root", "root.json",
		"--sigstore-issuer", sigstoretest.GitHubIssuer,
		"--sigstore-identity-regexp", `https://github\.com/acme/weather-mcp/\.github/workflows/release\.yml@refs/tags/v.*`)
	out := mustEtdi(t, ws, "verify", "--trust", "trust.json", bundle)
	if !strings.Contains(out, "keyless "+sigstoretest.GitHubIdentity("acme/weather-mcp", "refs/tags/v1.2.0", ".github/workflows/release.yml")) {
		t.Errorf("verify: %s", out)
	}
	// The request token is the job's credential: a wrong one gets no token
	// and no bundle.
	res = runAction(t, ws, map[string]string{"command": "sign", "manifest": "mcp/weather.manifest.json", "bundle": "other.json",
		"fulcio-url": in.URL, "rekor-url": in.URL}, map[string]string{
		"ACTIONS_ID_TOKEN_REQUEST_URL": in.TokenURL, "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "wrong"})
	if res.Failed != "etdi sign" || res.Outputs["bundle"] != "" {
		t.Fatalf("wrong request token: failed %q, outputs %v", res.Failed, res.Outputs)
	}
}
