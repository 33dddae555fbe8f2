package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/etdi-dev/etdi/internal/testbuild"
	"github.com/rogpeppe/go-internal/testscript"
)

var etdiBin string

// TestMain builds etdi once for the Go tests that run it as a separate
// program (etdiBin), and registers the commands of the scripts in
// testdata/script (see TestScripts): etdi, which is etdiBin (see
// scriptsRunBuiltEtdi), and etdi-v9.8.7, this test binary.
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
	// Most of what the tests and scripts wait for is other processes (a
	// server starting, a session's answers), not this one's CPU: unless
	// -parallel is given, run more of them at once than GOMAXPROCS.
	flag.Parse()
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["test.parallel"] {
		flag.Set("test.parallel", strconv.Itoa(max(6, runtime.GOMAXPROCS(0))))
	}
	// Under go test -cover, the programs the tests start (etdi built
	// below, the scripts' etdi, which is this binary) write what they
	// cover where this binary does: GOCOVERDIR, which they read, names
	// the directory of -test.gocoverdir.
	if d := flag.Lookup("test.gocoverdir"); d != nil && d.Value.String() != "" {
		os.Setenv("GOCOVERDIR", d.Value.String())
	}
	dir, err := os.MkdirTemp("", "etdi-cli-test-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	defer runAfterTests()
	testTmp = dir
	etdiBin = filepath.Join(buildCache(dir), "etdi")
	build := []string{"build", "-o", etdiBin}
	if testing.CoverMode() != "" && os.Getenv("GOCOVERDIR") != "" {
		// The etdi the Go tests run records what it covers too (testEnv
		// passes GOCOVERDIR on to it).
		build = append(build, "-cover", "-covermode="+testing.CoverMode(), "-coverpkg=github.com/etdi-dev/etdi/...")
	}
	out, err := exec.Command("go", append(build, ".")...).CombinedOutput()
	if err != nil {
		panic("building etdi: " + err.Error() + "\n" + string(out))
	}
	if err := scriptsRunBuiltEtdi(); err != nil {
		panic(err)
	}
	return b.m.Run()
}

// testTmp is a folder for what the tests make once for the whole
// package; it is removed after the tests.
var testTmp string

// buildCache is where these tests keep what they build between runs
// (testbuild.Dir).
func buildCache(tmp string) string { return testbuild.Dir("../..", "cmd-etdi", tmp) }

// scriptsRunBuiltEtdi makes the etdi that the scripts run the one the Go
// tests run. testscript.Main put a copy of this test binary named etdi in
// a folder on PATH; it is replaced by etdiBin, which starts in half the
// CPU time (it initialises none of the tests' own packages) and is run
// over a thousand times by the scripts. Under go test -cover both record
// their coverage alike (etdiBin is built with -cover then). The copy named
// etdi-v9.8.7 stays this test binary: it sets the version first.
func scriptsRunBuiltEtdi() error {
	copied, err := exec.LookPath("etdi")
	if err != nil {
		return err
	}
	if release, err := exec.LookPath("etdi-v9.8.7"); err != nil || filepath.Dir(release) != filepath.Dir(copied) {
		return fmt.Errorf("the scripts' etdi %s is not in testscript.Main's folder of commands", copied)
	}
	b, err := os.ReadFile(etdiBin)
	if err != nil {
		return err
	}
	tmp := copied + ".new"
	if err := os.WriteFile(tmp, b, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, copied)
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
