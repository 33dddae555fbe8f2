package artifact

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
)

// Decisions whose refusal a looser rule downstream would also refuse,
// with another reason: each is held to its own reason, so that removing
// it is noticed.
func TestResolveOwnReasons(t *testing.T) {
	home := t.TempDir()
	env := []string{"PATH=", "HOME=" + home}
	i := sri("sha512", "x")
	for _, tc := range []struct {
		name  string
		files map[string]string
		argv  []string
		want  string
	}{
		// Installed but not recorded, while the npx cache holds a copy:
		// npx runs the installed one.
		{"unrecorded", map[string]string{"package-lock.json": `{"lockfileVersion":3,"packages":{}}`, "node_modules/srv/package.json": `{}`,
			"home/.npm/_npx/a1/package-lock.json": npmLockJSON(t, []string{"srv"}, map[string][2]string{"srv": {"1.0.0", i}})},
			[]string{"npx", "srv"}, "is installed in"},
		{"no version", map[string]string{"package-lock.json": `{"lockfileVersion":3,"packages":{"node_modules/srv":{"integrity":"` + i + `"}}}`},
			[]string{"npx", "srv"}, "records no version"},
		{"short integrity", map[string]string{"package-lock.json": `{"lockfileVersion":3,"packages":{"node_modules/srv":{"version":"1.0.0","integrity":"sha512-AAAA"}}}`},
			[]string{"npx", "srv"}, "no sha256, sha384 or sha512 integrity"},
		{"npx integrities", map[string]string{
			"home/.npm/_npx/a1/package-lock.json": npmLockJSON(t, []string{"srv"}, map[string][2]string{"srv": {"1.0.0", i}}),
			"home/.npm/_npx/b2/package-lock.json": npmLockJSON(t, []string{"srv"}, map[string][2]string{"srv": {"1.0.0", sri("sha512", "y")}})},
			[]string{"npx", "srv@1.0.0"}, "different integrities"},
		{"-c", nil, []string{"npx", "-p", "srv@1.0.0", "-c", "evil"}, "-c runs a shell command"},
		{"local spec", nil, []string{"npx", "./srv"}, "local path or file spec"},
		{"env -S", nil, []string{"env", "-S", "node x.js"}, "splits a string"},
	} {
		dir, outside := t.TempDir(), t.TempDir() // a HOME inside the project is refused
		e := []string{"PATH=", "HOME=" + filepath.Join(outside, "home")}
		for name, content := range tc.files {
			base := dir
			if strings.HasPrefix(name, "home/") {
				base = outside
			}
			write(t, filepath.Join(base, filepath.FromSlash(name)), content, 0o644)
		}
		r, err := Resolve(context.Background(), Launch{Argv: tc.argv, Dir: dir, Env: e})
		unresolved(t, tc.argv, r, err, tc.want)
	}

	// npm's project is the nearest directory with package.json or
	// node_modules: a lockfile alone in a subdirectory is not it.
	proj := t.TempDir()
	write(t, filepath.Join(proj, "package.json"), `{"name":"p"}`, 0o644)
	write(t, filepath.Join(proj, "package-lock.json"), npmLockJSON(t, nil, map[string][2]string{"srv": {"1.0.0", i}}), 0o644)
	write(t, filepath.Join(proj, "sub", "package-lock.json"), npmLockJSON(t, nil, map[string][2]string{"srv": {"9.9.9", sri("sha512", "other")}}), 0o644)
	resolved(t, Launch{Argv: []string{"npx", "srv"}, Dir: filepath.Join(proj, "sub"), Env: env}, etdi.Artifact{Type: etdi.ArtifactNPM, Name: "srv", Version: "1.0.0", Digest: i}, "package-lock.json "+proj)

	// A directory joined from the command line into a message is
	// concealed when it looks like a credential.
	argv := []string{"env", "-C", token, "node", "x.js"}
	r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: home, Env: env})
	unresolved(t, argv, r, err, "no file x.js")
	if err != nil && strings.Contains(err.Error(), token) {
		t.Errorf("the message shows the credential: %v", err)
	}
}

// A configuration file that cannot be read (here a directory) is not
// read past.
func TestConfigUnreadable(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	write(t, filepath.Join(dir, "uv.lock"), uvLockText(), 0o644)
	env := []string{"PATH=", "HOME=" + home, "XDG_CONFIG_DIRS=" + filepath.Join(dir, "xdg")}
	img := "ghcr.io/acme/weather@sha256:" + hexA
	for _, tc := range []struct {
		path string
		argv []string
	}{
		{filepath.Join(home, ".config", "uv", "uv.toml"), []string{"uvx", "mcp-server-fetch==0.6.2"}},
		{filepath.Join(home, ".pip", "pip.conf"), []string{"pipx", "run", "mcp-server-fetch==0.6.2"}},
		{filepath.Join(home, ".docker", "config.json"), []string{"docker", "run", img}},
	} {
		if err := os.MkdirAll(tc.path, 0o755); err != nil {
			t.Fatal(err)
		}
		r, err := Resolve(context.Background(), Launch{Argv: tc.argv, Dir: dir, Env: env})
		unresolved(t, tc.argv, r, err, "cannot read", tc.path)
		if err := os.Remove(tc.path); err != nil {
			t.Fatal(err)
		}
		if _, err := Resolve(context.Background(), Launch{Argv: tc.argv, Dir: dir, Env: env}); err != nil {
			t.Errorf("Resolve(%q) without %s: %v", tc.argv, tc.path, err)
		}
	}
}

// Files whose size the system reports otherwise than their content (as
// a file being rewritten would): a digest is not taken of what changed
// while it was read, and a bounded read stops at its bound whatever the
// size said.
func TestReadSizeMismatch(t *testing.T) {
	sysfs := "/sys/kernel/uevent_seqnum" // stat says 4096 bytes; a few are read
	if fi, err := os.Stat(sysfs); err != nil || !fi.Mode().IsRegular() || fi.Size() != 4096 {
		t.Skip("no sysfs file of a stated size")
	}
	if d, err := FileDigest(sysfs); err == nil || !strings.Contains(err.Error(), "changed while it was read") {
		t.Errorf("FileDigest(%s) = %q, %v", sysfs, d, err)
	}
	procfs := "/proc/kallsyms" // stat says 0 bytes; megabytes are read
	if b, err := os.ReadFile(procfs); err != nil || len(b) <= maxSmall {
		t.Skip("no procfs file larger than the bound")
	}
	if b, err := readBounded(procfs, maxSmall); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("readBounded(%s) = %d bytes, %v", procfs, len(b), err)
	}
}

// openRegular refuses a file larger than its bound before reading it.
func TestOpenRegularBound(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f")
	write(t, f, "0123456789", 0o644)
	if g, _, err := openRegular(f, 9); err == nil || !strings.Contains(err.Error(), "larger than 9 bytes") {
		if g != nil {
			g.Close()
		}
		t.Errorf("openRegular(10 bytes, 9) = %v", err)
	}
	g, n, err := openRegular(f, 10)
	if err != nil || n != 10 {
		t.Fatalf("openRegular(10 bytes, 10) = %d, %v", n, err)
	}
	g.Close()
}
