package artifact

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etdi-dev/etdi"
)

// npmWorld is a project whose package-lock.json and node_modules hold
// weather-mcp 1.0.0, installed by the real npm from a local tarball, with
// a home of its own. The package's program appends "genuine" to $MARK.
type npmWorld struct {
	root, home, proj string
	lockOnly         string // a project with the same lockfile and no node_modules
	integrity        string
	env              []string
}

func newNPMWorld(t *testing.T) *npmWorld {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the shell scripts of this test are POSIX")
	}
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skip("npm is not installed")
	}
	npmTemplate.once.Do(func() {
		npmTemplate.root, npmTemplate.err = os.MkdirTemp("", "etdi-npm-world-")
		if npmTemplate.err == nil {
			npmTemplate.integrity, npmTemplate.err = makeNPMWorld(openWorld(npmTemplate.root))
		}
	})
	if npmTemplate.err != nil {
		t.Fatal(npmTemplate.err)
	}
	w := openWorld(t.TempDir())
	if out, err := exec.Command("cp", "-a", npmTemplate.root+"/.", w.root).CombinedOutput(); err != nil {
		t.Fatalf("copying the npm world: %v\n%s", err, out)
	}
	w.integrity = npmTemplate.integrity
	return w
}

// npmTemplate is the npm world that newNPMWorld copies, made once per test
// binary (npm pack and npm install take seconds each) and removed by
// TestMain.
var npmTemplate struct {
	once      sync.Once
	root      string
	integrity string
	err       error
}

// openWorld is the npm world in root: its folders and environment.
func openWorld(root string) *npmWorld {
	w := &npmWorld{root: root, home: filepath.Join(root, "home"), proj: filepath.Join(root, "proj"), lockOnly: filepath.Join(root, "lockonly")}
	// Offline: npm reaches no registry but the tests' own on 127.0.0.1
	// (the settings are harmless: Resolve reads past them).
	w.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home, "npm_config_offline=true", "npm_config_update_notifier=false",
		"npm_config_audit=false", "npm_config_fund=false"}
	return w
}

// makeNPMWorld packs weather-mcp 1.0.0 and installs it with the real npm
// in w, and returns the integrity its lockfile records.
func makeNPMWorld(w *npmWorld) (string, error) {
	pkg := filepath.Join(w.root, "pkg")
	files := []struct {
		path, content string
		mode          os.FileMode
	}{
		{filepath.Join(pkg, "package.json"), `{"name":"weather-mcp","version":"1.0.0","bin":{"weather-mcp":"index.js"}}`, 0o644},
		{filepath.Join(pkg, "index.js"), "#!/usr/bin/env node\nrequire('fs').appendFileSync(process.env.MARK, 'genuine\\n')\n", 0o755},
		{filepath.Join(w.proj, "package.json"), `{"name":"proj","version":"1.0.0"}`, 0o644},
		{filepath.Join(w.lockOnly, "package.json"), `{"name":"proj","version":"1.0.0"}`, 0o644},
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(f.path, []byte(f.content), f.mode); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(w.home, 0o755); err != nil {
		return "", err
	}
	npm := func(dir string, args ...string) error {
		cmd := exec.Command("npm", args...)
		cmd.Dir, cmd.Env = dir, w.env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := npm(pkg, "pack", "--silent"); err != nil {
		return "", err
	}
	if err := npm(w.proj, "install", "--offline", "--no-audit", "--no-fund", "--silent", filepath.Join(pkg, "weather-mcp-1.0.0.tgz")); err != nil {
		return "", err
	}
	lock, err := os.ReadFile(filepath.Join(w.proj, "package-lock.json"))
	if err != nil {
		return "", err
	}
	var l npmLock
	if err := json.Unmarshal(lock, &l); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(w.lockOnly, "package-lock.json"), lock, 0o644); err != nil {
		return "", err
	}
	return l.Packages["node_modules/weather-mcp"].Integrity, nil
}

// npm runs the real npm in dir.
func (w *npmWorld) npm(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("npm", args...)
	cmd.Dir, cmd.Env = dir, w.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// npx runs the real npx in dir with env and returns what the programs it
// started wrote to $MARK.
func (w *npmWorld) npx(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	mark := filepath.Join(t.TempDir(), "mark")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npx", args...)
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, env...), "MARK="+mark)
	out, _ := cmd.CombinedOutput()
	b, _ := os.ReadFile(mark)
	if len(b) == 0 {
		t.Logf("npx %s wrote nothing to $MARK:\n%s", strings.Join(args, " "), out)
	}
	return string(b)
}

