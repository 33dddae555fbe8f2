package artifact

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi"
)

// write creates a file and its directories.
func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// sri is the integrity string of data.
func sri(alg, data string) string {
	var sum []byte
	switch alg {
	case "sha512":
		s := sha512.Sum512([]byte(data))
		sum = s[:]
	case "sha384":
		s := sha512.Sum384([]byte(data))
		sum = s[:]
	default:
		s := sha256.Sum256([]byte(data))
		sum = s[:]
	}
	return alg + "-" + base64.StdEncoding.EncodeToString(sum)
}

// sha is "sha256:<hex>" of data.
func sha(data string) string {
	s := sha256.Sum256([]byte(data))
	return "sha256:" + hex.EncodeToString(s[:])
}

// npmLockJSON is a package-lock.json (version 3) whose root depends on
// deps and that holds pkgs (name → version, integrity).
func npmLockJSON(t *testing.T, deps []string, pkgs map[string][2]string) string {
	t.Helper()
	rootDeps := map[string]string{}
	for _, d := range deps {
		rootDeps[d] = "*"
	}
	packages := map[string]any{"": map[string]any{"name": "p", "dependencies": rootDeps}}
	for name, vi := range pkgs {
		e := map[string]any{"version": vi[0], "resolved": "https://registry.npmjs.org/" + name + "/-/x.tgz", "license": "MIT"}
		if vi[1] != "" {
			e["integrity"] = vi[1]
		}
		packages["node_modules/"+name] = e
	}
	b, err := json.MarshalIndent(map[string]any{"name": "p", "lockfileVersion": 3, "requires": true, "packages": packages}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// unresolved asserts err is an *UnresolvedError whose message holds each
// of want.
func unresolved(t *testing.T, argv []string, r *Resolved, err error, want ...string) {
	t.Helper()
	var ue *UnresolvedError
	if !errors.As(err, &ue) {
		t.Errorf("Resolve(%q) = %+v, %v; want an *UnresolvedError", argv, r, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Resolve(%q): %v\nwant it to say %q", argv, err, w)
		}
	}
}

func resolved(t *testing.T, l Launch, want etdi.Artifact, from string) *Resolved {
	t.Helper()
	r, err := Resolve(context.Background(), l)
	if err != nil {
		t.Errorf("Resolve(%q) in %s: %v", l.Argv, l.Dir, err)
		return nil
	}
	if r.Artifact != want {
		t.Errorf("Resolve(%q) = %+v, want %+v", l.Argv, r.Artifact, want)
	}
	if !strings.Contains(r.From, from) {
		t.Errorf("Resolve(%q) from %q, want it to say %q", l.Argv, r.From, from)
	}
	if err := etdi.ValidateArtifact(r.Artifact); err != nil {
		t.Errorf("Resolve(%q) = %+v: %v", l.Argv, r.Artifact, err)
	}
	return r
}

func TestResolveNPM(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	cache := filepath.Join(home, ".npm")
	proj := filepath.Join(root, "proj")
	i123, i200, i210 := sri("sha512", "weather 1.2.3"), sri("sha512", "weather 2.0.0"), sri("sha512", "weather 2.1.0")
	iScoped := sri("sha512", "scoped")
	write(t, filepath.Join(proj, "package.json"), `{"name":"p"}`, 0o644)
	write(t, filepath.Join(proj, "package-lock.json"), npmLockJSON(t, []string{"weather-mcp"}, map[string][2]string{
		"weather-mcp": {"1.2.3", i123 + " sha1-AAAAAAAAAAAAAAAAAAAAAAAAAAA="},
		"@acme/srv":   {"3.0.0", iScoped},
		"git-dep":     {"1.0.0", ""},
	}), 0o644)
	if err := os.MkdirAll(filepath.Join(proj, "sub", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Two npx cache entries hold different versions; a third holds
	// weather-mcp only as a dependency of another package.
	write(t, filepath.Join(cache, "_npx", "aaaa1111aaaa1111", "package-lock.json"),
		npmLockJSON(t, []string{"weather-mcp"}, map[string][2]string{"weather-mcp": {"2.0.0", i200}}), 0o644)
	write(t, filepath.Join(cache, "_npx", "bbbb2222bbbb2222", "package-lock.json"),
		npmLockJSON(t, []string{"weather-mcp"}, map[string][2]string{"weather-mcp": {"2.1.0", i210}}), 0o644)
	write(t, filepath.Join(cache, "_npx", "cccc3333cccc3333", "package-lock.json"),
		npmLockJSON(t, []string{"other"}, map[string][2]string{"other": {"1.0.0", iScoped}, "weather-mcp": {"9.9.9", iScoped}}), 0o644)
	write(t, filepath.Join(cache, "_npx", "dddd4444dddd4444", "package-lock.json"),
		npmLockJSON(t, []string{"solo"}, map[string][2]string{"solo": {"0.1.0", sri("sha384", "solo")}}), 0o644)
	write(t, filepath.Join(cache, "_npx", "eeee5555eeee5555", "package-lock.json"), `{"packages": [`, 0o644)
	env := []string{"PATH=", "HOME=" + home}
	elsewhere := t.TempDir()

	// The project's lockfile, from the project or below it.
	for _, dir := range []string{proj, filepath.Join(proj, "sub", "deeper")} {
		r := resolved(t, Launch{Argv: []string{"npx", "-y", "weather-mcp"}, Dir: dir, Env: env},
			etdi.Artifact{Type: etdi.ArtifactNPM, Name: "weather-mcp", Version: "1.2.3", Digest: i123}, "package-lock.json "+proj)
		if r != nil && (len(r.Digests) != 1 || r.Digests[0] != i123) {
			t.Errorf("Digests = %q: the sha1 hash is kept", r.Digests)
		}
	}
	resolved(t, Launch{Argv: []string{"npx", "--yes", "weather-mcp@1.2.3", "--port", "1"}, Dir: proj, Env: env},
		etdi.Artifact{Type: etdi.ArtifactNPM, Name: "weather-mcp", Version: "1.2.3", Digest: i123}, "package-lock.json")
	resolved(t, Launch{Argv: []string{"npm", "exec", "--package=npm:@acme/srv@3.0.0", "--", "srv"}, Dir: proj, Env: env},
		etdi.Artifact{Type: etdi.ArtifactNPM, Name: "@acme/srv", Version: "3.0.0", Digest: iScoped}, "package-lock.json")
	resolved(t, Launch{Argv: []string{"bunx", "@acme/srv"}, Dir: proj, Env: env},
		etdi.Artifact{Type: etdi.ArtifactNPM, Name: "@acme/srv", Version: "3.0.0", Digest: iScoped}, "package-lock.json")
	// Another exact version than the lockfile's: the npx cache.
	resolved(t, Launch{Argv: []string{"npx", "-y", "weather-mcp@2.0.0"}, Dir: proj, Env: env},
		etdi.Artifact{Type: etdi.ArtifactNPM, Name: "weather-mcp", Version: "2.0.0", Digest: i200}, "npx cache "+filepath.Join(cache, "_npx", "aaaa1111aaaa1111"))
	resolved(t, Launch{Argv: []string{"npx", "weather-mcp@2.1.0"}, Dir: elsewhere, Env: env},
		etdi.Artifact{Type: etdi.ArtifactNPM, Name: "weather-mcp", Version: "2.1.0", Digest: i210}, "bbbb2222bbbb2222")
	// Without a version, two cached versions: npx would ask the registry.
	argv := []string{"npx", "-y", "weather-mcp"}
	r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: elsewhere, Env: env})
	unresolved(t, argv, r, err, "2.0.0, 2.1.0", "latest", "weather-mcp@<version>")
	// One cached version: that one. A dependency of another entry is not
	// what npx runs.
	resolved(t, Launch{Argv: []string{"npx", "solo"}, Dir: elsewhere, Env: env},
		etdi.Artifact{Type: etdi.ArtifactNPM, Name: "solo", Version: "0.1.0", Digest: sri("sha384", "solo")}, "dddd4444dddd4444")
	for _, tc := range []struct {
		argv []string
		dir  string
		want []string
	}{
		{[]string{"npx", "weather-mcp@9.9.9"}, elsewhere, []string{"npx would download weather-mcp@9.9.9: the project has no package-lock.json, and the npx cache", "does not hold it"}},
		{[]string{"npx", "weather-mcp@^2"}, elsewhere, []string{"range or tag", "weather-mcp@<version>"}},
		{[]string{"npx", "weather-mcp@latest"}, proj, []string{"range or tag"}},
		{[]string{"npx", "git-dep"}, proj, []string{"records no integrity", "git-dep 1.0.0"}},
		{[]string{"npx", "-y", "https://example.com/x.tgz"}, proj, []string{"git or URL spec"}},
		{[]string{"bunx", "weather-mcp@2.0.0"}, proj, []string{"bunx installs weather-mcp from its own cache, which is not read (" + filepath.Join(proj, "package-lock.json") + " records version 1.2.3)"}},
		{[]string{"npx", "weather-mcp@3.0.0"}, proj, []string{"package-lock.json records version 1.2.3, and the npx cache"}},
		{[]string{"pnpm", "dlx", "weather-mcp@1.2.3"}, proj, []string{"pnpm dlx installs the package from the registry"}},
	} {
		r, err := Resolve(context.Background(), Launch{Argv: tc.argv, Dir: tc.dir, Env: env})
		unresolved(t, tc.argv, r, err, tc.want...)
	}

	// The user's .npmrc: harmless settings and credentials are read past;
	// another registry is not.
	write(t, filepath.Join(home, ".npmrc"), "fund=false\nregistry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken="+token+"\n", 0o600)
	resolved(t, Launch{Argv: []string{"npx", "solo"}, Dir: elsewhere, Env: []string{"HOME=" + home}},
		etdi.Artifact{Type: etdi.ArtifactNPM, Name: "solo", Version: "0.1.0", Digest: sri("sha384", "solo")}, "npx cache "+cache)
	write(t, filepath.Join(home, ".npmrc"), "fund=false\n; registry=https://nowhere\nregistry = https://r.example\n//r.example/:_authToken="+token+"\n", 0o600)
	argv = []string{"npx", "solo"}
	r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: elsewhere, Env: []string{"HOME=" + home}})
	unresolved(t, argv, r, err, "the user's .npmrc "+filepath.Join(home, ".npmrc")+" sets registry")
	if err != nil && strings.Contains(err.Error(), token) {
		t.Errorf("the message shows the token: %v", err)
	}
	if err := os.Remove(filepath.Join(home, ".npmrc")); err != nil {
		t.Fatal(err)
	}
	// A cache other than the default one: npx would run what it holds.
	for _, l := range []struct {
		argv, env []string
		want      string
	}{
		{[]string{"npx", "solo"}, []string{"HOME=" + home, "npm_config_cache=" + cache}, "npm_config_cache sets cache"},
		{[]string{"npx", "solo"}, []string{"HOME=" + home, "NPM_CONFIG_CACHE=" + cache}, "NPM_CONFIG_CACHE sets cache"},
		{[]string{"npx", "--cache", cache, "solo"}, []string{"HOME=" + home}, "npx option --cache"},
		{[]string{"npx", "solo"}, []string{"HOME=" + home, "npm_config_userconfig=" + filepath.Join(home, "rc")}, "npm_config_userconfig sets userconfig"},
	} {
		r, err := Resolve(context.Background(), Launch{Argv: l.argv, Dir: elsewhere, Env: l.env})
		unresolved(t, l.argv, r, err, l.want)
	}
	// Without HOME, npm reads the home the system records for the user:
	// whatever it holds, never this test's cache.
	argv = []string{"npx", "solo"}
	r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: elsewhere, Env: []string{"PATH="}})
	if err == nil && strings.Contains(r.From, cache) {
		t.Errorf("Resolve(%q) without HOME = %+v", argv, r)
	}
	// env -u drops the variable for the program it runs.
	argv = []string{"env", "-u", "npm_config_cache", "npx", "solo"}
	r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: elsewhere, Env: []string{"HOME=" + home, "npm_config_cache=" + elsewhere}})
	if err != nil || !strings.Contains(r.From, filepath.Join(home, ".npm")) {
		t.Errorf("Resolve(%q) = %+v, %v; want the default cache", argv, r, err)
	}
}

