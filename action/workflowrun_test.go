package action

// Runs the repository's own workflows (examples/workflows/*.yml and
// .github/workflows/release.yml) as written: every step of every job in
// order, each run: script with bash -eo pipefail as GitHub's runner does,
// the etdi action through the composite runner (runner_test.go, which also
// runs every run: of action.yml), with the etdi built from this checkout
// first on the PATH.
//
// What only GitHub or the network provides is substituted, and only this:
//   - actions/checkout and actions/setup-go do nothing: the test prepares
//     the workspace and this machine has Go;
//   - github/codeql-action/upload-sarif records the SARIF file it is given;
//   - gh, goreleaser, syft and cosign, and `go install` of a remote module,
//     are stubs on the PATH that record their arguments in $STUB_LOG
//     (`gh release view` answers "not found");
//   - the action's keyless signing uses the loopback Sigstore instance
//     (fulcio-url and rekor-url inputs added, the job's OIDC token request
//     variables set) of internal/sigstoretest;
//   - `etdi trust sigstore-root --update` gets `--tuf-mirror URL --tuf-root
//     FILE` of a TUF repository on 127.0.0.1 (internal/tuftest) that
//     publishes that instance's trusted root;
//   - the github context and the GITHUB_* variables are those of a tag
//     push (workflowContext).

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/internal/sigstoretest"
	"github.com/etdi-dev/etdi/internal/tuftest"
	"go.yaml.in/yaml/v3"
)

type workflowJob struct {
	Env   map[string]string `yaml:"env"`
	Steps []actionStep      `yaml:"steps"`
}

type workflowFile struct {
	Env  map[string]string      `yaml:"env"`
	Jobs map[string]workflowJob `yaml:"jobs"`
}

// workflowRun says how one workflow is run.
type workflowRun struct {
	// jobEnv is the job's environment: GITHUB_* variables and what the
	// test substitutes.
	jobEnv map[string]string
	// contexts are the expression values (github.ref_name, ...).
	contexts map[string]string
	// with adds inputs to each step that uses the etdi action.
	with map[string]string
	// script rewrites a run: script (the documented substitutions).
	script func(string) string
}

// workflowResult is what a job did.
type workflowResult struct {
	Ran    []string
	Failed string
	Log    string
	Stubs  string // the stubs' log
	// Actions are the results of the steps that used the etdi action.
	Actions []*runResult
}

var checkoutRE = regexp.MustCompile(`^actions/checkout@[0-9a-f]{40}$`)