// evil writes a program that appends "evil" to $MARK.
func (w *npmWorld) evil(t *testing.T, path string) string {
	t.Helper()
	write(t, path, "#!/bin/sh\necho evil >> \"$MARK\"\n", 0o755)
	return path
}

// attack asserts that the real npx runs something else than the package
// when launched as l, and that Resolve leaves l unresolved with a reason
// that says each of want.
func (w *npmWorld) attack(t *testing.T, l Launch, want ...string) {
	t.Helper()
	if got := w.npx(t, l.Dir, l.Env, l.Argv[1:]...); !strings.Contains(got, "evil") {
		t.Errorf("npx %q in %s wrote %q: the attack does not work, so the test proves nothing", l.Argv[1:], l.Dir, got)
	}
	r, err := Resolve(context.Background(), l)
	unresolved(t, l.Argv, r, err, want...)
}

// with is w's environment and more.
func (w *npmWorld) with(vars ...string) []string {
	return append(append([]string{}, w.env...), vars...)
}

// The real npm runs another program than the package when its
// configuration says so; Resolve never takes such a launch for the
// package, and says which file or variable sets what.
func TestRealNPMConfigSwapsProgram(t *testing.T) {
	t.Parallel() // each has an npm world of its own: HOME, project, cache
	w := newNPMWorld(t)
	genuine := etdi.Artifact{Type: etdi.ArtifactNPM, Name: "weather-mcp", Version: "1.0.0", Digest: w.integrity}
	rc := filepath.Join(w.proj, ".npmrc")
	shell := w.evil(t, filepath.Join(w.root, "evil.sh"))

	// Nothing set: the package runs, and is resolved.
	for _, argv := range [][]string{{"npx", "--no-install", "weather-mcp"}, {"npx", "--no-install", "weather-mcp@1.0.0"}} {
		if got := w.npx(t, w.proj, w.env, argv[1:]...); got != "genuine\n" {
			t.Fatalf("npx %q wrote %q", argv[1:], got)
		}
		resolved(t, Launch{Argv: argv, Dir: w.proj, Env: w.env}, genuine, "package-lock.json "+w.proj)
	}

	// Harmless settings: the package still runs, still resolved.
	write(t, rc, "fund=false\naudit=false\nloglevel=warn\nprogress=false\nupdate-notifier=false\n", 0o644)
	if got := w.npx(t, w.proj, w.with("npm_config_fund=false"), "--no-install", "weather-mcp@1.0.0"); got != "genuine\n" {
		t.Fatalf("npx with a harmless .npmrc wrote %q", got)
	}
	resolved(t, Launch{Argv: []string{"npx", "--no-install", "weather-mcp@1.0.0"}, Dir: w.proj, Env: w.with("npm_config_fund=false")},
		genuine, "package-lock.json "+w.proj)

	argv := []string{"npx", "--no-install", "weather-mcp@1.0.0"}
	t.Run("project .npmrc script-shell", func(t *testing.T) {
		write(t, rc, "fund=false\nscript-shell="+shell+"\n", 0o644)
		defer os.Remove(rc)
		w.attack(t, Launch{Argv: argv, Dir: w.proj, Env: w.env}, "the project's .npmrc "+rc, "sets script-shell")
	})
	t.Run("project .npmrc quoted key", func(t *testing.T) {
		write(t, rc, "; comment\n  \"script-shell\" = \""+shell+"\"\n", 0o644)
		defer os.Remove(rc)
		w.attack(t, Launch{Argv: argv, Dir: w.proj, Env: w.env}, rc, "sets script-shell")
	})
	t.Run("project .npmrc CR line", func(t *testing.T) {
		write(t, rc, "fund=false\rscript-shell="+shell+"\r", 0o644)
		defer os.Remove(rc)
		w.attack(t, Launch{Argv: argv, Dir: w.proj, Env: w.env}, rc, "sets script-shell")
	})
	for _, name := range []string{"npm_config_script_shell", "NPM_CONFIG_SCRIPT_SHELL", "nPm_CoNfIg_ScRiPt_sHeLl"} {
		t.Run(name, func(t *testing.T) {
			w.attack(t, Launch{Argv: argv, Dir: w.proj, Env: w.with(name + "=" + shell)}, "environment variable "+name, "sets script-shell")
		})
	}
	t.Run("project .npmrc node-options", func(t *testing.T) {
		write(t, filepath.Join(w.proj, "evil.js"), "require('fs').appendFileSync(process.env.MARK, 'evil\\n')\n", 0o644)
		write(t, rc, "node-options=--require ./evil.js\n", 0o644)
		defer os.Remove(rc)
		w.attack(t, Launch{Argv: argv, Dir: w.proj, Env: w.env}, rc, "sets node-options")
	})
	t.Run("npm_config_node_options", func(t *testing.T) {
		write(t, filepath.Join(w.proj, "evil.js"), "require('fs').appendFileSync(process.env.MARK, 'evil\\n')\n", 0o644)
		w.attack(t, Launch{Argv: argv, Dir: w.proj, Env: w.with("NPM_CONFIG_NODE_OPTIONS=--require ./evil.js")}, "NPM_CONFIG_NODE_OPTIONS", "sets node-options")
	})
	t.Run("userconfig", func(t *testing.T) {
		user := filepath.Join(w.root, "user.npmrc")
		write(t, user, "script-shell="+shell+"\n", 0o644)
		w.attack(t, Launch{Argv: argv, Dir: w.proj, Env: w.with("npm_config_userconfig=" + user)}, "npm_config_userconfig", "sets userconfig")
	})
	t.Run("user .npmrc", func(t *testing.T) {
		user := filepath.Join(w.home, ".npmrc")
		write(t, user, "script-shell="+shell+"\n", 0o644)
		defer os.Remove(user)
		w.attack(t, Launch{Argv: argv, Dir: w.proj, Env: w.env}, "the user's .npmrc "+user, "sets script-shell")
	})
	t.Run("globalconfig", func(t *testing.T) {
		global := filepath.Join(w.root, "global.npmrc")
		write(t, global, "script-shell="+shell+"\n", 0o644)
		w.attack(t, Launch{Argv: argv, Dir: w.proj, Env: w.with("NPM_CONFIG_GLOBALCONFIG=" + global)}, "NPM_CONFIG_GLOBALCONFIG", "sets globalconfig")
	})
	t.Run("prefix", func(t *testing.T) {
		prefix := filepath.Join(w.root, "prefix")
		write(t, filepath.Join(prefix, "etc", "npmrc"), "script-shell="+shell+"\n", 0o644)
		w.attack(t, Launch{Argv: argv, Dir: w.proj, Env: w.with("npm_config_prefix=" + prefix)}, "npm_config_prefix", "sets prefix")
		// The global bin directory of that prefix is looked at before the
		// project's packages.
		if err := os.Remove(filepath.Join(prefix, "etc", "npmrc")); err != nil {
			t.Fatal(err)
		}
		w.evil(t, filepath.Join(prefix, "bin", "weather-mcp@1.0.0"))
		w.attack(t, Launch{Argv: argv, Dir: w.proj, Env: w.with("npm_config_prefix=" + prefix)}, "npm_config_prefix", "sets prefix")
	})
	t.Run("cache", func(t *testing.T) {
		reg := w.registry(t, filepath.Join(w.root, "pkg", "weather-mcp-1.0.0.tgz"))
		// A cache holding another weather-mcp 1.0.0 where npx looks for
		// it, for a project whose lockfile records the genuine one but
		// that has not installed it.
		cache := filepath.Join(w.root, "cache")
		sum := sha512.Sum512([]byte("weather-mcp@1.0.0"))
		entry := filepath.Join(cache, "_npx", hex.EncodeToString(sum[:])[:16])
		write(t, filepath.Join(entry, "package.json"), `{"dependencies":{"weather-mcp":"1.0.0"}}`, 0o644)
		write(t, filepath.Join(entry, "node_modules", "weather-mcp", "package.json"), `{"name":"weather-mcp","version":"1.0.0","bin":{"weather-mcp":"index.js"}}`, 0o644)
		write(t, filepath.Join(entry, "node_modules", "weather-mcp", "index.js"), "#!/bin/sh\necho evil >> \"$MARK\"\n", 0o755)
		if err := os.MkdirAll(filepath.Join(entry, "node_modules", ".bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../weather-mcp/index.js", filepath.Join(entry, "node_modules", ".bin", "weather-mcp")); err != nil {
			t.Fatal(err)
		}
		// npx asks a registry for the package's metadata: an honest one on
		// 127.0.0.1, serving the genuine package, stands in for npm's.
		// It is named in the user's .npmrc, which etdi reads after the
		// environment and the project's .npmrc, so that the reason names
		// the cache.
		resolved(t, Launch{Argv: argv, Dir: w.lockOnly, Env: w.env}, genuine, "package-lock.json "+w.lockOnly)
		user := filepath.Join(w.home, ".npmrc")
		write(t, user, "registry="+reg+"\n", 0o644)
		defer os.Remove(user)
		w.attack(t, Launch{Argv: argv, Dir: w.lockOnly, Env: w.with("npm_config_offline=false", "npm_config_cache="+cache)},
			"npm_config_cache", "sets cache")
		lrc := filepath.Join(w.lockOnly, ".npmrc")
		write(t, lrc, "cache="+cache+"\n", 0o644)
		defer os.Remove(lrc)
		w.attack(t, Launch{Argv: argv, Dir: w.lockOnly, Env: w.with("npm_config_offline=false")}, "the project's .npmrc "+lrc, "sets cache")
		os.Remove(user)
		for _, env := range [][]string{w.env, w.with("npm_config_cache=" + cache)} {
			r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: w.lockOnly, Env: env})
			unresolved(t, argv, r, err, "sets cache")
		}
	})
	t.Run("registry", func(t *testing.T) {
		// A registry on 127.0.0.1 that serves another weather-mcp 1.0.0,
		// which npx installs for a project that has not installed it.
		evilPkg := filepath.Join(w.root, "evilpkg")
		write(t, filepath.Join(evilPkg, "package.json"), `{"name":"weather-mcp","version":"1.0.0","bin":{"weather-mcp":"index.js"}}`, 0o644)
		write(t, filepath.Join(evilPkg, "index.js"), "#!/usr/bin/env node\nrequire('fs').appendFileSync(process.env.MARK, 'evil\\n')\n", 0o755)
		w.npm(t, evilPkg, "pack", "--silent")
		reg := w.registry(t, filepath.Join(evilPkg, "weather-mcp-1.0.0.tgz"))
		yes := []string{"npx", "--yes", "weather-mcp@1.0.0"}
		w.attack(t, Launch{Argv: yes, Dir: w.lockOnly, Env: w.with("npm_config_offline=false", "npm_config_registry="+reg)},
			"npm_config_registry", "sets registry")
		if err := os.RemoveAll(filepath.Join(w.home, ".npm", "_npx")); err != nil {
			t.Fatal(err)
		}
		lrc := filepath.Join(w.lockOnly, ".npmrc")
		write(t, lrc, "registry="+reg+"\n", 0o644)
		defer os.Remove(lrc)
		w.attack(t, Launch{Argv: yes, Dir: w.lockOnly, Env: w.with("npm_config_offline=false")}, "the project's .npmrc "+lrc, "sets registry")
		if err := os.RemoveAll(filepath.Join(w.home, ".npm", "_npx")); err != nil {
			t.Fatal(err)
		}
	})
}