// Lockfile shapes that are not resolved, and version 1.
func TestResolveNPMLockShapes(t *testing.T) {
	env := []string{"PATH=", "HOME=" + t.TempDir()}
	i := sri("sha512", "x")
	v1 := t.TempDir()
	write(t, filepath.Join(v1, "package-lock.json"), `{"lockfileVersion": 1, "dependencies": {"old-srv": {"version": "0.3.0", "integrity": "`+i+`",
		"dependencies": {"nested": {"version": "1.0.0"}}}}}`, 0o644)
	resolved(t, Launch{Argv: []string{"npx", "old-srv"}, Dir: v1, Env: env}, etdi.Artifact{Type: etdi.ArtifactNPM, Name: "old-srv", Version: "0.3.0", Digest: i}, "package-lock.json")

	shrink := t.TempDir()
	write(t, filepath.Join(shrink, "package-lock.json"), npmLockJSON(t, nil, map[string][2]string{"srv": {"1.0.0", sri("sha512", "lock")}}), 0o644)
	write(t, filepath.Join(shrink, "npm-shrinkwrap.json"), npmLockJSON(t, nil, map[string][2]string{"srv": {"1.0.1", i}}), 0o644)
	resolved(t, Launch{Argv: []string{"npx", "srv"}, Dir: shrink, Env: env}, etdi.Artifact{Type: etdi.ArtifactNPM, Name: "srv", Version: "1.0.1", Digest: i}, "npm-shrinkwrap.json "+shrink)

	alias := t.TempDir()
	write(t, filepath.Join(alias, "package-lock.json"), `{"lockfileVersion": 3, "packages": {"node_modules/short": {"name": "@acme/long-name", "version": "2.0.0", "integrity": "`+i+`"}}}`, 0o644)
	resolved(t, Launch{Argv: []string{"npx", "short"}, Dir: alias, Env: env}, etdi.Artifact{Type: etdi.ArtifactNPM, Name: "@acme/long-name", Version: "2.0.0", Digest: i}, "package-lock.json")

	for _, tc := range []struct {
		files map[string]string
		want  string
	}{
		{map[string]string{"package.json": `{}`, "node_modules/srv/package.json": `{"name":"srv"}`}, "without a lockfile"},
		{map[string]string{"package-lock.json": `{"lockfileVersion":3,"packages":{}}`, "node_modules/srv/package.json": `{}`}, "does not record it"},
		{map[string]string{"package-lock.json": `{"lockfileVersion":3,"packages":{"node_modules/srv":{"resolved":"packages/srv","link":true}}}`}, "links srv"},
		{map[string]string{"package-lock.json": `{"lockfileVersion":3,"packages":{"node_modules/srv":{"version":"1.0.0","integrity":"sha1-AAAAAAAAAAAAAAAAAAAAAAAAAAA="}}}`}, "no sha256, sha384 or sha512 integrity"},
		{map[string]string{"package-lock.json": `{"lockfileVersion":3,"packages":{"node_modules/srv":{"version":5}}}`}, "cannot read"},
		{map[string]string{"package-lock.json": `[`}, "cannot read"},
		{map[string]string{"package-lock.json": `{"lockfileVersion":3,"packages":{"node_modules/srv":{"version":"1.0.0 evil","integrity":"` + i + `"}}}`}, "gives an artifact no bundle can name"},
	} {
		dir := t.TempDir()
		for name, content := range tc.files {
			write(t, filepath.Join(dir, filepath.FromSlash(name)), content, 0o644)
		}
		argv := []string{"npx", "srv"}
		r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: dir, Env: env})
		unresolved(t, argv, r, err, tc.want)
	}
}

