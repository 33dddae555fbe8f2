package artifact

import (
	"context"
	"errors"
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
