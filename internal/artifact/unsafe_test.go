package artifact

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A launch whose bound artifact would not be all that runs is not
// resolved: a flag or variable that loads other code, a command line an
// interpreter reads differently, another command after --package, an
// image run with another entrypoint. Each of these ran an attacker's code
// beside a genuine artifact; the same launches without the addition do
// resolve.
func TestResolveRefusesAdditions(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "good.js"), "console.log('good')\n", 0o644)
	write(t, filepath.Join(dir, "evil.js"), "console.log('evil')\n", 0o644)
	write(t, filepath.Join(dir, "good.py"), "print('good')\n", 0o644)
	write(t, filepath.Join(dir, "package-lock.json"), npmLockJSON(t, []string{"@acme/weather"},
		map[string][2]string{"@acme/weather": {"1.0.0", sri("sha512", "weather")}}), 0o644)
	env := []string{"PATH=", "HOME=" + dir}
	for _, c := range []struct {
		argv []string
		env  []string
		want string
	}{
		{[]string{"node", "--redirect-warnings", "good.js", "evil.js"}, nil, "--redirect-warnings"},
		{[]string{"node", "-r", "./evil.js", "good.js"}, nil, "loads other code"},
		{[]string{"node", "--import=./evil.js", "good.js"}, nil, "loads other code"},
		{[]string{"node", "good.js"}, []string{"NODE_OPTIONS=--require ./evil.js"}, "NODE_OPTIONS"},
		{[]string{"node", "good.js"}, []string{"NODE_COMPILE_CACHE=" + dir}, "NODE_COMPILE_CACHE"},
		{[]string{"python3", "good.py"}, []string{"PYTHONPYCACHEPREFIX=" + dir}, "PYTHONPYCACHEPREFIX"},
		{[]string{"env", "LD_PRELOAD=/tmp/evil.so", "node", "good.js"}, nil, "LD_PRELOAD"},
		{[]string{"npx", "-y", "-p", "@acme/weather@1.0.0", "/tmp/evil.sh"}, nil, "another command"},
		{[]string{"npx", "--registry=https://evil.example", "@acme/weather@1.0.0"}, nil, "--registry"},
		{[]string{"npx", "--node-options=--require=./evil.js", "@acme/weather@1.0.0"}, nil, "--node-options"},
		{[]string{"uvx", "--with", "evil==6.6.6", "weather==1.0"}, nil, "--with"},
		{[]string{"uvx", "--from", "weather==1.0", "python"}, nil, "another command"},
		{[]string{"docker", "run", "--entrypoint", "/bin/sh", "ghcr.io/acme/weather@sha256:" + strings.Repeat("ab", 32), "-c", "evil"}, nil, "--entrypoint"},
	} {
		_, err := Resolve(context.Background(), Launch{Argv: c.argv, Dir: dir, Env: append(append([]string{}, env...), c.env...)})
		var ue *UnresolvedError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Resolve(%q, %q) = %v, want unresolved naming %q", c.argv, c.env, err, c.want)
		}
	}
	for _, argv := range [][]string{
		{"node", "--enable-source-maps", "--max-old-space-size=512", "good.js"},
		{"npx", "-y", "@acme/weather@1.0.0"},
		{"npx", "-y", "-p", "@acme/weather@1.0.0", "weather"},
		{"docker", "run", "-i", "--rm", "ghcr.io/acme/weather@sha256:" + strings.Repeat("ab", 32)},
	} {
		if _, err := Resolve(context.Background(), Launch{Argv: argv, Dir: dir, Env: env}); err != nil {
			t.Errorf("Resolve(%q): %v", argv, err)
		}
	}
}

// PYTHONPYCACHEPREFIX is not a cache setting but a way in: Python takes
// the bytecode of an imported module from that directory when its header
// names the source's modification time and size, so the server runs
// code its files do not hold. Shown with Python itself, then refused.
func TestPycachePrefixRunsOtherCode(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "server.py"), "import helper\nprint(helper.who())\n", 0o644)
	write(t, filepath.Join(dir, "helper.py"), "def who():\n    return 'genuine'\n", 0o644)
	prefix := filepath.Join(dir, "prefix")
	// The attacker's bytecode for helper.py, under the prefix, with
	// helper.py's own time and size in its header.
	forge := exec.Command(py, "-c", `import importlib.util, marshal, os, struct, sys
src = os.path.abspath("helper.py"); st = os.stat(src)
code = compile("def who():\n    return 'attacker'\n", src, "exec")
sys.pycache_prefix = os.path.abspath("prefix")
out = importlib.util.cache_from_source(src)
os.makedirs(os.path.dirname(out), exist_ok=True)
open(out, "wb").write(importlib.util.MAGIC_NUMBER + struct.pack("<III", 0, int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF) + marshal.dumps(code))`)
	forge.Dir = dir
	if out, err := forge.CombinedOutput(); err != nil {
		t.Fatalf("forging the bytecode: %v\n%s", err, out)
	}
	run := func(env ...string) string {
		cmd := exec.Command(py, "server.py")
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("python3 server.py %q: %v", env, err)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run(); got != "genuine" {
		t.Fatalf("without the variable the server printed %q", got)
	}
	if got := run("PYTHONPYCACHEPREFIX=" + prefix); got != "attacker" {
		t.Fatalf("with the variable the server printed %q: the attack did not reproduce", got)
	}
	launch := Launch{Argv: []string{"python3", "server.py"}, Dir: dir, Env: []string{"PATH=" + filepath.Dir(py), "HOME=" + dir}}
	if _, err := Resolve(context.Background(), launch); err != nil {
		t.Fatalf("the plain launch: %v", err)
	}
	launch.Env = append(launch.Env, "PYTHONPYCACHEPREFIX="+prefix)
	_, err = Resolve(context.Background(), launch)
	var ue *UnresolvedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "PYTHONPYCACHEPREFIX") {
		t.Fatalf("Resolve with PYTHONPYCACHEPREFIX = %v, want unresolved naming it", err)
	}
}
