package artifact

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
)

// parseINI reads .npmrc as npm's ini package does.
func TestParseINI(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []iniEntry
	}{
		{"fund=false\n", []iniEntry{{key: "fund", value: "false", line: 1}}},
		{"  fund = false  \n\n; x=y\n# z=w\n   ;q\nloglevel=warn", []iniEntry{{key: "fund", value: "false", line: 1}, {key: "loglevel", value: "warn", line: 6}}},
		// CR alone ends a line for npm.
		{"fund=false\rscript-shell=/x", []iniEntry{{key: "fund", value: "false", line: 1}, {key: "script-shell", value: "/x", line: 1}}},
		// Quoted keys and values; JSON escapes in double quotes.
		{`"script-shell"=x`, []iniEntry{{key: "script-shell", value: "x", line: 1}}},
		{`'script-shell'='x'`, []iniEntry{{key: "script-shell", value: "x", line: 1}}},
		{`"\u0073cript-shell"="a;b"`, []iniEntry{{key: "script-shell", value: "a;b", line: 1}}},
		// Comments after unquoted values; escapes.
		{`a=b ; c`, []iniEntry{{key: "a", value: "b", line: 1}}},
		{`a=b\;c\#d\\e\x`, []iniEntry{{key: "a", value: `b;c#d\e\x`, line: 1}}},
		{`a=b\`, []iniEntry{{key: "a", value: `b\`, line: 1}}},
		// A key without a value is true; arrays; "=x" is skipped.
		{"global\nca[]=x\n=x\n", []iniEntry{{key: "global", value: "true", line: 1}, {key: "ca", value: "x", line: 2}}},
		// Sections.
		{"[global]\nindex-url=x\n[a]b\n", []iniEntry{{section: "global", line: 1}, {section: "global", key: "index-url", value: "x", line: 2},
			{section: "global", key: "[a]b", value: "true", line: 3}}},
		// A byte-order mark is trimmed as JavaScript trims it.
		{"\uFEFFscript-shell=x", []iniEntry{{key: "script-shell", value: "x", line: 1}}},
		{"\xffkey=\xfe", []iniEntry{{key: "\uFFFDkey", value: "\uFFFD", line: 1}}},
	} {
		got, ok := parseINI([]byte(tc.in))
		if !ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseINI(%q) = %+v, %v; want %+v", tc.in, got, ok, tc.want)
		}
	}
	if _, ok := parseINI([]byte(strings.Repeat("a=b\n", maxINIEntries+1))); ok {
		t.Error("parseINI of too many entries: ok")
	}
}

func TestEnvReplace(t *testing.T) {
	env := &environ{vars: []string{"A=x", "EMPTY="}}
	for in, want := range map[string]string{
		"${A}":        "x",
		"a${A}b":      "axb",
		"${B}":        "${B}",
		"${B?}":       "",
		"${EMPTY}":    "",
		`\${A}`:       "${A}",
		`\\${A}`:      `\x`,
		`\\\${A}`:     `\${A}`,
		"${A${A}}":    "${Ax}",
		"${}":         "${}",
		"${A":         "${A",
		"${A?B}":      "${A?B}",
		"$A ${A}${A}": "$A xx",
	} {
		if got := envReplace(in, env); got != want {
			t.Errorf("envReplace(%q) = %q, want %q", in, got, want)
		}
	}
}

// npmProject is a project whose lockfile and node_modules hold srv 1.0.0,
// its bin linked as npm links it.
func npmProject(t *testing.T) (proj, home string, want etdi.Artifact) {
	t.Helper()
	root := t.TempDir()
	proj, home = filepath.Join(root, "proj"), filepath.Join(root, "home")
	i := sri("sha512", "srv")
	write(t, filepath.Join(proj, "package.json"), `{"name":"p"}`, 0o644)
	write(t, filepath.Join(proj, "package-lock.json"), npmLockJSON(t, []string{"srv"}, map[string][2]string{"srv": {"1.0.0", i}}), 0o644)
	write(t, filepath.Join(proj, "node_modules", "srv", "package.json"), `{"name":"srv","version":"1.0.0","bin":{"srv":"bin/srv.js"}}`, 0o644)
	write(t, filepath.Join(proj, "node_modules", "srv", "bin", "srv.js"), "x", 0o755)
	if err := os.MkdirAll(filepath.Join(proj, "node_modules", ".bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if err := os.Symlink("../srv/bin/srv.js", filepath.Join(proj, "node_modules", ".bin", "srv")); err != nil {
			t.Fatal(err)
		}
	} else {
		write(t, filepath.Join(proj, "node_modules", ".bin", "srv"), "x", 0o755)
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	return proj, home, etdi.Artifact{Type: etdi.ArtifactNPM, Name: "srv", Version: "1.0.0", Digest: i}
}

// npm settings from the environment and every .npmrc: harmless ones are
// read past, every other one leaves the launch unresolved, named.
func TestNPMConfig(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("npx through command shims is not resolved on Windows")
	}
	proj, home, want := npmProject(t)
	env := []string{"PATH=", "HOME=" + home}
	argv := []string{"npx", "--no-install", "srv@1.0.0"}
	rc := filepath.Join(proj, ".npmrc")

	harmless := "fund=false\naudit=false\nloglevel=warn\nprogress=false\nupdate-notifier=false\nyes=true\nignore-scripts=true\n" +
		"save-exact=true\nengine-strict=true\nlegacy-peer-deps=true\ncafile=/etc/ssl/certs/ca-certificates.crt\nregistry=https://registry.npmjs.org/\n" +
		"//registry.npmjs.org/:_authToken=" + token + "\n//npm.example/:username=u\nshamefully-hoist=true\n"
	write(t, rc, harmless, 0o644)
	write(t, filepath.Join(home, ".npmrc"), harmless, 0o600)
	resolved(t, Launch{Argv: argv, Dir: proj, Env: append(env, "npm_config_fund=false", "NPM_CONFIG_LOGLEVEL=warn", "npm_config_script_shell=")},
		want, "package-lock.json")

	for _, tc := range []struct {
		name, content string
		want          []string
	}{
		{"script-shell", "fund=false\nscript-shell=/x/evil\n", []string{"sets script-shell", "shell"}},
		{"shell", "shell=/x/evil\n", []string{"sets shell"}},
		{"node-options", "node-options=--require ./evil.js\n", []string{"sets node-options", "NODE_OPTIONS"}},
		{"registry", "registry=https://evil.example/\n", []string{"sets registry"}},
		{"scoped registry", "@acme:registry=https://evil.example/\n", []string{"sets @acme:registry", "scope"}},
		{"nerf-dart registry", "//evil.example/:registry=x\n", []string{"sets //evil.example/:registry"}},
		{"userconfig", "userconfig=/x/rc\n", []string{"sets userconfig"}},
		{"globalconfig", "globalconfig=/x/rc\n", []string{"sets globalconfig"}},
		{"prefix", "prefix=/x\n", []string{"sets prefix"}},
		{"cache", "cache=./c\n", []string{"sets cache"}},
		{"call", "call=evil\n", []string{"sets call"}},
		{"package", "package=evil\n", []string{"sets package"}},
		{"global", "global=true\n", []string{"sets global"}},
		{"workspace", "workspace=x\n", []string{"sets workspace"}},
		{"tag", "tag=next\n", []string{"sets tag"}},
		{"git", "git=/x/evil\n", []string{"sets git"}},
		{"unknown", "future-option=1\n", []string{"sets future-option", "not an npm setting known"}},
		{"env key", "${KEY}=/x/evil\n", []string{"sets script-shell"}},
		{"env key unset", "${NOPE}=x\n", []string{"sets ${NOPE}"}},
		{"registry env value", "registry=${REG}\n", []string{"sets registry"}},
		{"quoted", `"script-shell"="/x"` + "\n", []string{"sets script-shell"}},
		{"case", "Script-Shell=/x\n", []string{"sets Script-Shell"}},
		{"section", "[script-shell]\n", []string{"[section]"}},
	} {
		write(t, rc, tc.content, 0o644)
		r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: append(env, "KEY=script-shell", "REG=https://evil.example/")})
		unresolved(t, argv, r, err, append([]string{"the project's .npmrc " + rc}, tc.want...)...)
		if err != nil && strings.Contains(err.Error(), "/x/evil") {
			t.Errorf("%s: the message shows the value: %v", tc.name, err)
		}
	}
	if err := os.Remove(rc); err != nil {
		t.Fatal(err)
	}

	// The environment, in any case; an empty value is not a setting.
	for _, v := range []string{"npm_config_script_shell=/x", "NPM_CONFIG_SCRIPT_SHELL=/x", "Npm_Config_Script_Shell=/x",
		"npm_config_node_options=--require x", "NPM_CONFIG_REGISTRY=https://evil.example/", "npm_config_@acme:registry=x",
		"npm_config_userconfig=/x", "NPM_CONFIG_GLOBALCONFIG=/x", "npm_config_prefix=/x", "npm_config_cache=/x",
		"npm_config_package=evil", "npm_config_call=evil", "npm_config_workspaces=true", "npm_config_global=true"} {
		r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: append(env, v)})
		name, _, _ := strings.Cut(v, "=")
		unresolved(t, argv, r, err, "the environment variable "+name+" sets")
	}
	for _, v := range []string{"PREFIX=/x", "DESTDIR=/x"} {
		if runtime.GOOS == "windows" && v == "DESTDIR=/x" {
			continue
		}
		r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: append(env, v)})
		unresolved(t, argv, r, err, "the environment variable "+v[:strings.IndexByte(v, '=')]+" is set", "global prefix")
	}

	// The user's .npmrc, and one in a parent directory npm may take as
	// the project (a workspace root).
	write(t, filepath.Join(home, ".npmrc"), "script-shell=/x\n", 0o600)
	r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
	unresolved(t, argv, r, err, "the user's .npmrc "+filepath.Join(home, ".npmrc"), "sets script-shell")
	if err := os.Remove(filepath.Join(home, ".npmrc")); err != nil {
		t.Fatal(err)
	}
	parent := filepath.Dir(proj)
	write(t, filepath.Join(parent, "package.json"), `{"name":"root"}`, 0o644)
	write(t, filepath.Join(parent, ".npmrc"), "registry=https://evil.example/\n", 0o644)
	r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
	unresolved(t, argv, r, err, "the project's .npmrc "+filepath.Join(parent, ".npmrc"), "sets registry")
	if err := os.Remove(filepath.Join(parent, ".npmrc")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(parent, "package.json"), `{"name":"root","workspaces":["proj"]}`, 0o644)
	r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
	unresolved(t, argv, r, err, filepath.Join(parent, "package.json")+" declares workspaces")
	if err := os.Remove(filepath.Join(parent, "package.json")); err != nil {
		t.Fatal(err)
	}
	// A .npmrc that is not a regular file, or too large, is not read past.
	if err := os.Mkdir(rc, 0o755); err != nil {
		t.Fatal(err)
	}
	r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
	unresolved(t, argv, r, err, "cannot read the project's .npmrc")
	if err := os.Remove(rc); err != nil {
		t.Fatal(err)
	}
	write(t, rc, strings.Repeat("fund=false\n", maxSmall/10), 0o644)
	r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
	unresolved(t, argv, r, err, "larger than")
	write(t, rc, strings.Repeat("a\n", maxINIEntries+1), 0o644)
	r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
	unresolved(t, argv, r, err, "more than 4096 settings")
	if err := os.Remove(rc); err != nil {
		t.Fatal(err)
	}

	// The command line: options known to be harmless, and no other.
	resolved(t, Launch{Argv: []string{"npx", "-y", "--quiet", "--no-audit", "--loglevel", "warn", "srv@1.0.0"}, Dir: proj, Env: env}, want, "package-lock.json")
	for _, flags := range [][]string{{"--userconfig", "/x"}, {"--cache", "/x"}, {"-C", "x"}, {"--prefix=/x"}, {"-g"}, {"--global"},
		{"-w", "x"}, {"--workspaces"}, {"--registry", "https://evil.example/"}, {"--node-options=--require x"}, {"--script-shell", "/x"},
		{"-p", "srv@1.0.0", "--script-shell=/x"}} {
		argv := append(append([]string{"npx"}, flags...), "srv@1.0.0")
		r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
		unresolved(t, argv, r, err, "may change what runs")
	}
	for _, argv := range [][]string{{"npx", "-p", "srv@1.0.0", "-c", "evil"}, {"npx", "--package=srv@1.0.0"}} {
		r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
		unresolved(t, argv, r, err, "shell")
	}
}

// The global configuration and npm's builtin one, found from the node
// and npx on the launch's PATH; the global bin directory npx looks in.
func TestNPMGlobalConfig(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("prefix layout of a POSIX install")
	}
	proj, home, want := npmProject(t)
	prefix := filepath.Join(t.TempDir(), "usr")
	write(t, filepath.Join(prefix, "bin", "node"), "#!/bin/sh\n", 0o755)
	write(t, filepath.Join(prefix, "lib", "node_modules", "npm", "bin", "npx-cli.js"), "#!/bin/sh\n", 0o755)
	if err := os.Symlink("../lib/node_modules/npm/bin/npx-cli.js", filepath.Join(prefix, "bin", "npx")); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + filepath.Join(prefix, "bin"), "HOME=" + home}
	argv := []string{"npx", "srv@1.0.0"}
	write(t, filepath.Join(prefix, "etc", "npmrc"), "cafile=/etc/ssl/certs/ca-certificates.crt\n", 0o644)
	resolved(t, Launch{Argv: argv, Dir: proj, Env: env}, want, "package-lock.json")

	write(t, filepath.Join(prefix, "etc", "npmrc"), "script-shell=/x\n", 0o644)
	r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
	unresolved(t, argv, r, err, "the global npmrc "+filepath.Join(prefix, "etc", "npmrc"), "sets script-shell")
	if err := os.Remove(filepath.Join(prefix, "etc", "npmrc")); err != nil {
		t.Fatal(err)
	}
	builtin := filepath.Join(prefix, "lib", "node_modules", "npm", "npmrc")
	write(t, builtin, "node-options=--require x\n", 0o644)
	r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
	unresolved(t, argv, r, err, "npm's builtin npmrc "+builtin, "sets node-options")
	if err := os.Remove(builtin); err != nil {
		t.Fatal(err)
	}
	// npm exec reads the builtin npmrc of npm, not npx.
	write(t, filepath.Join(prefix, "lib", "node_modules", "npm", "bin", "npm-cli.js"), "#!/bin/sh\n", 0o755)
	if err := os.Symlink("../lib/node_modules/npm/bin/npm-cli.js", filepath.Join(prefix, "bin", "npm")); err != nil {
		t.Fatal(err)
	}
	write(t, builtin, "registry=https://evil.example/\n", 0o644)
	argv2 := []string{"npm", "exec", "srv@1.0.0"}
	r, err = Resolve(context.Background(), Launch{Argv: argv2, Dir: proj, Env: env})
	unresolved(t, argv2, r, err, "npm's builtin npmrc", "sets registry")
	if err := os.Remove(builtin); err != nil {
		t.Fatal(err)
	}

	// A program of the command's name in the global bin directory runs
	// before the project's package.
	evil := filepath.Join(prefix, "bin", "srv@1.0.0")
	write(t, evil, "#!/bin/sh\n", 0o755)
	r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
	unresolved(t, argv, r, err, "npx runs "+evil+", a program in npm's global bin directory")
	if err := os.Remove(evil); err != nil {
		t.Fatal(err)
	}
	resolved(t, Launch{Argv: argv, Dir: proj, Env: env}, want, "package-lock.json")
}

// The program npx starts for a package the project installed must be a
// file of that package.
func TestNPXBin(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links")
	}
	proj, home, want := npmProject(t)
	env := []string{"PATH=", "HOME=" + home}
	for _, argv := range [][]string{{"npx", "srv"}, {"npx", "srv@1.0.0"}, {"npm", "exec", "--package=srv@1.0.0", "--", "srv"}} {
		resolved(t, Launch{Argv: argv, Dir: proj, Env: env}, want, "package-lock.json")
		resolved(t, Launch{Argv: argv, Dir: filepath.Join(proj, "node_modules"), Env: env}, want, "package-lock.json")
	}
	link := filepath.Join(proj, "node_modules", ".bin", "srv")
	argv := []string{"npx", "srv@1.0.0"}

	// Another package's file, a file of the project, no link at all.
	write(t, filepath.Join(proj, "node_modules", "other", "x.js"), "x", 0o755)
	for _, target := range []string{"../other/x.js", "../../evil.js", "../srv-evil/bin/srv.js"} {
		write(t, filepath.Join(proj, "evil.js"), "x", 0o755)
		write(t, filepath.Join(proj, "node_modules", "srv-evil", "bin", "srv.js"), "x", 0o755)
		os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
		unresolved(t, argv, r, err, "npx runs "+link+", which is not a program of the package srv")
	}
	os.Remove(link)
	r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
	unresolved(t, argv, r, err, "no node_modules/.bin/srv", "PATH")
	if err := os.Symlink("../srv/bin/srv.js", link); err != nil {
		t.Fatal(err)
	}
	resolved(t, Launch{Argv: argv, Dir: proj, Env: env}, want, "package-lock.json")

	// A bin of the command's name in the project's package.json, as an
	// object or a string.
	for _, pj := range []string{`{"name":"p","bin":{"srv@1.0.0":"evil.js"}}`, `{"name":"srv@1.0.0","bin":"evil.js"}`,
		`{"name":"@x/srv@1.0.0","bin":"evil.js"}`, `{"name":"p","bin":{"./x/srv@1.0.0":"evil.js"}}`} {
		write(t, filepath.Join(proj, "package.json"), pj, 0o644)
		r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
		unresolved(t, argv, r, err, "declares a program srv@1.0.0 of the project itself")
	}
	write(t, filepath.Join(proj, "package.json"), `{`, 0o644)
	r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
	unresolved(t, argv, r, err, "not valid JSON")
	write(t, filepath.Join(proj, "package.json"), `{"name":"p","bin":{"other":"x.js"}}`, 0o644)
	resolved(t, Launch{Argv: argv, Dir: proj, Env: env}, want, "package-lock.json")

	// node_modules/.bin/<command> in a directory above the project.
	above := filepath.Join(filepath.Dir(proj), "node_modules", ".bin", "srv@1.0.0")
	write(t, above, "x", 0o755)
	r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
	unresolved(t, argv, r, err, "npx runs "+above)
	os.RemoveAll(filepath.Join(filepath.Dir(proj), "node_modules"))

	// sh in node_modules/.bin, from the working directory up.
	sub := filepath.Join(proj, "sub")
	sh := filepath.Join(sub, "node_modules", ".bin", "sh")
	write(t, sh, "x", 0o755)
	r, err = Resolve(context.Background(), Launch{Argv: []string{"npx", "srv@1.0.0"}, Dir: sub, Env: env})
	unresolved(t, argv, r, err, sh+" is a program named sh")
	os.RemoveAll(sub)

	// The installed package's bins: its only one, or the one named after
	// it; a package.json that names neither is not resolved.
	pkgJSON := filepath.Join(proj, "node_modules", "srv", "package.json")
	for _, tc := range []struct{ bin, want string }{
		{`"bin":{"a":"bin/srv.js","b":"bin/other.js"}`, "declares no program"},
		{`"bin":{}`, "declares no program"},
		{`"bin":{"other":"bin/srv.js"}`, "no node_modules/.bin/other"},
		{`"bin":"bin/srv.js","name":"@x/srv2"`, "no node_modules/.bin/srv2"},
	} {
		write(t, pkgJSON, `{"version":"1.0.0",`+tc.bin+`}`, 0o644)
		r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
		unresolved(t, argv, r, err, tc.want)
	}
	write(t, pkgJSON, `[`, 0o644)
	r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
	unresolved(t, argv, r, err, "not valid JSON")
	for _, bin := range []string{`"bin":{"srv":"bin/srv.js","srv-alias":"bin/srv.js"}`, `"bin":{"srv":"bin/srv.js","x":"y.js"}`, `"bin":"bin/srv.js"`} {
		write(t, pkgJSON, `{"name":"srv","version":"1.0.0",`+bin+`}`, 0o644)
		if strings.Contains(bin, "srv-alias") {
			os.Remove(filepath.Join(proj, "node_modules", ".bin", "srv-alias"))
			r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
			unresolved(t, argv, r, err, "no node_modules/.bin/srv-alias")
			if err := os.Symlink("../srv/bin/srv.js", filepath.Join(proj, "node_modules", ".bin", "srv-alias")); err != nil {
				t.Fatal(err)
			}
		}
		resolved(t, Launch{Argv: argv, Dir: proj, Env: env}, want, "package-lock.json")
	}
}

// bunx reads BUN_* variables and bunfig.toml besides npm's settings.
func TestBunConfig(t *testing.T) {
	proj, home, want := npmProject(t)
	env := []string{"PATH=", "HOME=" + home, "BUN_INSTALL=" + filepath.Join(home, ".bun")}
	argv := []string{"bunx", "srv@1.0.0"}
	resolved(t, Launch{Argv: argv, Dir: proj, Env: env}, want, "package-lock.json")
	for _, v := range []string{"BUN_CONFIG_REGISTRY=https://evil.example/", "BUN_INSTALL_CACHE_DIR=/x", "BUN_OPTIONS=--preload x"} {
		r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: append(env, v)})
		unresolved(t, argv, r, err, "the environment variable "+v[:strings.IndexByte(v, '=')]+" is set")
	}
	r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: append(env, "NPM_CONFIG_REGISTRY=https://evil.example/")})
	unresolved(t, argv, r, err, "sets registry")
	for _, f := range []string{filepath.Join(proj, "bunfig.toml"), filepath.Join(home, ".bunfig.toml"), filepath.Join(proj, ".env"), filepath.Join(proj, ".env.local")} {
		write(t, f, "preload = [\"./evil.ts\"]\n", 0o644)
		r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: env})
		unresolved(t, argv, r, err, f+" exists")
		os.Remove(f)
	}
	xdg := filepath.Join(home, "xdg")
	write(t, filepath.Join(xdg, ".bunfig.toml"), "x = 1\n", 0o644)
	r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: append(env, "XDG_CONFIG_HOME="+xdg)})
	unresolved(t, argv, r, err, ".bunfig.toml exists")
}

// uvx and uv run read UV_* variables, uv.toml and pyproject.toml
// [tool.uv], the user's and the system's uv.toml.
func TestUVConfig(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	write(t, filepath.Join(dir, "uv.lock"), uvLockText(), 0o644)
	env := []string{"PATH=", "HOME=" + home, "XDG_CONFIG_DIRS=" + filepath.Join(dir, "etc"), "UV_NO_PROGRESS=1", "UV_CONCURRENT_DOWNLOADS=4"}
	argv := []string{"uvx", "mcp-server-fetch==0.6.2"}
	r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: dir, Env: env})
	if err != nil {
		t.Fatalf("Resolve(%q): %v", argv, err)
	}
	want := r.Artifact
	for _, v := range []string{"UV_INDEX_URL=https://evil.example/simple", "UV_EXTRA_INDEX_URL=x", "UV_INDEX=x", "UV_DEFAULT_INDEX=x",
		"UV_FIND_LINKS=/x", "UV_PYTHON=/x/python", "UV_TOOL_DIR=/x", "UV_CACHE_DIR=/x", "UV_CONFIG_FILE=/x", "UV_FUTURE=1"} {
		name := v[:strings.IndexByte(v, '=')]
		for _, a := range [][]string{argv, {"uv", "tool", "run", "mcp-server-fetch==0.6.2"}} {
			r, err := Resolve(context.Background(), Launch{Argv: a, Dir: dir, Env: append(env, v)})
			unresolved(t, a, r, err, "the environment variable "+name+" is set")
		}
	}
	write(t, filepath.Join(dir, "server.py"), "x", 0o644)
	r, err = Resolve(context.Background(), Launch{Argv: []string{"uv", "run", "server.py"}, Dir: dir, Env: append(env, "UV_PYTHON=/x")})
	unresolved(t, []string{"uv", "run"}, r, err, "UV_PYTHON")

	files := []string{filepath.Join(home, ".config", "uv", "uv.toml"), filepath.Join(dir, "etc", "uv", "uv.toml")}
	for _, f := range files {
		write(t, f, "concurrent-downloads = 4\nnative-tls = true\n", 0o644)
	}
	write(t, filepath.Join(dir, "pyproject.toml"), "[project]\nname = \"x\"\n[tool.uv]\ndev-dependencies = [\"pytest\"]\n[tool.ruff]\nline-length = 100\n", 0o644)
	resolved(t, Launch{Argv: argv, Dir: dir, Env: env}, want, "uv.lock")
	for _, f := range files {
		for _, content := range []string{"index-url = \"https://evil.example/simple\"\n", "[[index]]\nurl = \"https://evil.example\"\n",
			"[pip]\nindex-url = \"x\"\n", "python-preference = \"only-system\"\n", "cache-dir = \"/x\"\n"} {
			write(t, f, content, 0o644)
			r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: dir, Env: env})
			unresolved(t, argv, r, err, f+" sets ")
		}
		write(t, f, "index-url = \n", 0o644)
		r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: dir, Env: env})
		unresolved(t, argv, r, err, "cannot read "+f)
		// Configuration files turned off: not read.
		resolved(t, Launch{Argv: argv, Dir: dir, Env: append(env, "UV_NO_CONFIG=1")}, want, "uv.lock")
		write(t, f, "", 0o644)
	}
	// uv run reads the project's files; tool commands do not.
	run := []string{"uv", "run", "server.py"}
	for _, content := range []string{"[tool.uv]\nindex-url = \"x\"\n", "[[tool.uv.index]]\nurl = \"x\"\n", "[tool.uv.sources]\nx = { path = \"y\" }\n",
		"tool.uv.find-links = [\"x\"]\n"} {
		write(t, filepath.Join(dir, "pyproject.toml"), content, 0o644)
		r, err := Resolve(context.Background(), Launch{Argv: run, Dir: dir, Env: env})
		unresolved(t, run, r, err, filepath.Join(dir, "pyproject.toml")+" sets ")
		resolved(t, Launch{Argv: argv, Dir: dir, Env: env}, want, "uv.lock")
	}
	write(t, filepath.Join(dir, "uv.toml"), "index-url = \"x\"\n", 0o644)
	r, err = Resolve(context.Background(), Launch{Argv: run, Dir: dir, Env: env})
	unresolved(t, run, r, err, filepath.Join(dir, "uv.toml")+" sets index-url")
	resolved(t, Launch{Argv: argv, Dir: dir, Env: env}, want, "uv.lock")
	// Options that read another configuration or install otherwise.
	for _, flags := range [][]string{{"--config-file", "x.toml"}, {"--env-file=.env"}, {"--python", "./python"}, {"--cache-dir", "c"},
		{"--overrides", "o.txt"}, {"--with", "x"}} {
		a := append(append([]string{"uvx"}, flags...), "mcp-server-fetch==0.6.2")
		r, err := Resolve(context.Background(), Launch{Argv: a, Dir: dir, Env: env})
		unresolved(t, a, r, err, "uvx option "+strings.SplitN(flags[0], "=", 2)[0])
	}
}

// pipx run reads PIPX_* and PIP_* variables and pip's configuration
// files.
func TestPipConfig(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	write(t, filepath.Join(dir, "uv.lock"), uvLockText(), 0o644)
	env := []string{"PATH=", "HOME=" + home, "XDG_CONFIG_DIRS=" + filepath.Join(dir, "xdg"), "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1"}
	argv := []string{"pipx", "run", "--spec", "mcp-server-fetch==0.6.2", "mcp-server-fetch"}
	r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: dir, Env: env})
	if err != nil {
		t.Fatalf("Resolve(%q): %v", argv, err)
	}
	want := r.Artifact
	for _, v := range []string{"PIP_INDEX_URL=https://evil.example/simple", "PIP_EXTRA_INDEX_URL=x", "PIP_FIND_LINKS=/x",
		"PIP_CONFIG_FILE=/x", "PIPX_HOME=/x", "PIPX_DEFAULT_PYTHON=/x/python"} {
		r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: dir, Env: append(env, v)})
		unresolved(t, argv, r, err, "the environment variable "+v[:strings.IndexByte(v, '=')]+" is set")
	}
	files := []string{filepath.Join(home, ".pip", "pip.conf"), filepath.Join(home, ".config", "pip", "pip.conf"), filepath.Join(dir, "xdg", "pip", "pip.conf")}
	for _, f := range files {
		write(t, f, "[global]\ntimeout = 60\ndisable-pip-version-check = true\n", 0o644)
	}
	resolved(t, Launch{Argv: argv, Dir: dir, Env: env}, want, "uv.lock")
	for _, f := range files {
		write(t, f, "[global]\nindex-url = https://evil.example/simple\n", 0o644)
		r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: dir, Env: env})
		unresolved(t, argv, r, err, "pip's configuration "+f+" sets index-url")
		write(t, f, "[install]\nfind-links = /x\n", 0o644)
		r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: dir, Env: env})
		unresolved(t, argv, r, err, "sets find-links")
		write(t, f, "", 0o644)
	}
	// uvx reads neither.
	resolved(t, Launch{Argv: []string{"uvx", "mcp-server-fetch==0.6.2"}, Dir: dir, Env: append(env, "PIP_INDEX_URL=x")}, want, "uv.lock")
	// Another certificate authority lets a proxy answer for the index.
	ca := filepath.Join(dir, "ca.pem")
	for _, a := range [][]string{argv, {"uvx", "mcp-server-fetch==0.6.2"}} {
		for _, v := range []string{"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"} {
			r, err := Resolve(context.Background(), Launch{Argv: a, Dir: dir, Env: append(env, v+"="+ca)})
			unresolved(t, a, r, err, "the environment variable "+v+" is set")
		}
		// The system's own trust store is harmless.
		resolved(t, Launch{Argv: a, Dir: dir, Env: append(env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt", "UV_SYSTEM_CERTS=1")}, want, "uv.lock")
	}
	resolved(t, Launch{Argv: argv, Dir: dir, Env: append(env, "PIP_CERT=/etc/ssl/certs/ca-certificates.crt")}, want, "uv.lock")
	r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: dir, Env: append(env, "PIP_CERT="+ca)})
	unresolved(t, argv, r, err, "the environment variable PIP_CERT is set")
	write(t, files[0], "[global]\ncert = "+ca+"\n", 0o644)
	r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: dir, Env: env})
	unresolved(t, argv, r, err, "sets cert")
}

// Container CLIs: variables, global options and docker's current context
// that choose another daemon leave even a digest-pinned image
// unresolved.
func TestContainerConfig(t *testing.T) {
	home := t.TempDir()
	img := "ghcr.io/acme/weather@sha256:" + hexA
	want := etdi.Artifact{Type: etdi.ArtifactOCI, Name: "ghcr.io/acme/weather", Version: "", Digest: "sha256:" + hexA}
	env := []string{"PATH=", "HOME=" + home, "DOCKER_CLI_HINTS=false"}
	resolved(t, Launch{Argv: []string{"docker", "run", "-i", img}, Env: env}, want, "image reference")
	for _, v := range []string{"DOCKER_HOST=ssh://evil", "DOCKER_CONTEXT=evil", "DOCKER_CONFIG=/x", "DOCKER_TLS_VERIFY=1",
		"DOCKER_DEFAULT_PLATFORM=linux/arm64", "CONTAINER_HOST=ssh://evil", "CONTAINERS_CONF=/x", "CONTAINERD_ADDRESS=/x",
		"CONTAINERD_NAMESPACE=x", "NERDCTL_TOML=/x", "REGISTRIES_CONFIG_PATH=/x"} {
		for _, prog := range []string{"docker", "podman", "nerdctl"} {
			argv := []string{prog, "run", img}
			r, err := Resolve(context.Background(), Launch{Argv: argv, Env: append(env, v)})
			unresolved(t, argv, r, err, "the environment variable "+v[:strings.IndexByte(v, '=')]+" is set")
		}
	}
	for _, g := range [][]string{{"-H", "ssh://evil"}, {"--host=tcp://x"}, {"--context", "evil"}, {"-c", "evil"}, {"--config", "/x"},
		{"--tlsverify"}, {"--url", "x"}, {"--connection", "x"}, {"--remote"}, {"-n", "x"}, {"--address", "x"}} {
		argv := append(append([]string{"docker"}, g...), "run", img)
		r, err := Resolve(context.Background(), Launch{Argv: argv, Env: env})
		unresolved(t, argv, r, err, "before run may choose another daemon")
	}
	resolved(t, Launch{Argv: []string{"docker", "-D", "-l", "debug", "--log-level=warn", "container", "run", img}, Env: env}, want, "image reference")

	cfg := filepath.Join(home, ".docker", "config.json")
	for _, c := range []string{`{"auths":{}}`, `{"currentContext":"default"}`, `{"currentContext":""}`} {
		write(t, cfg, c, 0o600)
		resolved(t, Launch{Argv: []string{"docker", "run", img}, Env: env}, want, "image reference")
	}
	write(t, cfg, `{"currentContext":"evil"}`, 0o600)
	argv := []string{"docker", "run", img}
	r, err := Resolve(context.Background(), Launch{Argv: argv, Env: env})
	unresolved(t, argv, r, err, cfg+" makes evil docker's current context")
	// podman does not read docker's configuration.
	resolved(t, Launch{Argv: []string{"podman", "run", img}, Env: env}, want, "image reference")
	write(t, cfg, `{`, 0o600)
	r, err = Resolve(context.Background(), Launch{Argv: argv, Env: env})
	unresolved(t, argv, r, err, "cannot read "+cfg)
}

// npm reads ~/.npmrc and runs what the npx cache holds from HOME: a HOME
// in the project (or the project itself, or a link to it) is the
// repository's, and refused; one outside it is read as usual.
func TestNPMHomeInProject(t *testing.T) {
	proj, home, want := npmProject(t)
	argv := []string{"npx", "--no-install", "srv@1.0.0"}
	resolved(t, Launch{Argv: argv, Dir: proj, Env: []string{"PATH=", "HOME=" + home}}, want, "package-lock.json")
	link := filepath.Join(home, "link")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{proj, filepath.Join(proj, ".home"), filepath.Join(proj, "node_modules"), link} {
		for _, dir := range []string{proj, filepath.Join(proj, "sub")} {
			r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: dir, Env: []string{"PATH=", "HOME=" + h}})
			unresolved(t, argv, r, err, "HOME "+h+" is inside the project")
		}
	}
}

// npx found nowhere on the launch's PATH while a node is: which npm that
// node runs is not known. A node found through a relative PATH entry
// is refused too.
func TestNPMRuntimeLookups(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("npx runs the node beside it on Windows")
	}
	proj, home, want := npmProject(t)
	argv := []string{"npx", "--no-install", "srv@1.0.0"}
	bin := filepath.Join(t.TempDir(), "bin")
	write(t, filepath.Join(bin, "node"), "#!/bin/sh\n", 0o755)
	r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: []string{"PATH=" + bin, "HOME=" + home}})
	unresolved(t, argv, r, err, "npx is not found on the launch's PATH, but node is")
	write(t, filepath.Join(proj, "tools", "node"), "#!/bin/sh\n", 0o755)
	r, err = Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: []string{"PATH=tools", "HOME=" + home}})
	unresolved(t, argv, r, err, "relative PATH entry")
	// Neither: nothing on the launch's PATH decides.
	resolved(t, Launch{Argv: argv, Dir: proj, Env: []string{"PATH=", "HOME=" + home}}, want, "package-lock.json")
}
