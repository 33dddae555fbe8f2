package main

import (
	"fmt"
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
//	$ROOT      the repository's root (read-only)
//
// and what the fixtures in scriptSetups add.
//
// and these commands beside testscript's own:
//
//	etdi ARGS...             the etdi the tests build (etdiBin); exit 0 expected (! etdi: not 0)
//	status N COMMAND ARGS... runs COMMAND and expects exit status N
//	mode PERM FILE           FILE has exactly the permission bits PERM (octal)
//	envfile VAR FILE         sets the environment variable VAR to the contents of FILE
//
// and the commands of the fixtures in scriptCmds.
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
			env.Setenv("ROOT", root)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			env.Setenv("VECTORS", filepath.Join(root, "testdata", "vectors"))
			env.Setenv("DEMODATA", filepath.Join(root, "cmd", "etdi", "demodata"))
			env.Setenv("DAMAGED", filepath.Join(root, "cmd", "etdi", "testdata", "damaged"))
			env.Setenv("PASSWORD", testPassword)
			env.Setenv("GORUNTIME", runtime.Version())
			for _, setup := range scriptSetups {
				if err := setup(env); err != nil {
					return err
				}
			}
			return nil
		},
		Condition: scriptCondition,
		Cmds:      scriptCmds,
	})
}

// scriptCmd is a command a script can run beside testscript's own.
type scriptCmd = func(ts *testscript.TestScript, neg bool, args []string)

// scriptCmds are the commands of the scripts. A test file that gives the
// scripts a fixture adds its commands here from an init function, so the
// commands of one subject live beside the Go helpers they use.
var scriptCmds = map[string]scriptCmd{
	"status": cmdStatus,
	"mode":   cmdMode,
	"envfile": func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: envfile VAR file")
		}
		ts.Setenv(args[0], ts.ReadFile(args[1]))
	},
}

// scriptSetups run before each script, after the environment above is
// set; a fixture's file adds to them from an init function.
var scriptSetups []func(env *testscript.Env) error

// scriptConditions are the conditions a script can test with [name]
// beside testscript's own ([linux], [short], [exec:prog], ...). A
// condition whose fixture cannot be installed here is false, and the
// script says so with skip and a reason, never silently.
var scriptConditions = map[string]func() bool{}

func scriptCondition(cond string) (bool, error) {
	if f, ok := scriptConditions[cond]; ok {
		return f(), nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
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