// stubs writes the stubs of GitHub's and the release tools' commands to a
// directory and returns it and the log they write to.
func stubs(t *testing.T) (dir, log string) {
	t.Helper()
	dir = t.TempDir()
	log = filepath.Join(dir, "stub.log")
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	record := `printf '%s' "$(basename "$0")" >>"$STUB_LOG"; for a in "$@"; do printf ' %s' "$a" >>"$STUB_LOG"; done; echo >>"$STUB_LOG"` + "\n"
	files := map[string]string{
		"gh":         record + `if [ "$1 $2" = "release view" ]; then echo "release not found" >&2; exit 1; fi` + "\n",
		"goreleaser": record, "syft": record, "cosign": record,
		"go": `if [ "$1" = install ]; then case $2 in *@*) ` + record + ` exit 0 ;; esac; fi
exec "` + goBin + `" "$@"
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/usr/bin/env bash\nset -eu\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, log
}

// runWorkflow runs every job of the workflow file in workspace ws.
func runWorkflow(t *testing.T, file, ws string, wr workflowRun) *workflowResult {
	t.Helper()
	var w workflowFile
	dec := yaml.NewDecoder(strings.NewReader(readFile(t, file)))
	if err := dec.Decode(&w); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	stubDir, stubLog := stubs(t)
	res := &workflowResult{}
	var log strings.Builder
	for jobName, job := range w.Jobs {
		r := &runner{t: t, action: &actionFile{}, inputs: map[string]string{}, env: map[string]string{},
			steps: map[string]map[string]string{}, temp: t.TempDir(), workspace: ws, contexts: wr.contexts}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			if strings.HasPrefix(k, "GITHUB_") || strings.HasPrefix(k, "RUNNER_") || strings.HasPrefix(k, "ACTIONS_") ||
				strings.HasPrefix(k, "INPUT_") || strings.HasPrefix(k, "ETDI_") {
				continue
			}
			r.env[k] = v
		}
		for k, v := range goEnv(t) {
			r.env[k] = v
		}
		r.env["HOME"] = filepath.Join(r.temp, "home")
		os.MkdirAll(r.env["HOME"], 0o755)
		r.env["PATH"] = stubDir + string(os.PathListSeparator) + filepath.Dir(etdiBin) + string(os.PathListSeparator) + os.Getenv("PATH")
		r.env["STUB_LOG"] = stubLog
		r.env["GITHUB_ACTIONS"] = "true"
		r.env["GITHUB_WORKSPACE"] = ws
		r.env["RUNNER_TEMP"] = r.temp
		for _, m := range []map[string]string{w.Env, job.Env, wr.jobEnv} {
			for k, v := range m {
				r.env[k] = r.interpolate(v)
			}
		}
		summary := filepath.Join(r.temp, "summary.md")
		for i, s := range job.Steps {
			if !r.shouldRun(s.If) {
				continue
			}
			name := jobName + ": " + s.Name
			if s.Name == "" {
				name = jobName + ": " + s.Uses + s.Run
			}
			res.Ran = append(res.Ran, name)
			switch {
			case checkoutRE.MatchString(s.Uses), setupGo.MatchString(s.Uses):
			case uploadSarif.MatchString(s.Uses):
			case strings.HasPrefix(s.Uses, "etdi-dev/etdi@"):
				in := map[string]string{}
				for k, v := range s.With {
					in[k] = r.interpolate(v)
				}
				for k, v := range wr.with {
					in[k] = v
				}
				jobEnv := map[string]string{}
				for k, v := range wr.jobEnv {
					jobEnv[k] = v
				}
				for k, v := range s.Env {
					jobEnv[k] = r.interpolate(v)
				}
				ar := runAction(t, ws, in, jobEnv)
				res.Actions = append(res.Actions, ar)
				log.WriteString(ar.Log)
				if s.ID != "" {
					r.steps[s.ID] = ar.Outputs
				}
				if ar.Failed != "" {
					r.failed = true
					if res.Failed == "" {
						res.Failed = name + " (" + ar.Failed + ")"
					}
				}
			case s.Run != "":
				s.Shell = "bash" // GitHub's default on Linux: bash -eo pipefail
				if wr.script != nil {
					s.Run = wr.script(s.Run)
				}
				code, out, _ := r.runStep(i, s, summary)
				log.WriteString(out)
				if code != 0 {
					r.failed = true
					if res.Failed == "" {
						res.Failed = name
					}
				}
			default:
				t.Fatalf("%s: step %q uses %q, which this runner does not know", file, s.Name, s.Uses)
			}
		}
	}
	res.Log = log.String()
	b, _ := os.ReadFile(stubLog)
	res.Stubs = string(b)
	return res
}

// workflowContext is the github context and variables of a tag push of
// release.yml in acme/weather-mcp.
func workflowContext(tag string) (map[string]string, map[string]string) {
	ref := "refs/tags/" + tag
	env := map[string]string{
		"GITHUB_SERVER_URL":   "https://github.com",
		"GITHUB_REPOSITORY":   "acme/weather-mcp",
		"GITHUB_REF":          ref,
		"GITHUB_REF_NAME":     tag,
		"GITHUB_WORKFLOW_REF": "acme/weather-mcp/.github/workflows/release.yml@" + ref,
		"GITHUB_EVENT_NAME":   "push",
	}
	ctx := map[string]string{"github.token": "ghs_test-token", "github.ref_name": tag, "github.ref": ref,
		"github.repository": "acme/weather-mcp", "github.sha": strings.Repeat("a", 40)}
	return env, ctx
}

// tufUpdate points every 'etdi trust sigstore-root --update' of a script
// at repo, with its TUF root written to dir.
func tufUpdate(t *testing.T, repo *tuftest.Repo, dir string) func(string) string {
	root := repo.WriteRoot(t, dir, "tuf-root.json")
	return func(s string) string {
		return strings.ReplaceAll(s, "etdi trust sigstore-root --update",
			"etdi trust sigstore-root --update --tuf-mirror "+repo.URL+" --tuf-root "+root)
	}
}

// The provider's release workflow runs as written on a tag push: the
// action builds etdi and signs keylessly, the verify step fetches the
// trusted root through TUF, trusts this workflow at this tag and verifies
// the bundle, and the bundle is attached to the release. A bundle signed
// by another workflow (the identity differs from the one this run
// checks), and a trusted root the TUF mirror serves tampered, stop the job
// before anything is attached.
func TestProviderWorkflowRuns(t *testing.T) {
	t.Parallel()
	file := filepath.Join(repoRoot, "examples", "workflows", "provider-release.yml")
	run := func(t *testing.T, claimsWorkflow string, tamper bool) *workflowResult {
		ws := t.TempDir()
		copyFile(t, demodata("weather.manifest.json"), filepath.Join(ws, "weather.manifest.json"))
		in := sigstoretest.New(t)
		in.GitHubClaims = sigstoretest.GitHubClaims("acme/weather-mcp", "refs/tags/v1.2.0", claimsWorkflow)
		repo := tuftest.New(t, in.TrustedRoot(t))
		if tamper {
			repo.TamperTarget(t, sigstoretest.New(t).TrustedRoot(t))
		}
		env, ctx := workflowContext("v1.2.0")
		env["ACTIONS_ID_TOKEN_REQUEST_URL"] = in.TokenURL
		env["ACTIONS_ID_TOKEN_REQUEST_TOKEN"] = in.RequestToken
		return runWorkflow(t, file, ws, workflowRun{jobEnv: env, contexts: ctx,
			with: map[string]string{"fulcio-url": in.URL, "rekor-url": in.URL}, script: tufUpdate(t, repo, t.TempDir())})
	}

	res := run(t, ".github/workflows/release.yml", false)
	if res.Failed != "" {
		t.Fatalf("step %q failed:\n%s", res.Failed, res.Log)
	}
	if len(res.Actions) != 1 || res.Actions[0].Outputs["bundle"] != "weather.etdi.json" {
		t.Fatalf("the action's outputs: %+v", res.Actions)
	}
	identity := sigstoretest.GitHubIdentity("acme/weather-mcp", "refs/tags/v1.2.0", ".github/workflows/release.yml")
	if !strings.Contains(res.Log, "kept 1 Sigstore trusted root(s) from TUF mirror") || !strings.Contains(res.Log, "keyless "+identity) {
		t.Fatalf("the verify step did not verify the bundle:\n%s", res.Log)
	}
	if !strings.Contains(res.Stubs, "gh release create v1.2.0 --verify-tag") || !strings.Contains(res.Stubs, "gh release upload v1.2.0 weather.etdi.json --clobber") {
		t.Fatalf("the bundle was not attached:\n%s", res.Stubs)
	}

	res = run(t, ".github/workflows/other.yml", false)
	if res.Failed != "sign: Verify the bundle as clients will" || strings.Contains(res.Stubs, "gh release upload") ||
		!strings.Contains(res.Log, "not a keyless signer trusted for the provider") {
		t.Fatalf("a bundle of another workflow: failed %q, stubs %q\n%s", res.Failed, res.Stubs, res.Log)
	}
	res = run(t, ".github/workflows/release.yml", true)
	if res.Failed != "sign: Verify the bundle as clients will" || strings.Contains(res.Stubs, "gh release upload") || !strings.Contains(res.Log, "TUF mirror http://127.0.0.1") {
		t.Fatalf("a tampered trusted root: failed %q, stubs %q\n%s", res.Failed, res.Stubs, res.Log)
	}
}

// etdi's own release workflow runs as written on a tag push: it installs
// the pinned versions of goreleaser, syft and cosign, then releases (all
// three stubs here).
func TestReleaseWorkflowRuns(t *testing.T) {
	t.Parallel()
	env, ctx := workflowContext("v1.2.0")
	res := runWorkflow(t, filepath.Join(repoRoot, ".github", "workflows", "release.yml"), t.TempDir(), workflowRun{jobEnv: env, contexts: ctx})
	if res.Failed != "" {
		t.Fatalf("step %q failed:\n%s", res.Failed, res.Log)
	}
	for _, want := range []string{"go install github.com/goreleaser/goreleaser/v2@v", "go install github.com/anchore/syft/cmd/syft@v",
		"go install github.com/sigstore/cosign/v3/cmd/cosign@v", "goreleaser release --clean"} {
		if !strings.Contains(res.Stubs, want) {
			t.Errorf("%q not run:\n%s", want, res.Stubs)
		}
	}
}

// The stubs stand in only for what they name: another command still runs,
// and a failing command fails its step.
func TestWorkflowRunnerFailsOnFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "w.yml")
	os.WriteFile(f, []byte("jobs:\n  j:\n    steps:\n      - name: ok\n        run: etdi version\n      - name: bad\n        run: |\n          false\n          echo not reached\n      - name: after\n        run: echo after\n"), 0o644)
	res := runWorkflow(t, f, dir, workflowRun{})
	if res.Failed != "j: bad" || strings.Contains(res.Log, "not reached") || strings.Contains(res.Log, "after") || !bytes.Contains([]byte(res.Log), []byte("etdi")) {
		t.Fatalf("failed %q:\n%s", res.Failed, res.Log)
	}
}