// The real npx runs a repository's own files before the package: a bin
// of the project's package.json, a program in node_modules/.bin that is
// not the package's, a node_modules/.bin/sh or node. Resolve says so.
func TestRealNPMRepositoryFilesSwapProgram(t *testing.T) {
	t.Parallel() // each has an npm world of its own: HOME, project, cache
	w := newNPMWorld(t)
	argv := []string{"npx", "--no-install", "weather-mcp"}
	t.Run("package.json bin", func(t *testing.T) {
		pj := filepath.Join(w.proj, "package.json")
		write(t, filepath.Join(w.proj, "evil-bin.js"), "#!/usr/bin/env node\nrequire('fs').appendFileSync(process.env.MARK, 'evil\\n')\n", 0o755)
		write(t, pj, `{"name":"proj","version":"1.0.0","bin":{"weather-mcp":"evil-bin.js"},"dependencies":{"weather-mcp":"file:../pkg/weather-mcp-1.0.0.tgz"}}`, 0o644)
		defer write(t, pj, `{"name":"proj","version":"1.0.0","dependencies":{"weather-mcp":"file:../pkg/weather-mcp-1.0.0.tgz"}}`, 0o644)
		w.attack(t, Launch{Argv: argv, Dir: w.proj, Env: w.env}, pj, "declares a program weather-mcp of the project itself")
	})
	t.Run("node_modules/.bin", func(t *testing.T) {
		link := filepath.Join(w.proj, "node_modules", ".bin", "weather-mcp")
		target, err := os.Readlink(link)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(link); err != nil {
			t.Fatal(err)
		}
		w.evil(t, link)
		defer func() {
			os.Remove(link)
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
		}()
		w.attack(t, Launch{Argv: argv, Dir: w.proj, Env: w.env}, "npx runs "+link+", which is not a program of the package weather-mcp")
		// Named with the version, for npx weather-mcp@1.0.0.
		w.attack(t, Launch{Argv: []string{"npx", "--no-install", "weather-mcp@1.0.0"}, Dir: w.proj, Env: w.env}, link)
	})
	t.Run("node_modules/.bin with the version", func(t *testing.T) {
		f := w.evil(t, filepath.Join(w.proj, "node_modules", ".bin", "weather-mcp@1.0.0"))
		defer os.Remove(f)
		w.attack(t, Launch{Argv: []string{"npx", "--no-install", "weather-mcp@1.0.0"}, Dir: w.proj, Env: w.env}, "npx runs "+f)
	})
	t.Run("node_modules/.bin/sh", func(t *testing.T) {
		f := w.evil(t, filepath.Join(w.proj, "node_modules", ".bin", "sh"))
		defer os.Remove(f)
		w.attack(t, Launch{Argv: argv, Dir: w.proj, Env: w.env}, f, "named sh")
	})
	// The package's program is "#!/usr/bin/env node", and npm puts every
	// node_modules/.bin from the working directory up first on its PATH.
	for _, d := range []string{w.proj, w.root} {
		t.Run("node_modules/.bin/node in "+d, func(t *testing.T) {
			f := w.evil(t, filepath.Join(d, "node_modules", ".bin", "node"))
			defer os.Remove(f)
			w.attack(t, Launch{Argv: argv, Dir: w.proj, Env: w.env}, f, "named node")
		})
	}
	// The untouched project still resolves.
	resolved(t, Launch{Argv: argv, Dir: w.proj, Env: w.env}, etdi.Artifact{Type: etdi.ArtifactNPM, Name: "weather-mcp", Version: "1.0.0", Digest: w.integrity}, "package-lock.json")
}

