package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/etdi-dev/etdi/internal/vectors"
	"github.com/rogpeppe/go-internal/testscript"
)

var etdiBin string

// TestMain builds etdi once for the Go tests that run it as a separate
// program (etdiBin), and registers etdi in the test binary itself for the
// scripts in testdata/script (see TestScripts), which run it without a
// build of their own.
func TestMain(m *testing.M) {
	if os.Getenv("ETDI_RSS_HELPER") == "1" {
		rssHelper()
	}
	testscript.Main(builtEtdi{m}, map[string]func(){
		"etdi": main,
		// etdi as linked by a release build: -ldflags "-X main.version=v9.8.7".
		"etdi-v9.8.7": func() { version = "v9.8.7"; main() },
	})
}

// builtEtdi runs the Go tests with etdiBin built.
type builtEtdi struct{ m *testing.M }

func (b builtEtdi) Run() int {
	dir, err := os.MkdirTemp("", "etdi-cli-test-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	defer runAfterTests()
	etdiBin = filepath.Join(dir, "etdi")
	build := []string{"build", "-o", etdiBin}
	if testing.CoverMode() != "" && os.Getenv("GOCOVERDIR") != "" {
		// Under go test -cover with GOCOVERDIR set, the binary the tests
		// run records what it covers there too (see testEnv).
		build = append(build, "-cover", "-covermode="+testing.CoverMode(), "-coverpkg=github.com/etdi-dev/etdi/...")
	}
	out, err := exec.Command("go", append(build, ".")...).CombinedOutput()
	if err != nil {
		panic("building etdi: " + err.Error() + "\n" + string(out))
	}
	return b.m.Run()
}

// afterTests are what runAfterTests runs: the removal of what tests
// built once for the whole package.
var afterTests struct {
	sync.Mutex
	fns []func()
}

// cleanupAfterTests registers fn to run once every test has ended.
func cleanupAfterTests(fn func()) {
	afterTests.Lock()
	defer afterTests.Unlock()
	afterTests.fns = append(afterTests.fns, fn)
}

// runAfterTests runs what cleanupAfterTests registered, latest first.
func runAfterTests() {
	afterTests.Lock()
	defer afterTests.Unlock()
	for i := len(afterTests.fns) - 1; i >= 0; i-- {
		afterTests.fns[i]()
	}
}

const testPassword = "s3cret-pa55word-for-tests"

type result struct {
	code           int
	stdout, stderr string
}

// runEtdi runs the binary in dir with a private HOME and the given extra
// environment, standard input empty (not a terminal).
func runEtdi(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(etdiBin, args...)
	cmd.Dir = dir
	cmd.Env = append(testEnv("HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"), "PATH="+os.Getenv("PATH")), env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	r := result{code, so.String(), se.String()}
	if strings.Contains(r.stdout+r.stderr, testPassword) {
		t.Fatalf("etdi %v printed the password", args)
	}
	return r
}

// testEnv is vars, and GOCOVERDIR when the tests measure coverage: a
// program the tests start with an environment of their own records its
// coverage only where GOCOVERDIR says.
func testEnv(vars ...string) []string {
	if d := os.Getenv("GOCOVERDIR"); d != "" {
		vars = append(vars, "GOCOVERDIR="+d)
	}
	return vars
}

var pwEnv = []string{"ETDI_PASSWORD=" + testPassword}

// Every vector through the real binary: exit code and --json.
func TestCLIVectors(t *testing.T) {
	dirs, err := os.ReadDir("../../testdata/vectors")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		t.Run(d.Name(), func(t *testing.T) {
			dir, _ := filepath.Abs(filepath.Join("../../testdata/vectors", d.Name()))
			var w vectors.Want
			b, _ := os.ReadFile(filepath.Join(dir, "want.json"))
			if err := json.Unmarshal(b, &w); err != nil {
				t.Fatal(err)
			}
			args := []string{"verify", "--trust", "trust.json", "--at", w.At.Format("2006-01-02T15:04:05Z07:00")}
			if _, err := os.Stat(filepath.Join(dir, "tools.json")); err == nil {
				args = append(args, "--tools", "tools.json")
			}
			args = append(args, "bundle.etdi.json")
			r := runEtdi(t, dir, nil, args...)
			if r.code != w.ExitCode {
				t.Fatalf("%s\nexit %d, want %d\nstdout:\n%s\nstderr:\n%s", w.Description, r.code, w.ExitCode, r.stdout, r.stderr)
			}
			if w.ExitCode != 0 && !strings.Contains(r.stdout, "SECURITY ERROR") {
				t.Errorf("failure without SECURITY ERROR line:\n%s", r.stdout)
			}
			if w.Tool != "" && !strings.Contains(r.stdout, `"`+w.Tool+`"`) {
				t.Errorf("report does not name tool %q:\n%s", w.Tool, r.stdout)
			}
			jr := runEtdi(t, dir, nil, append(args[:len(args)-1:len(args)-1], "--json", "bundle.etdi.json")...)
			var out struct {
				Verified bool `json:"signatureVerified"`
				ExitCode int  `json:"exitCode"`
				Findings []struct {
					Kind     string `json:"kind"`
					Severity string `json:"severity"`
				} `json:"findings"`
			}
			if err := json.Unmarshal([]byte(jr.stdout), &out); err != nil {
				t.Fatalf("--json output is not JSON: %v\n%s", err, jr.stdout)
			}
			if jr.code != w.ExitCode || out.ExitCode != w.ExitCode || out.Verified != w.Verified {
				t.Fatalf("--json: exit %d, exitCode %d, verified %v; want %d, %v", jr.code, out.ExitCode, out.Verified, w.ExitCode, w.Verified)
			}
			var kinds []string
			for _, f := range out.Findings {
				if f.Severity == "error" {
					kinds = append(kinds, f.Kind)
				}
			}
			if strings.Join(kinds, ",") != strings.Join(w.Kinds, ",") {
				t.Errorf("--json error kinds %v, want %v", kinds, w.Kinds)
			}
		})
	}
}
