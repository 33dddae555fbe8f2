package artifact

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/redact"
)

// FuzzResolveArgv: whatever the command line, Resolve and Moving do not
// panic, Resolve returns a valid artifact or an *UnresolvedError that
// shows no argument that looks like a credential, and the only program
// run is the fake docker, for image inspect.
func FuzzResolveArgv(f *testing.F) {
	f.Add("npx\x00-y\x00@acme/srv@1.2.3")
	f.Add("npx\x00--package=srv\x00--cache\x00c\x00srv")
	f.Add("env\x00-i\x00PATH=/usr/bin\x00npx\x00srv")
	f.Add("uvx\x00--from\x00pkg[x]==1.0\x00pkg")
	f.Add("pipx\x00run\x00--spec\x00p==1\x00p")
	f.Add("uv\x00--directory\x00sub\x00run\x00server.py")
	f.Add("docker\x00run\x00-ie\x00A=" + token + "\x00ghcr.io/acme/weather:1.0")
	f.Add("docker\x00run\x00ghcr.io/acme/weather@sha256:" + hexA)
	f.Add("podman\x00--url\x00x\x00container\x00run\x00--pull=always\x00img")
	f.Add("node\x00-r\x00x\x00srv/index.js")
	f.Add("python3\x00-uW\x00ignore\x00-m\x00mod")
	f.Add("bash\x00-o\x00pipefail\x00run.sh")
	f.Add("env\x00-C\x00srv\x00-u\x00PATH\x00" + token)
	f.Add("java\x00-jar\x00app.jar")
	f.Add("C:\\x\\NPX.CMD\x00srv@^1")
	dir := f.TempDir()
	bin := filepath.Join(dir, "bin")
	fake := filepath.Join(bin, "docker")
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	if runtime.GOOS != "windows" {
		write(fake, fakeDockerScript(filepath.Join(bin, "calls")))
	}
	write(filepath.Join(dir, "srv", "index.js"), "x")
	write(filepath.Join(dir, "run.sh"), "x")
	write(filepath.Join(dir, "package-lock.json"), `{"lockfileVersion":3,"packages":{"node_modules/srv":{"version":"1.0.0","integrity":"`+sri("sha512", "x")+`"}}}`)
	write(filepath.Join(dir, "uv.lock"), uvLockText())
	f.Fuzz(func(t *testing.T, s string) {
		argv := strings.Split(s, "\x00")
		real := runInspect
		defer func() { runInspect = real }()
		runInspect = func(ctx context.Context, prog string, args, env []string) ([]byte, string, error) {
			if n := progName(prog); n != "docker" && n != "podman" && n != "nerdctl" || len(args) < 2 || args[0] != "image" || args[1] != "inspect" {
				t.Fatalf("Resolve(%q) runs %s %q", argv, prog, args)
			}
			if prog != fake {
				return nil, "", errors.New("not the fake docker")
			}
			return real(ctx, prog, args, env)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		r, err := Resolve(ctx, Launch{Argv: argv, Dir: dir, Env: []string{"PATH=" + bin, "HOME=" + dir}})
		switch {
		case err != nil:
			var ue *UnresolvedError
			if r != nil || !errors.As(err, &ue) {
				t.Fatalf("Resolve(%q) = %+v, %v", argv, r, err)
			}
			for _, a := range argv {
				if len(a) >= redact.MinLen && redact.LooksSecret(a) && strings.Contains(err.Error(), a) {
					t.Fatalf("Resolve(%q): %v: shows %q", argv, err, a)
				}
			}
		case r == nil:
			t.Fatalf("Resolve(%q) = nil, nil", argv)
		default:
			if err := etdi.ValidateArtifact(r.Artifact); err != nil {
				t.Fatalf("Resolve(%q) = %+v: %v", argv, r.Artifact, err)
			}
		}
		if moving, msg := Moving(argv); moving != (msg != "") {
			t.Fatalf("Moving(%q) = %v, %q", argv, moving, msg)
		}
	})
}

// FuzzParseINI: whatever an .npmrc or pip.conf holds, parseINI does not
// panic, returns at most maxINIEntries entries of valid UTF-8, and never
// loses a key: every line with an '=' whose text before it, unquoted,
// is a setting name npm knows to change what runs yields an entry with
// that key. npmrcWhy refuses any file that sets script-shell.
func FuzzParseINI(f *testing.F) {
	f.Add("fund=false\naudit=false\n")
	f.Add("script-shell=/x\r\n; c\n# c\n[section]\n")
	f.Add("\"script-shell\"=\"a;b\"\n'node-options'='x'\nca[]=1\n")
	f.Add("\uFEFF  registry = https://x ; comment\n${KEY}=x\n//r/:_authToken=" + token + "\n")
	f.Add("a=b\\;c\\\n\"\\u0073cript-shell\"=1\n=x\n[a]b\n\xff=\xfe")
	dir := f.TempDir()
	rc := filepath.Join(dir, ".npmrc")
	f.Fuzz(func(t *testing.T, s string) {
		entries, ok := parseINI([]byte(s))
		if len(entries) > maxINIEntries || !ok && len(entries) != maxINIEntries {
			t.Fatalf("parseINI: %d entries, ok %v", len(entries), ok)
		}
		for _, e := range entries {
			if !utf8.ValidString(e.key) || !utf8.ValidString(e.value) || !utf8.ValidString(e.section) {
				t.Fatalf("parseINI(%q): invalid UTF-8 in %+v", s, e)
			}
		}
		_ = envReplace(s, &environ{vars: []string{"KEY=script-shell"}})
		// A line "script-shell=..." appended after s, on a line of its
		// own, is always seen.
		if !ok || strings.ContainsAny(s, "\u2028\u2029") {
			return
		}
		if err := os.WriteFile(rc, []byte(s+"\nscript-shell=/x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		why := npmrcWhy(rc, "the project's .npmrc", &environ{vars: []string{"KEY=script-shell"}})
		if why == "" {
			t.Fatalf("npmrcWhy(%q + script-shell) = \"\"", s)
		}
		if len(s) >= redact.MinLen && redact.LooksSecret(s) && strings.Contains(why, s) {
			t.Fatalf("npmrcWhy shows %q", s)
		}
	})
}
