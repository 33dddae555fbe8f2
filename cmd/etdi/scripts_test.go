package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs the scripts in testdata/script: one behaviour of the
// etdi command each, written as the commands a person types, the exit
// codes and the output they see, and the files left behind.
//
// Each script starts in an empty $WORK that is also $HOME, with
//
//	$VECTORS   testdata/vectors of the repository (read-only)
//	$DEMODATA  cmd/etdi/demodata (read-only)
//	$DAMAGED   cmd/etdi/testdata/damaged (read-only)
//	$PASSWORD  a key password, not set as ETDI_PASSWORD unless a script sets it
//	$GORUNTIME the Go version etdi is built with (runtime.Version)
//
// and these commands beside testscript's own:
//
//	etdi ARGS...             etdi, built into the test binary; exit 0 expected (! etdi: not 0)
//	status N COMMAND ARGS... runs COMMAND and expects exit status N
//	mode PERM FILE           FILE has exactly the permission bits PERM (octal)
//	envfile VAR FILE         sets the environment variable VAR to the contents of FILE
func TestScripts(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireUniqueNames:  true,
		RequireExplicitExec: false,
		Setup: func(env *testscript.Env) error {
			env.Setenv("HOME", env.WorkDir)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			env.Setenv("VECTORS", filepath.Join(root, "testdata", "vectors"))
			env.Setenv("DEMODATA", filepath.Join(root, "cmd", "etdi", "demodata"))
			env.Setenv("DAMAGED", filepath.Join(root, "cmd", "etdi", "testdata", "damaged"))
			env.Setenv("PASSWORD", testPassword)
			env.Setenv("GORUNTIME", runtime.Version())
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"status": cmdStatus,
			"mode":   cmdMode,
			"envfile": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 2 {
					ts.Fatalf("usage: envfile VAR file")
				}
				ts.Setenv(args[0], ts.ReadFile(args[1]))
			},
		},
	})
}

// cmdStatus runs a command and checks its exit status. Like every run of
// etdi in these tests, its output must never carry the key password.
func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! status")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: status N command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("status %q: not a number", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if ee, ok := err.(*exec.ExitError); ok {
		got = ee.ExitCode()
	} else if err != nil {
		ts.Fatalf("%s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
	if out := ts.ReadFile("stdout") + ts.ReadFile("stderr"); strings.Contains(out, testPassword) {
		ts.Fatalf("%s printed the key password", args[1])
	}
}

// cmdMode checks a file's permission bits.
func cmdMode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: mode PERM file")
	}
	want, err := strconv.ParseUint(args[0], 8, 32)
	if err != nil {
		ts.Fatalf("mode %q: not octal", args[0])
	}
	fi, err := os.Stat(ts.MkAbs(args[1]))
	ts.Check(err)
	if got := fi.Mode().Perm(); (got == os.FileMode(want)) == neg {
		ts.Fatalf("%s has mode %s, want %s%s", args[1], got, map[bool]string{true: "not "}[neg], os.FileMode(want))
	}
}