// The lockfile of the end-to-end test servers, read independently.
func TestResolveNPMRealLock(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "mcp")
	b, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Packages map[string]struct {
			Version   string `json:"version"`
			Integrity string `json:"integrity"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		t.Fatal(err)
	}
	const name = "@modelcontextprotocol/server-everything"
	e := lock.Packages["node_modules/"+name]
	if e.Integrity == "" {
		t.Fatalf("%s has no integrity for %s", dir, name)
	}
	abs, _ := filepath.Abs(dir)
	env := []string{"PATH=", "HOME=" + t.TempDir()}
	resolved(t, Launch{Argv: []string{"npx", name}, Dir: dir, Env: env}, etdi.Artifact{Type: etdi.ArtifactNPM, Name: name, Version: e.Version, Digest: e.Integrity}, "package-lock.json "+abs)
	resolved(t, Launch{Argv: []string{"npx", "-y", name + "@" + e.Version, "stdio"}, Dir: dir, Env: env}, etdi.Artifact{Type: etdi.ArtifactNPM, Name: name, Version: e.Version, Digest: e.Integrity}, "package-lock.json")
}

const uvLock = `version = 1
revision = 2
requires-python = ">=3.10"

[options]
exclude-newer = 2025-01-01T00:00:00Z # a date, bare

[manifest]
notes = """
[[package]]
name = "not-a-package"
"""

[[package]]
name = "mcp-server-fetch"
version = "0.6.2"
source = { registry = "https://pypi.org/simple" }
dependencies = [
    { name = "httpx" },
    { name = "markdownify", marker = "python_full_version < '3.11'" },
]
sdist = { url = "https://files.pythonhosted.org/x/mcp_server_fetch-0.6.2.tar.gz", hash = "SDIST", size = 1234, upload-time = "2025-01-01T00:00:00.000Z" }
wheels = [
    { url = "https://files.pythonhosted.org/x/mcp_server_fetch-0.6.2-py3-none-any.whl", hash = "WHEEL1", size = 99, upload-time = "2025-01-01T00:00:00.000Z" },
    { url = "https://files.pythonhosted.org/x/mcp_server_fetch-0.6.2-cp312-win_amd64.whl", hash = "WHEEL2", size = 98 },
]

[package.metadata]
requires-dist = [{ name = "httpx", specifier = ">=0.27" }, { name = 'literal', specifier = '\d' }]
name = "not-the-package-name"

[[package]]
name = "Wheel_Only"
version = "1.0.0"
source = { registry = "https://pypi.org/simple" }
wheels = [{ url = "https://x/w1.whl", hash = "WHEEL3" }, { url = "https://x/w2.whl", hash = "WHEEL1" }]

[[package]]
name = "local-srv"
version = "0.1.0"
source = { editable = "." }

[[package]]
name = "twice"
version = "1.0"
sdist = { hash = "SDIST" }

[[package]]
name = "twice"
version = "1.0.0"
source = { git = "https://github.com/acme/twice?rev=1#abc" }
`

func uvLockText() string {
	return strings.NewReplacer("SDIST", sha("sdist"), "WHEEL1", sha("wheel1"), "WHEEL2", sha("wheel2"), "WHEEL3", sha("wheel3")).Replace(uvLock)
}

func TestParseUVLock(t *testing.T) {
	pkgs, err := parseUVLock([]byte(strings.ReplaceAll(uvLockText(), "\n", "\r\n")))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range pkgs {
		got = append(got, k.name+" "+k.version+" "+strings.Join(k.hashes(), ","))
	}
	want := []string{
		"mcp-server-fetch 0.6.2 " + sha("sdist") + "," + sha("wheel1") + "," + sha("wheel2"),
		"Wheel_Only 1.0.0 " + sha("wheel3") + "," + sha("wheel1"),
		"local-srv 0.1.0 ",
		"twice 1.0 " + sha("sdist"),
		"twice 1.0.0 ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("parseUVLock:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, bad := range []string{
		"[[package]]\nname = \"x\nversion = \"1\"\n",
		"[[package]\nname = \"x\"\n",
		"[[package]]\nname = \"x\" version = \"1\"\n",
		"[[package]]\nwheels = [{ hash = \"a\" }\n",
		"[[package]]\nname = 5\n",
		"[[package]]\nversion = \"1\"\n",
		"a = " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n",
		"a = \"\\q\"\n",
		"a = $\n",
	} {
		if _, err := parseUVLock([]byte(bad)); err == nil {
			t.Errorf("parseUVLock(%q): no error", bad)
		}
	}
}

func TestResolvePyPI(t *testing.T) {
	proj := t.TempDir()
	write(t, filepath.Join(proj, "uv.lock"), uvLockText(), 0o644)
	sub := filepath.Join(proj, "src", "srv")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH="}
	fetch := etdi.Artifact{Type: etdi.ArtifactPyPI, Name: "mcp-server-fetch", Version: "0.6.2", Digest: sha("sdist")}
	for _, argv := range [][]string{
		{"uvx", "mcp-server-fetch==0.6.2"},
		{"uvx", "--from", "MCP_Server.Fetch[cli]==0.6.2.0", "mcp-server-fetch"},
		{"uv", "tool", "run", "mcp-server-fetch@0.6.2"},
		{"pipx", "run", "--spec", "mcp-server-fetch===0.6.2", "mcp-server-fetch"},
	} {
		r := resolved(t, Launch{Argv: argv, Dir: sub, Env: env}, fetch, "uv.lock "+proj)
		if r != nil && strings.Join(r.Digests, ",") != sha("sdist")+","+sha("wheel1")+","+sha("wheel2") {
			t.Errorf("Resolve(%q).Digests = %q", argv, r.Digests)
		}
	}
	r := resolved(t, Launch{Argv: []string{"uvx", "wheel-only==1.0"}, Dir: proj, Env: env}, etdi.Artifact{Type: etdi.ArtifactPyPI, Name: "Wheel_Only", Version: "1.0.0", Digest: sha("wheel3")}, "uv.lock")
	if r != nil && len(r.Digests) != 2 {
		t.Errorf("Digests = %q", r.Digests)
	}
	for _, tc := range []struct {
		argv []string
		dir  string
		want []string
	}{
		{[]string{"uvx", "mcp-server-fetch"}, proj, []string{"newest mcp-server-fetch", "mcp-server-fetch==<version>"}},
		{[]string{"pipx", "run", "mcp-server-fetch"}, proj, []string{"pipx run installs the newest"}},
		{[]string{"uvx", "mcp-server-fetch>=0.6"}, proj, []string{"not one exact version"}},
		{[]string{"uvx", "mcp-server-fetch@latest"}, proj, []string{"not one exact version"}},
		{[]string{"uvx", "mcp-server-fetch==0.7"}, proj, []string{"records mcp-server-fetch at 0.6.2, not 0.7"}},
		{[]string{"uvx", "absent==1"}, proj, []string{"does not record absent"}},
		{[]string{"uvx", "local-srv==0.1.0"}, proj, []string{"no sha256 file hash"}},
		{[]string{"uvx", "twice==1"}, proj, []string{"more than once"}},
		{[]string{"uvx", "mcp-server-fetch==0.6.2"}, t.TempDir(), []string{"no uv.lock", "uv lock"}},
		{[]string{"python", "-m", "mcp_server_fetch"}, proj, []string{"-m runs an installed module"}},
	} {
		r, err := Resolve(context.Background(), Launch{Argv: tc.argv, Dir: tc.dir, Env: env})
		unresolved(t, tc.argv, r, err, tc.want...)
	}
	bad := t.TempDir()
	write(t, filepath.Join(bad, "uv.lock"), "[[package]]\nname = ", 0o644)
	argv := []string{"uvx", "x==1"}
	r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: bad, Env: env})
	unresolved(t, argv, r, err, "cannot read", "uv lock")
}

// fakeDocker writes a docker script that answers image inspect for
// ghcr.io/acme/weather (and docker.io/library/alpine, listed as podman
// lists it), prints no digest for localimg, hangs for slowimg, and fails
// otherwise. Every call is appended to the returned marker file.
func fakeDocker(t *testing.T, dir string) (marker string) {
	t.Helper()
	marker = filepath.Join(dir, "calls")
	write(t, filepath.Join(dir, "docker"), fakeDockerScript(marker), 0o755)
	return marker
}

func fakeDockerScript(marker string) string {
	return `#!/bin/sh
echo "$*" >> '` + marker + `'
for last; do :; done
[ "$1 $2 $3 $4" = "image inspect --format {{json .RepoDigests}}" ] || { echo "unexpected arguments" >&2; exit 2; }
case "$last" in
ghcr.io/acme/weather|ghcr.io/acme/weather:1.0) echo '["ghcr.io/other/weather@sha256:` + strings.Repeat("cd", 32) + `","ghcr.io/acme/weather@sha256:` + hexA + `"]' ;;
alpine:3) echo '["docker.io/library/alpine@sha256:` + hexA + `","docker.io/library/alpine@sha256:` + strings.Repeat("ef", 32) + `"]' ;;
localimg) echo '[]' ;;
nulljson) echo 'null' ;;
garbage) echo 'not json' ;;
bigout) i=0; while [ $i -lt 12000 ]; do echo '["xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"]'; i=$((i+1)); done ;;
slowimg) while :; do :; done ;;
*) echo "Error: No such image: $last" >&2; echo "second line" >&2; exit 1 ;;
esac
`
}

func TestResolveOCI(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake docker is a shell script")
	}
	bin := t.TempDir()
	marker := fakeDocker(t, bin)
	env := []string{"PATH=" + bin}
	calls := func() string { b, _ := os.ReadFile(marker); return string(b) }

	// Pinned by digest: nothing is run. Logging options are harmless; one
	// that may choose another daemon is not, even for a digest.
	for _, tc := range []struct {
		argv []string
		tag  string
	}{
		{[]string{"docker", "run", "-i", "--rm", "ghcr.io/acme/weather@sha256:" + hexA}, ""},
		{[]string{"docker", "--debug", "--log-level", "warn", "run", "ghcr.io/acme/weather:1.0@sha256:" + hexA}, "1.0"},
	} {
		resolved(t, Launch{Argv: tc.argv, Env: env}, etdi.Artifact{Type: etdi.ArtifactOCI, Name: "ghcr.io/acme/weather", Version: tc.tag, Digest: "sha256:" + hexA}, "image reference")
	}
	if c := calls(); c != "" {
		t.Fatalf("docker was run for a digest-pinned image: %q", c)
	}

	// Present: the digest of the entry for this repository.
	resolved(t, Launch{Argv: []string{"docker", "run", "-i", "--rm", "-e", "TOKEN=" + token, "ghcr.io/acme/weather:1.0"}, Env: env},
		etdi.Artifact{Type: etdi.ArtifactOCI, Name: "ghcr.io/acme/weather", Version: "1.0", Digest: "sha256:" + hexA}, "docker image inspect")
	resolved(t, Launch{Argv: []string{"docker", "run", "ghcr.io/acme/weather"}, Env: env},
		etdi.Artifact{Type: etdi.ArtifactOCI, Name: "ghcr.io/acme/weather", Version: "", Digest: "sha256:" + hexA}, "docker image inspect")
	r := resolved(t, Launch{Argv: []string{filepath.Join(bin, "docker"), "run", "alpine:3"}, Env: []string{"PATH="}},
		etdi.Artifact{Type: etdi.ArtifactOCI, Name: "alpine", Version: "3", Digest: "sha256:" + hexA}, "docker image inspect")
	if r != nil && len(r.Digests) != 2 {
		t.Errorf("Digests = %q, want both of alpine's", r.Digests)
	}
	if c := calls(); !strings.Contains(c, "image inspect --format {{json .RepoDigests}} ghcr.io/acme/weather:1.0\n") {
		t.Errorf("docker was called with %q", c)
	}

	// A docker that hangs is given up at the context's deadline: "did not
	// answer in time" is that deadline at work, and the wait only bounds
	// a Resolve that waits for docker for ever, however loaded the machine.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	argv := []string{"docker", "run", "slowimg"}
	type resolution struct {
		r   *Resolved
		err error
	}
	done := make(chan resolution, 1)
	go func() {
		r, err := Resolve(ctx, Launch{Argv: argv, Env: env})
		done <- resolution{r, err}
	}()
	select {
	case res := <-done:
		unresolved(t, argv, res.r, res.err, "did not answer in time")
	case <-time.After(2 * time.Minute):
		t.Fatal("a hanging docker holds Resolve past its context's deadline")
	}

	for _, tc := range []struct {
		argv []string
		env  []string
		want []string
	}{
		{[]string{"docker", "run", "ghcr.io/acme/absent:2"}, env, []string{"Error: No such image: ghcr.io/acme/absent:2)", "pull it, or pin it by digest: ghcr.io/acme/absent@sha256:<digest>"}},
		{[]string{"docker", "run", "localimg"}, env, []string{"no registry digest for localimg"}},
		{[]string{"docker", "run", "nulljson"}, env, []string{"no registry digest"}},
		{[]string{"docker", "run", "garbage"}, env, []string{"no list of repository digests"}},
		{[]string{"docker", "run", "bigout"}, env, []string{"wrote more than 1048576 bytes"}},
		{[]string{"docker", "run", "ghcr.io/acme/weather"}, []string{"PATH="}, []string{"docker is not found on the launch's PATH"}},
		{[]string{"podman", "run", "ghcr.io/acme/weather"}, env, []string{"podman is not found"}},
		{[]string{"docker", "--context", "x", "run", "ghcr.io/acme/weather"}, env, []string{"global options", "ghcr.io/acme/weather@sha256:<digest>"}},
		{[]string{"docker", "run", "--pull=always", "ghcr.io/acme/weather:1.0"}, env, []string{"--pull=always"}},
	} {
		r, err := Resolve(context.Background(), Launch{Argv: tc.argv, Env: tc.env})
		unresolved(t, tc.argv, r, err, tc.want...)
		if err != nil && strings.Contains(err.Error(), "second line") {
			t.Errorf("Resolve(%q): %v: more than the first line of stderr", tc.argv, err)
		}
	}
}

func TestResolveFile(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	write(t, filepath.Join(bin, "weather-server"), "#!/bin/sh\necho weather\n", 0o755)
	write(t, filepath.Join(bin, "not-exec"), "data\n", 0o644)
	write(t, filepath.Join(dir, "srv", "dist", "index.js"), "console.log('hi')\n", 0o644)
	write(t, filepath.Join(dir, "srv", "server.py"), "print('hi')\n", 0o644)
	write(t, filepath.Join(dir, "srv", "empty.js"), "", 0o644)
	if err := os.MkdirAll(filepath.Join(dir, "srv", "pkgdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	progDigest := sha("#!/bin/sh\necho weather\n")
	jsDigest := sha("console.log('hi')\n")
	env := []string{"PATH=" + filepath.Join(dir, "nothing") + string(filepath.ListSeparator) + bin}
	want := etdi.Artifact{Type: etdi.ArtifactFile, Name: "weather-server", Version: "", Digest: progDigest}
	resolved(t, Launch{Argv: []string{"weather-server", "--api-key", token}, Env: env}, want, "file "+filepath.Join(bin, "weather-server"))
	resolved(t, Launch{Argv: []string{"./bin/weather-server"}, Dir: dir, Env: []string{"PATH="}}, want, "file")
	resolved(t, Launch{Argv: []string{filepath.Join(bin, "weather-server")}, Env: []string{"PATH="}}, want, "file")
	resolved(t, Launch{Argv: []string{"env", "PATH=" + bin, "weather-server"}, Env: []string{"PATH="}}, want, "file")
	resolved(t, Launch{Argv: []string{"env", "-C", "srv", "node", "dist/index.js"}, Dir: dir, Env: env}, etdi.Artifact{Type: etdi.ArtifactFile, Name: "index.js", Version: "", Digest: jsDigest}, "file")
	resolved(t, Launch{Argv: []string{"node", "--enable-source-maps", "dist/index.js", "--token", token}, Dir: filepath.Join(dir, "srv"), Env: env},
		etdi.Artifact{Type: etdi.ArtifactFile, Name: "index.js", Version: "", Digest: jsDigest}, "file "+filepath.Join(dir, "srv", "dist", "index.js"))
	resolved(t, Launch{Argv: []string{"python3", "-u", "server.py"}, Dir: filepath.Join(dir, "srv"), Env: env},
		etdi.Artifact{Type: etdi.ArtifactFile, Name: "server.py", Version: "", Digest: sha("print('hi')\n")}, "file")
	resolved(t, Launch{Argv: []string{"uv", "--directory", filepath.Join(dir, "srv"), "run", "server.py"}, Env: env},
		etdi.Artifact{Type: etdi.ArtifactFile, Name: "server.py", Version: "", Digest: sha("print('hi')\n")}, "file")

	if runtime.GOOS != "windows" {
		// A symbolic link is followed: the file is the one hashed.
		if err := os.Symlink(filepath.Join(bin, "weather-server"), filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../srv/dist/index.js", filepath.Join(bin, "weather-js")); err != nil {
			t.Fatal(err)
		}
		resolved(t, Launch{Argv: []string{"./link"}, Dir: dir, Env: env}, want, "file "+filepath.Join(bin, "weather-server"))
		resolved(t, Launch{Argv: []string{"node", filepath.Join(bin, "weather-js")}, Env: env}, etdi.Artifact{Type: etdi.ArtifactFile, Name: "index.js", Version: "", Digest: jsDigest}, "file")
		// A program in a relative PATH entry is not taken.
		argv := []string{"weather-server"}
		r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: dir, Env: []string{"PATH=bin:" + bin}})
		unresolved(t, argv, r, err, "relative PATH entry")
		r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: bin, Env: []string{"PATH=:" + bin}})
		unresolved(t, argv, r, err, "relative PATH entry")
	}

	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"no-such-program"}, "not found on the launch's PATH"},
		{[]string{"not-exec"}, "not found"},
		{[]string{"./bin/absent"}, "no executable file ./bin/absent"},
		{[]string{"node", "srv/absent.js"}, "no file srv/absent.js"},
		{[]string{"node", "srv/pkgdir"}, "is a directory"},
		{[]string{"python", "srv"}, "is a directory"},
		{[]string{"node", "srv/empty.js"}, "is empty"},
		{[]string{"deno", "run", "https://example.com/x.ts"}, "fetches the script from the network"},
		{[]string{"node", "-e", "1"}, "runs code from its command line"},
		{[]string{"bin"}, "not found"},
		{[]string{"./bin"}, "no executable file"},
	} {
		r, err := Resolve(context.Background(), Launch{Argv: tc.argv, Dir: dir, Env: env})
		unresolved(t, tc.argv, r, err, tc.want)
	}
}

// With a nil Env, this process's environment is read.
func TestResolveInheritedEnv(t *testing.T) {
	bin := t.TempDir()
	write(t, filepath.Join(bin, "inherited-srv"), "x\n", 0o755)
	t.Setenv("PATH", bin)
	r, err := Resolve(context.Background(), Launch{Argv: []string{"inherited-srv"}})
	if err != nil || r.Artifact.Digest != sha("x\n") {
		t.Fatalf("Resolve = %+v, %v", r, err)
	}
	// env -i empties it.
	argv := []string{"env", "-i", "inherited-srv"}
	r, err = Resolve(context.Background(), Launch{Argv: argv})
	unresolved(t, argv, r, err, "not found")
}

func TestFileDigest(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	write(t, p, "hello", 0o644)
	if d, err := FileDigest(p); err != nil || d != sha("hello") {
		t.Errorf("FileDigest = %q, %v", d, err)
	}
	if _, err := FileDigest(filepath.Dir(p)); err == nil {
		t.Error("FileDigest of a directory: no error")
	}
	if _, err := FileDigest(p + "x"); err == nil {
		t.Error("FileDigest of nothing: no error")
	}
}