// registry serves weather-mcp 1.0.0 from the tarball tgz on 127.0.0.1,
// as an npm registry does; its URL, with a final slash.
func (w *npmWorld) registry(t *testing.T, tgzPath string) string {
	t.Helper()
	tgz, err := os.ReadFile(tgzPath)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512(tgz)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/weather-mcp":
			json.NewEncoder(rw).Encode(map[string]any{"name": "weather-mcp", "dist-tags": map[string]string{"latest": "1.0.0"},
				"versions": map[string]any{"1.0.0": map[string]any{"name": "weather-mcp", "version": "1.0.0",
					"bin": map[string]string{"weather-mcp": "index.js"},
					"dist": map[string]string{"tarball": srv.URL + "/weather-mcp/-/weather-mcp-1.0.0.tgz",
						"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum[:])}}}})
		case "/weather-mcp/-/weather-mcp-1.0.0.tgz":
			rw.Write(tgz)
		default:
			http.NotFound(rw, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// npx and npm are "#!/usr/bin/env node" scripts, and npm starts the
// package's program with sh from a PATH that also takes in every
// variable named PATH in another case: a node or sh found first on the
// launch's PATH, or a runner that is not npm's own script, runs instead of
// the package. Resolve says so; npm's own npx and node from the system's
// PATH are resolved.
func TestRealNPMPathSwapsProgram(t *testing.T) {
	t.Parallel() // each has an npm world of its own: HOME, project, cache
	w := newNPMWorld(t)
	argv := []string{"npx", "--no-install", "weather-mcp@1.0.0"}
	sys := os.Getenv("PATH")
	resolved(t, Launch{Argv: argv, Dir: w.proj, Env: w.env}, etdi.Artifact{Type: etdi.ArtifactNPM, Name: "weather-mcp", Version: "1.0.0", Digest: w.integrity}, "package-lock.json")
	evilDir := filepath.Join(w.root, "evilbin")
	rest := w.env[1:] // w.env without its PATH
	for _, prog := range []string{"node", "sh"} {
		t.Run(prog+" first on PATH", func(t *testing.T) {
			defer os.RemoveAll(evilDir)
			f := w.evil(t, filepath.Join(evilDir, prog))
			env := append([]string{"PATH=" + evilDir + string(filepath.ListSeparator) + sys}, rest...)
			w.attack(t, Launch{Argv: argv, Dir: w.proj, Env: env}, "the first "+prog+" on the launch's PATH, "+f)
		})
		t.Run(prog+" in a variable path", func(t *testing.T) {
			defer os.RemoveAll(evilDir)
			w.evil(t, filepath.Join(evilDir, prog))
			env := append([]string{"path=" + evilDir, "PATH=" + sys}, rest...)
			w.attack(t, Launch{Argv: argv, Dir: w.proj, Env: env}, "environment variable path is set")
		})
	}
	t.Run("repository's npx", func(t *testing.T) {
		f := w.evil(t, filepath.Join(w.proj, "bin", "npx"))
		defer os.RemoveAll(filepath.Join(w.proj, "bin"))
		cmd := exec.Command(f, argv[1:]...)
		mark := filepath.Join(t.TempDir(), "mark")
		cmd.Dir, cmd.Env = w.proj, w.with("MARK="+mark)
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(mark); string(b) != "evil\n" {
			t.Fatalf("./bin/npx wrote %q", b)
		}
		for _, a0 := range []string{"./bin/npx", f} {
			l := Launch{Argv: append([]string{a0}, argv[1:]...), Dir: w.proj, Env: w.env}
			r, err := Resolve(context.Background(), l)
			unresolved(t, l.Argv, r, err, "which is not npm's own npx-cli.js")
		}
	})
}

// A proxy that npm trusts to speak for the registry, by a certificate
// authority the configuration adds, serves another weather-mcp 1.0.0 under
// the default registry's name; npx installs and runs it for a project that
// has not installed the package, and again from its cache under a HOME
// the repository holds. Resolve says so.
func TestRealNPMTrustedProxySwapsPackage(t *testing.T) {
	t.Parallel() // each has an npm world of its own: HOME, project, cache
	w := newNPMWorld(t)
	evilPkg := filepath.Join(w.root, "evilpkg")
	write(t, filepath.Join(evilPkg, "package.json"), `{"name":"weather-mcp","version":"1.0.0","bin":{"weather-mcp":"index.js"}}`, 0o644)
	write(t, filepath.Join(evilPkg, "index.js"), "#!/usr/bin/env node\nrequire('fs').appendFileSync(process.env.MARK, 'evil\\n')\n", 0o755)
	w.npm(t, evilPkg, "pack", "--silent")
	tgz, err := os.ReadFile(filepath.Join(evilPkg, "weather-mcp-1.0.0.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512(tgz)
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "proxy CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), DNSNames: []string{"registry.npmjs.org"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		ca, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	tlsConf := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}}}
	registry := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/weather-mcp":
			json.NewEncoder(rw).Encode(map[string]any{"name": "weather-mcp", "dist-tags": map[string]string{"latest": "1.0.0"},
				"versions": map[string]any{"1.0.0": map[string]any{"name": "weather-mcp", "version": "1.0.0",
					"bin": map[string]string{"weather-mcp": "index.js"},
					"dist": map[string]string{"tarball": "https://registry.npmjs.org/weather-mcp/-/weather-mcp-1.0.0.tgz",
						"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum[:])}}}})
		case "/weather-mcp/-/weather-mcp-1.0.0.tgz":
			rw.Write(tgz)
		default:
			http.NotFound(rw, r)
		}
	})
	// Every CONNECT, whatever host it names, reaches the registry above.
	proxy := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(rw, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		conn, _, err := rw.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
		l := &oneConn{c: make(chan net.Conn, 1)}
		l.c <- tls.Server(conn, tlsConf)
		go (&http.Server{Handler: registry}).Serve(l)
	}))
	t.Cleanup(proxy.Close)
	caFile := filepath.Join(w.root, "ca.pem")
	write(t, caFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})), 0o644)
	// A HOME inside the project: npx runs what its cache holds, which
	// the repository wrote (here, by running npx through the proxy once).
	t.Run("HOME inside the project", func(t *testing.T) {
		fake := filepath.Join(w.lockOnly, ".home")
		defer os.RemoveAll(fake)
		setup := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + fake, "npm_config_https_proxy=" + proxy.URL, "npm_config_cafile=" + caFile,
			"npm_config_update_notifier=false"}
		if got := w.npx(t, w.root, setup, "--yes", "weather-mcp@1.0.0"); got != "evil\n" {
			t.Fatalf("npx through the proxy wrote %q", got)
		}
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + fake, "npm_config_offline=true", "npm_config_update_notifier=false"}
		w.attack(t, Launch{Argv: []string{"npx", "--yes", "weather-mcp@1.0.0"}, Dir: w.lockOnly, Env: env}, "HOME "+fake+" is inside")
	})
	rc := filepath.Join(w.lockOnly, ".npmrc")
	yes := []string{"npx", "--yes", "weather-mcp@1.0.0"}
	for _, key := range []string{"cafile=" + caFile, "ca=\"" + strings.ReplaceAll(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})), "\n", `\n`) + "\""} {
		name, _, _ := strings.Cut(key, "=")
		t.Run(name, func(t *testing.T) {
			write(t, rc, "https-proxy="+proxy.URL+"\n"+key+"\n", 0o644)
			defer os.Remove(rc)
			defer os.RemoveAll(filepath.Join(w.home, ".npm"))
			w.attack(t, Launch{Argv: yes, Dir: w.lockOnly, Env: w.with("npm_config_offline=false")}, "the project's .npmrc "+rc, "sets "+name)
		})
	}
	// The system's own trust store is harmless.
	write(t, rc, "https-proxy="+proxy.URL+"\ncafile=/etc/ssl/certs/ca-certificates.crt\n", 0o644)
	defer os.Remove(rc)
	resolved(t, Launch{Argv: yes, Dir: w.lockOnly, Env: w.env}, etdi.Artifact{Type: etdi.ArtifactNPM, Name: "weather-mcp", Version: "1.0.0", Digest: w.integrity}, "package-lock.json")
}

// oneConn is a listener that accepts one connection.
type oneConn struct{ c chan net.Conn }

func (l *oneConn) Accept() (net.Conn, error) {
	if c, ok := <-l.c; ok {
		close(l.c)
		return c, nil
	}
	return nil, net.ErrClosed
}
func (l *oneConn) Close() error   { return nil }
func (l *oneConn) Addr() net.Addr { return &net.TCPAddr{} }
