package artifact

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/artifactsyntax"
)

// The configuration a runner reads besides its command line can replace
// what it runs: npm's script-shell starts the package's program through
// another program, a registry or cache serves another package, a docker
// context talks to another daemon. launchConfig reads that configuration
// where the runner reads it (the launch's environment, working directory
// and home) and returns why the launch is not resolved when a setting is
// not known to leave what runs unchanged. Each tool's settings are judged
// against an allow-list of harmless ones: a setting not on it, or one
// this version of etdi does not know, makes the launch unresolved (it
// fails closed). SPEC.md §4.1 lists the settings and how they were read
// from each tool.
func launchConfig(p *plan, env *environ, dir string) string {
	switch p.kind {
	case etdi.ArtifactNPM:
		if why := npmConfig(p, env, dir); why != "" {
			return why
		}
		if p.runner == "bunx" || p.runner == "bun x" {
			return bunConfig(env, dir)
		}
	case etdi.ArtifactPyPI:
		if why := pythonCAConfig(env); why != "" {
			return why
		}
		if p.runner == "pipx run" {
			return pipConfig(env)
		}
		return uvConfig(env, dir, false)
	case etdi.ArtifactOCI:
		return containerConfig(p, env)
	case etdi.ArtifactFile:
		if p.runner == "uv run" {
			if why := pythonCAConfig(env); why != "" {
				return why
			}
			return uvConfig(env, dir, true)
		}
	}
	return ""
}

// npmHarmless are the npm settings (@npmcli/config definitions, npm
// 11.x) known to leave what npm exec and npx start unchanged: they change
// npm's output and logging, what npm writes when it saves or publishes,
// how patiently it fetches, the credentials and client certificates it
// presents. Every other
// setting, and every setting npm does not know, is taken as one that may
// change the program, its interpreter, its environment, or where its
// package comes from: script-shell, shell, node-options, call, package,
// registry and @scope:registry, replace-registry-host, userconfig,
// globalconfig, prefix, global, location, cache, workspace, workspaces,
// tag, before, git, node-gyp, strict-ssl, ca, cafile and the like. A
// proxy is harmless only while npm trusts no authority of the
// configuration's: with ca or cafile, the proxy can answer for the
// registry (a cafile naming the system's own trust store is harmless).
//
// yes is harmless: npm exec reads it only to decide whether to ask before
// installing the package the command line names (a host starts servers
// without a terminal, where npm installs without asking anyway).
// ignore-scripts only runs fewer scripts. nodedir names the headers a
// native add-on of a dependency is built against; dependencies are not
// covered (package documentation). The pnpm settings at the end are
// unknown to npm, which ignores them, and common in projects' .npmrc.
var npmHarmless = setOf("audit", "audit-level", "fund", "color", "loglevel", "progress", "unicode", "update-notifier",
	"timing", "logs-dir", "logs-max", "json", "parseable", "long", "heading", "usage", "umask", "yes", "ignore-scripts",
	"foreground-scripts", "engine-strict", "strict-peer-deps", "legacy-peer-deps", "prefer-dedupe", "package-lock",
	"package-lock-only", "lockfile-version", "format-package-lock", "omit-lockfile-registry-resolved", "save",
	"save-exact", "save-prefix", "save-dev", "save-optional", "save-peer", "save-prod", "save-bundle",
	"init-author-name", "init-author-email", "init-author-url", "init-license", "init-version", "init-type",
	"init-private", "init.author.name", "init.author.email", "init.author.url", "init.license", "init.version",
	"sign-git-commit", "sign-git-tag", "git-tag-version", "tag-version-prefix", "message", "preid", "access",
	"provenance", "otp", "email", "auth-type", "_auth", "always-auth", "fetch-retries", "fetch-retry-factor",
	"fetch-retry-maxtimeout", "fetch-retry-mintimeout", "fetch-timeout", "maxsockets", "offline", "prefer-offline",
	"prefer-online", "cache-max", "cache-min", "proxy", "https-proxy", "noproxy", "local-address", "cert", "key",
	"nodedir", "strict-allow-scripts", "allow-git", "allow-remote", "allow-file", "allow-directory",
	"auto-install-peers", "shamefully-hoist", "strict-peer-dependencies", "node-linker", "public-hoist-pattern",
	"hoist-pattern", "link-workspace-packages", "prefer-workspace-packages", "resolution-mode")

// npmNerfDarts are the settings npm reads under a registry's nerf dart
// (//registry.example/:_authToken): credentials and client certificates
// for that registry, which do not choose the registry.
var npmNerfDarts = setOf("_auth", "_authToken", "_password", "certfile", "email", "keyfile", "username", "always-auth")

// npmDefaultRegistry is npm's default registry: setting it is harmless.
var npmDefaultRegistry = setOf("https://registry.npmjs.org/", "https://registry.npmjs.org")

// npmSystemCAFiles are the systems' own trust stores (Debian, Ubuntu and
// Alpine; Fedora and RHEL; SUSE; macOS and BSD): a cafile naming one
// trusts the authorities the system trusts, which only its administrator
// changes.
var npmSystemCAFiles = setOf("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/ca-bundle.pem", "/etc/ssl/cert.pem")

// npmEffect says, for the settings that most often swap what runs, how.
var npmEffect = map[string]string{
	"script-shell": "npm starts the package's program through that shell, which can run any program instead",
	"shell":        "npm runs that program as its shell",
	"node-options": "npm gives it to node as NODE_OPTIONS, which can load other code into the server",
	"registry":     "npm installs packages from that registry",
	"userconfig":   "npm reads its user configuration from that file instead",
	"globalconfig": "npm reads its global configuration from that file instead",
	"prefix":       "npm runs packages and programs installed under that prefix and reads its global configuration there",
	"cache":        "npx runs packages from that cache, whose content nothing checks",
	"call":         "npm runs that command instead of the package",
	"package":      "npm installs that package and runs a command from it",
	"global":       "npm runs the global install instead of the project's",
	"location":     "npm may run the global install instead of the project's",
	"workspace":    "npm runs the command in a workspace, with its own packages",
	"workspaces":   "npm runs the command in the workspaces, with their own packages",
	"tag":          "npm picks another version of the package",
	"git":          "npm runs that program for git",
	"ca":           "npm trusts that certificate authority, whose holder (a proxy) can serve another package under the registry's name",
	"cafile":       "npm trusts those certificate authorities, whose holder (a proxy) can serve another package under the registry's name",
}

// npmSettingWhy says why an npm setting read from where (a file or an
// environment variable) makes the launch unresolved; "" if it is
// harmless.
func npmSettingWhy(where, key, value string) string {
	switch {
	case npmHarmless[key]:
		return ""
	case key == "registry" && npmDefaultRegistry[value]:
		return ""
	case key == "cafile" && runtime.GOOS != "windows" && npmSystemCAFiles[value]:
		return ""
	case strings.HasPrefix(key, "//"):
		if i := strings.LastIndex(key, ":"); i > 0 && npmNerfDarts[key[i+1:]] {
			return ""
		}
	}
	effect := npmEffect[key]
	switch {
	case effect != "":
	case strings.HasSuffix(key, ":registry"):
		effect = "npm installs that scope's packages from that registry"
	default:
		effect = "it is not an npm setting known to leave what runs unchanged"
	}
	return where + " sets " + shown(key) + ": " + effect + ", so what runs may not be the package etdi resolves; " +
		"remove the setting, or launch the server where it does not apply"
}

// npmConfig checks the npm configuration of an npm runner: the command
// line (checked as it is parsed), then, as @npmcli/config loads them, the
// environment (npm_config_* in any case), the project's .npmrc, the
// user's, the global one and npm's builtin one. It also checks what else
// decides the program npm exec starts: the variables that choose npm's
// global prefix and (on Windows) its shell.
func npmConfig(p *plan, env *environ, dir string) string {
	if why := npmEnvWhy(env); why != "" {
		return why
	}
	if why := npmRuntime(p, env, dir); why != "" {
		return why
	}
	// Project: the directory npm takes as the project root is the nearest
	// holding package.json or node_modules, or a workspace root above it;
	// every directory that may be it is read (more, never fewer).
	var why string
	parents(dir, func(d string) bool {
		if d == within(dir, ".") || exists(filepath.Join(d, "package.json")) || exists(filepath.Join(d, "node_modules")) {
			why = npmrcWhy(filepath.Join(d, ".npmrc"), "the project's .npmrc", env)
		}
		return why != ""
	})
	if why != "" {
		return why
	}
	home := npmHome(env)
	if why := npmHomeInProject(home, env, dir); why != "" {
		return why
	}
	if home != "" {
		if why := npmrcWhy(filepath.Join(home, ".npmrc"), "the user's .npmrc", env); why != "" {
			return why
		}
	}
	if why := npmGlobalWhy(env, dir); why != "" {
		return why
	}
	return npmBuiltinWhy(p, env, dir)
}

// npmEnvWhy checks the environment variables that configure npm
// (npm_config_*) or choose its global prefix or (on Windows) its shell.
func npmEnvWhy(env *environ) string {
	for _, kv := range env.all() {
		name, value, _ := strings.Cut(kv, "=")
		if value == "" {
			continue // npm skips empty values
		}
		if len(name) > len("npm_config_") && strings.EqualFold(name[:len("npm_config_")], "npm_config_") {
			key := name[len("npm_config_"):]
			if !strings.HasPrefix(key, "//") {
				key = strings.ToLower(key[:1] + strings.ReplaceAll(key[1:], "_", "-"))
			}
			if why := npmSettingWhy("the environment variable "+shown(name), key, value); why != "" {
				return why
			}
			continue
		}
		switch {
		case sameEnvName(name, "PREFIX") || runtime.GOOS != "windows" && name == "DESTDIR":
			return "the environment variable " + name + " is set: npm takes it as its global prefix, from which npx runs " +
				"programs and reads its global configuration, so what runs may not be the package etdi resolves; " +
				"start the server without it"
		case runtime.GOOS == "windows" && strings.EqualFold(name, "ComSpec") && !isSystemCmd(value, env):
			return "the environment variable ComSpec names another program than the system's cmd.exe: npm starts " +
				"the package's program through it; start the server without it"
		}
	}
	return ""
}

// npmGlobalWhy checks the global npmrc. The global prefix is that of the
// node npm runs on (npx and npm are "#!/usr/bin/env node" scripts): /usr
// for /usr/bin/node, the directory of node.exe on Windows.
func npmGlobalWhy(env *environ, dir string) string {
	node, nwhy := lookPath("node", env, dir)
	if nwhy != "" {
		return ""
	}
	real, err := filepath.EvalSymlinks(node)
	if err != nil {
		return ""
	}
	prefix := filepath.Dir(real)
	if runtime.GOOS != "windows" {
		prefix = filepath.Dir(prefix)
	}
	return npmrcWhy(filepath.Join(prefix, "etc", "npmrc"), "the global npmrc", env)
}

// npmBuiltinWhy checks the builtin configuration of the npm that runs the
// plan p: the npmrc file of npm's own package.
func npmBuiltinWhy(p *plan, env *environ, dir string) string {
	prog := "npx"
	switch p.runner {
	case "npm exec":
		prog = "npm"
	case "bunx", "bun x":
		return ""
	}
	runner, rwhy := lookPath(prog, env, dir)
	if rwhy != "" {
		return ""
	}
	real, err := filepath.EvalSymlinks(runner)
	if err != nil {
		return ""
	}
	var builtin []string
	if filepath.Base(filepath.Dir(real)) == "bin" {
		builtin = append(builtin, filepath.Join(filepath.Dir(filepath.Dir(real)), "npmrc"))
	}
	if runtime.GOOS == "windows" {
		builtin = append(builtin, filepath.Join(filepath.Dir(real), "node_modules", "npm", "npmrc"))
	}
	for _, b := range builtin {
		if why := npmrcWhy(b, "npm's builtin npmrc", env); why != "" {
			return why
		}
	}
	return ""
}

// isSystemCmd reports whether a ComSpec value is %SystemRoot%\System32\cmd.exe.
func isSystemCmd(v string, env *environ) bool {
	root := env.get("SystemRoot")
	if root == "" {
		root = `C:\Windows`
	}
	return strings.EqualFold(filepath.Clean(v), filepath.Join(root, "System32", "cmd.exe"))
}

// npmHome is the home directory npm reads ~/.npmrc from: $HOME, else the
// user's home as the system records it.
func npmHome(env *environ) string {
	if h := env.get("HOME"); h != "" {
		return h
	}
	if h := env.home(); h != "" {
		return h
	}
	if u, err := user.Current(); err == nil {
		return u.HomeDir
	}
	return ""
}

// npmrcWhy checks one npm configuration file; what names it in a
// message. A file that is absent is fine; one that cannot be read, is
// not a regular file or is larger than 1 MiB makes the launch unresolved
// (npm would read what etdi did not).
func npmrcWhy(path, what string, env *environ) string {
	entries, why := readINI(path, what)
	if why != "" {
		return why
	}
	for _, e := range entries {
		where := what + " " + shownPath(path)
		if e.key == "" || e.section != "" {
			return where + " has a [section], which npm reads as a setting of that name; remove it"
		}
		key := envReplace(e.key, env)
		if why := npmSettingWhy(where, key, envReplace(e.value, env)); why != "" {
			return why
		}
	}
	return ""
}

// readINI reads an ini configuration file: nothing when it does not
// exist, else its entries, bounded.
func readINI(path, what string) ([]iniEntry, string) {
	b, err := readConfigFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ""
		}
		return nil, "cannot read " + what + " " + shownPath(path) + ": " + err.Error() + "; the runner would read it"
	}
	entries, ok := parseINI(b)
	if !ok {
		return nil, what + " " + shownPath(path) + " has more than " + itoa(maxINIEntries) + " settings"
	}
	return entries, ""
}

// readConfigFile reads a configuration file of at most maxSmall bytes;
// an error wrapping fs.ErrNotExist when there is none.
func readConfigFile(path string) ([]byte, error) {
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, err
	}
	return readBounded(path, maxSmall)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// bunHarmlessEnv are the BUN_* variables known to leave what bunx runs
// unchanged: BUN_INSTALL names bun's own installation directory, which
// the bun installer sets in every bun user's profile.
var bunHarmlessEnv = setOf("BUN_INSTALL")

// bunConfig checks what bunx reads besides npm's configuration (which it
// also reads, and which npmConfig checked): BUN_* variables other than
// bunHarmlessEnv (BUN_CONFIG_REGISTRY, BUN_INSTALL_CACHE_DIR,
// BUN_OPTIONS, ...), and any bunfig.toml, in the working directory or
// above, the system's or the user's ($XDG_CONFIG_HOME/.bunfig.toml,
// ~/.bunfig.toml), or .env file bun loads from the working directory.
// bunfig.toml can preload scripts, replace the registry and cache, and
// make bun run node scripts itself, and a .env file can set any variable:
// none is read, and its presence alone makes the launch unresolved.
func bunConfig(env *environ, dir string) string {
	for _, kv := range env.all() {
		name, value, _ := strings.Cut(kv, "=")
		if value != "" && envPrefix(name, "BUN_") && !bunHarmlessEnv[envName(name)] {
			return "the environment variable " + shown(name) + " is set: it can change what bunx installs or runs; start the server without it"
		}
	}
	var files []string
	parents(dir, func(d string) bool {
		files = append(files, filepath.Join(d, "bunfig.toml"))
		return false
	})
	// bun loads these from the working directory into its environment,
	// where they can set any variable above.
	for _, n := range []string{".env", ".env.local", ".env.development", ".env.production", ".env.test",
		".env.development.local", ".env.production.local", ".env.test.local"} {
		files = append(files, within(dir, n))
	}
	if runtime.GOOS != "windows" {
		files = append(files, "/etc/bunfig.toml")
	}
	if x := env.get("XDG_CONFIG_HOME"); x != "" {
		files = append(files, filepath.Join(x, ".bunfig.toml"))
	}
	if h := env.home(); h != "" {
		files = append(files, filepath.Join(h, ".bunfig.toml"))
	}
	for _, f := range files {
		if exists(f) {
			return shownPath(f) + " exists: bun reads it, and it can preload code, replace the registry, set variables or run " +
				"the package with another runtime, so what bunx runs may not be the package etdi resolves; run the package with npx"
		}
	}
	return ""
}

// envPrefix reports whether an environment variable's name starts with
// prefix, in any case on Windows (where names are case-insensitive).
func envPrefix(name, prefix string) bool {
	if runtime.GOOS == "windows" {
		return len(name) >= len(prefix) && strings.EqualFold(name[:len(prefix)], prefix)
	}
	return strings.HasPrefix(name, prefix)
}

// envName is a variable's name as it is compared with a list: in upper
// case on Windows.
func envName(name string) string {
	if runtime.GOOS == "windows" {
		return strings.ToUpper(name)
	}
	return name
}

// uvHarmlessEnv are the UV_* variables (uv 0.9 environment reference)
// known to leave what uvx installs and runs unchanged: output, progress,
// concurrency, timeouts, how files are linked and compiled, offline mode,
// and turning configuration files off. Every other UV_* variable (index
// and find-links settings such as UV_INDEX_URL, UV_EXTRA_INDEX_URL,
// UV_INDEX, UV_DEFAULT_INDEX, UV_FIND_LINKS; UV_PYTHON and the Python
// install settings; UV_TOOL_DIR, UV_TOOL_BIN_DIR, UV_CACHE_DIR;
// UV_CONFIG_FILE; constraints, overrides, insecure hosts ...) makes the
// launch unresolved.
var uvHarmlessEnv = setOf("UV_NO_PROGRESS", "UV_CONCURRENT_DOWNLOADS", "UV_CONCURRENT_BUILDS", "UV_CONCURRENT_INSTALLS",
	"UV_LINK_MODE", "UV_COMPILE_BYTECODE", "UV_OFFLINE", "UV_HTTP_TIMEOUT", "UV_REQUEST_TIMEOUT", "UV_HTTP_RETRIES",
	"UV_NO_WRAP", "UV_LOG_CONTEXT", "UV_NO_CONFIG", "UV_NO_ENV_FILE", "UV_PREVIEW", "UV_NATIVE_TLS", "UV_SYSTEM_CERTS")

// uvHarmlessSettings are the uv.toml / [tool.uv] settings known to leave
// what uvx installs and runs unchanged: the same kinds as uvHarmlessEnv,
// and settings that describe the project itself (its dev dependencies,
// groups, workspace members, conflicts, environments), which uvx does not
// install. Every other setting (index, index-url, extra-index-url,
// find-links, python-*, cache-dir, tool-dir, sources, overrides,
// constraints, no-binary, ...) makes the launch unresolved.
var uvHarmlessSettings = setOf("concurrent-downloads", "concurrent-builds", "concurrent-installs", "link-mode",
	"compile-bytecode", "offline", "preview", "native-tls", "system-certs", "required-version", "dev-dependencies",
	"default-groups", "package", "managed", "workspace", "conflicts", "environments", "required-environments",
	"cache-keys")

// uvConfig checks what uv reads: UV_* variables, and unless configuration
// files are turned off (UV_NO_CONFIG), the user's uv.toml
// ($XDG_CONFIG_HOME/uv/uv.toml, ~/.config/uv/uv.toml, %APPDATA%\uv\uv.toml)
// and the system's (each $XDG_CONFIG_DIRS/uv/uv.toml, /etc/uv/uv.toml,
// %PROGRAMDATA%\uv\uv.toml; uv takes the first, all are read here), and
// with project set (uv run; tool commands ignore project files) every
// uv.toml and pyproject.toml [tool.uv] from the working directory up (uv
// takes the nearest).
func uvConfig(env *environ, dir string, project bool) string {
	for _, kv := range env.all() {
		name, value, _ := strings.Cut(kv, "=")
		if value != "" && envPrefix(name, "UV_") && !uvHarmlessEnv[envName(name)] {
			return "the environment variable " + shown(name) + " is set: it can change where uv installs the package from " +
				"or what it runs it with, so what runs may not be the package etdi resolves; start the server without it"
		}
	}
	if v := env.get("UV_NO_CONFIG"); v != "" && v != "0" && !strings.EqualFold(v, "false") {
		return ""
	}
	type file struct{ path, what string }
	var files []file
	if project {
		parents(dir, func(d string) bool {
			files = append(files, file{filepath.Join(d, "uv.toml"), "uv.toml"}, file{filepath.Join(d, "pyproject.toml"), "pyproject.toml"})
			return false
		})
	}
	home := env.home()
	switch x := env.get("XDG_CONFIG_HOME"); {
	case x != "":
		files = append(files, file{filepath.Join(x, "uv", "uv.toml"), "uv.toml"})
	case home != "":
		files = append(files, file{filepath.Join(home, ".config", "uv", "uv.toml"), "uv.toml"})
	}
	if runtime.GOOS == "windows" {
		for _, v := range []string{"APPDATA", "PROGRAMDATA"} {
			if a := env.get(v); a != "" {
				files = append(files, file{filepath.Join(a, "uv", "uv.toml"), "uv.toml"})
			}
		}
	}
	sys := []string{"/etc"}
	if x := env.get("XDG_CONFIG_DIRS"); x != "" {
		sys = append(filepath.SplitList(x), sys...)
	}
	for _, s := range sys {
		if filepath.IsAbs(s) {
			files = append(files, file{filepath.Join(s, "uv", "uv.toml"), "uv.toml"})
		}
	}
	for _, f := range files {
		b, err := readConfigFile(f.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "cannot read " + shownPath(f.path) + ": " + err.Error() + "; uv would read it"
		}
		keys, err := tomlKeys(b)
		if err != nil {
			return "cannot read " + shownPath(f.path) + " (" + err.Error() + "), which uv reads for its settings"
		}
		for _, k := range keys {
			setting := k
			if f.what == "pyproject.toml" {
				rest, ok := strings.CutPrefix(k, "tool.uv.")
				if !ok {
					continue
				}
				setting = rest
			}
			top, _, _ := strings.Cut(setting, ".")
			if !uvHarmlessSettings[top] {
				return shownPath(f.path) + " sets " + shown(setting) + " for uv: it is not a setting known to leave what uv " +
					"installs and runs unchanged, so what runs may not be the package etdi resolves; remove it, or launch the server elsewhere"
			}
		}
	}
	return ""
}

// tomlKeys are the full keys of every value of a TOML document
// ("tool.uv.index-url", "index" for [[index]]), read with the bounded
// reader of uv.lock.
func tomlKeys(b []byte) ([]string, error) {
	t := &toml{s: string(b), line: 1}
	var keys []string
	table := ""
	for {
		t.space(true)
		if t.i >= len(t.s) {
			return keys, nil
		}
		if t.s[t.i] == '[' {
			n := 1
			if strings.HasPrefix(t.s[t.i:], "[[") {
				n = 2
			}
			t.i += n
			t.space(false)
			key, err := t.key()
			if err != nil {
				return nil, err
			}
			t.space(false)
			if !strings.HasPrefix(t.s[t.i:], "]]"[:n]) {
				return nil, t.errf("unterminated table header")
			}
			t.i += n
			table = key
			keys = append(keys, table)
		} else {
			key, err := t.key()
			if err != nil {
				return nil, err
			}
			t.space(false)
			if !t.eat('=') {
				return nil, t.errf("want = after a key")
			}
			t.space(false)
			if _, err := t.value(false, 0); err != nil {
				return nil, err
			}
			if table != "" {
				key = table + "." + key
			}
			keys = append(keys, key)
		}
		if len(keys) > maxINIEntries {
			return nil, errors.New("too many settings")
		}
		t.space(false)
		if t.i < len(t.s) && t.s[t.i] != '\n' && t.s[t.i] != '\r' {
			return nil, t.errf("want a new line")
		}
	}
}

// pipHarmlessEnv are the PIP_* variables (pip 24 configuration: every
// option as PIP_<OPTION>) known to leave what pip installs unchanged.
// Every other PIP_* (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS,
// PIP_CONFIG_FILE, PIP_TRUSTED_HOST, PIP_CACHE_DIR, PIP_NO_BINARY, ...)
// and every PIPX_* (PIPX_HOME, PIPX_BIN_DIR, PIPX_DEFAULT_PYTHON, ...)
// makes a pipx launch unresolved.
var pipHarmlessEnv = setOf("PIP_DISABLE_PIP_VERSION_CHECK", "PIP_NO_COLOR", "PIP_PROGRESS_BAR", "PIP_QUIET", "PIP_VERBOSE",
	"PIP_NO_INPUT", "PIP_DEFAULT_TIMEOUT", "PIP_TIMEOUT", "PIP_RETRIES", "PIP_ROOT_USER_ACTION", "PIP_NO_CACHE_DIR")

// pipHarmlessSettings are the pip.conf settings that match pipHarmlessEnv.
var pipHarmlessSettings = setOf("disable-pip-version-check", "no-color", "progress-bar", "quiet", "verbose", "no-input",
	"default-timeout", "timeout", "retries", "root-user-action", "no-cache-dir")

// pipConfig checks what pipx run reads: PIPX_* and PIP_* variables, and
// pip's configuration files (pip's own list: the site-wide
// $XDG_CONFIG_DIRS/pip/pip.conf and /etc/pip.conf, the user's
// ~/.pip/pip.conf and $XDG_CONFIG_HOME/pip/pip.conf or
// ~/.config/pip/pip.conf, %APPDATA%\pip\pip.ini and
// %ProgramData%\pip\pip.ini on Windows).
func pipConfig(env *environ) string {
	for _, kv := range env.all() {
		name, value, _ := strings.Cut(kv, "=")
		if value == "" {
			continue
		}
		if envName(name) == "PIP_CERT" && npmSystemCAFiles[value] {
			continue // the system's own trust store
		}
		if envPrefix(name, "PIPX_") || envPrefix(name, "PIP_") && !pipHarmlessEnv[envName(name)] {
			return "the environment variable " + shown(name) + " is set: it can change where pipx installs the package from " +
				"or what it runs it with, so what runs may not be the package etdi resolves; start the server without it"
		}
	}
	var files []string
	sys := []string{"/etc/xdg"}
	if x := env.get("XDG_CONFIG_DIRS"); x != "" {
		sys = filepath.SplitList(x)
	}
	for _, s := range sys {
		if filepath.IsAbs(s) {
			files = append(files, filepath.Join(s, "pip", "pip.conf"))
		}
	}
	files = append(files, "/etc/pip.conf")
	if h := env.home(); h != "" {
		files = append(files, filepath.Join(h, ".pip", "pip.conf"))
		if env.get("XDG_CONFIG_HOME") == "" {
			files = append(files, filepath.Join(h, ".config", "pip", "pip.conf"))
		}
	}
	if x := env.get("XDG_CONFIG_HOME"); x != "" {
		files = append(files, filepath.Join(x, "pip", "pip.conf"))
	}
	if runtime.GOOS == "windows" {
		for _, v := range []string{"APPDATA", "ProgramData"} {
			if a := env.get(v); a != "" {
				files = append(files, filepath.Join(a, "pip", "pip.ini"))
			}
		}
	}
	for _, f := range files {
		entries, why := readINI(f, "pip's configuration")
		if why != "" {
			return why
		}
		for _, e := range entries {
			if e.key == "" {
				continue // a [section]: pip reads [global], [install], ...
			}
			if !pipHarmlessSettings[e.key] && !(e.key == "cert" && npmSystemCAFiles[e.value]) {
				return "pip's configuration " + shownPath(f) + " sets " + shown(e.key) + ": it is not a setting known to leave " +
					"what pip installs unchanged, so what pipx runs may not be the package etdi resolves; remove it, or run the package with uvx"
			}
		}
	}
	return ""
}

// containerHarmlessEnv are the variables of the container CLIs known to
// leave which daemon, configuration and image they use unchanged.
var containerHarmlessEnv = setOf("DOCKER_CLI_HINTS", "DOCKER_BUILDKIT", "DOCKER_HIDE_LEGACY_COMMANDS", "DOCKER_CLI_EXPERIMENTAL",
	"DOCKER_SCAN_SUGGEST", "DOCKER_API_VERSION")

// containerEnv are the prefixes and names of variables that choose the
// daemon, configuration, registry or platform of docker (DOCKER_HOST,
// DOCKER_CONTEXT, DOCKER_CONFIG, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH,
// DOCKER_DEFAULT_PLATFORM, DOCKER_CONTENT_TRUST_SERVER ...: every
// DOCKER_* but containerHarmlessEnv), podman (CONTAINER_HOST,
// CONTAINER_CONNECTION, CONTAINERS_CONF, CONTAINERS_REGISTRIES_CONF,
// CONTAINERS_STORAGE_CONF, REGISTRIES_CONFIG_PATH) and nerdctl
// (CONTAINERD_ADDRESS, CONTAINERD_NAMESPACE, CONTAINERD_SNAPSHOTTER,
// NERDCTL_TOML).
var containerEnvPrefixes = []string{"DOCKER_", "CONTAINER_", "CONTAINERS_", "CONTAINERD_", "NERDCTL_", "REGISTRIES_CONFIG_PATH"}

// containerConfig checks what a container CLI reads besides its command
// line (whose global options parse checked): variables that choose
// another daemon, configuration or platform, and docker's current
// context in $HOME/.docker/config.json. A daemon other than the default
// one decides what an image name, even one pinned by digest, runs.
func containerConfig(p *plan, env *environ) string {
	for _, kv := range env.all() {
		name, value, _ := strings.Cut(kv, "=")
		if value == "" || containerHarmlessEnv[envName(name)] {
			continue
		}
		for _, pre := range containerEnvPrefixes {
			if envPrefix(name, pre) {
				return "the environment variable " + shown(name) + " is set: it can choose another daemon, configuration or " +
					"platform for " + progName(p.prog) + ", so what runs may not be the image etdi resolves; start the server without it"
			}
		}
	}
	if progName(p.prog) != "docker" {
		return ""
	}
	home := env.home()
	if home == "" {
		return ""
	}
	path := filepath.Join(home, ".docker", "config.json")
	b, err := readConfigFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		return "cannot read " + shownPath(path) + ": " + err.Error() + "; docker would read it"
	}
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return "cannot read " + shownPath(path) + " (" + err.Error() + "), which docker reads for its context"
	}
	if cfg.CurrentContext != "" && cfg.CurrentContext != "default" {
		return shownPath(path) + " makes " + shown(cfg.CurrentContext) + " docker's current context: another daemon decides " +
			"what the image runs; run docker context use default, or start the server with another configuration"
	}
	return ""
}

// setOf is a set of strings.
func setOf(s ...string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, x := range s {
		m[x] = true
	}
	return m
}

// shownPath is a path etdi built, from the launch's directory or home and
// a fixed name, for a message: as it is when printable, else a
// placeholder.
func shownPath(p string) string {
	if !artifactsyntax.Printable(p) || len(p) > 4096 {
		return "(a path not shown)"
	}
	return p
}

// npmRuntime checks, on POSIX systems, the programs npx and npm exec run
// on and through, which the launch's PATH chooses: npx and npm are
// "#!/usr/bin/env node" scripts, run by the first node on PATH, and npm
// starts the package's program with "sh -c" and a PATH made of every
// node_modules/.bin from the working directory up (npxFirst checks those)
// and every variable whose name is PATH in any case. The runner must be
// npm's own script (npx-cli.js or npm-cli.js), the node on PATH the one
// that npm ships with (PREFIX/bin/node beside PREFIX/lib/node_modules/npm,
// compared without following links within it), the first sh on PATH the
// system's /bin/sh, and no variable other than PATH itself name a PATH.
// A program of the repository's, found first, would run instead.
func npmRuntime(p *plan, env *environ, dir string) string {
	if runtime.GOOS == "windows" || p.runner != "npx" && p.runner != "npm exec" {
		return ""
	}
	for _, kv := range env.all() {
		name, value, _ := strings.Cut(kv, "=")
		if value != "" && name != "PATH" && strings.EqualFold(name, "PATH") {
			return "the environment variable " + shown(name) + " is set: npm adds its directories to PATH, where the package's " +
				"program and its shell are looked up, so what runs may not be the package etdi resolves; start the server without it"
		}
	}
	script := "npx-cli.js"
	if p.runner == "npm exec" {
		script = "npm-cli.js"
	}
	prog := p.prog
	if prog == "" {
		prog = progName(p.runner)
	}
	node, nodeWhy := lookPath("node", env, dir)
	runner, why := lookPath(prog, env, dir)
	switch {
	case why != "" && nodeWhy != "":
		// Neither: the host finds npx on its own PATH, and npx finds no
		// node to run on; unless one is found through a relative entry.
		for _, w := range []string{why, nodeWhy} {
			if strings.Contains(w, "relative PATH entry") {
				return w
			}
		}
	case why != "":
		return why + ", but node is (" + shownPath(node) + "): which npm it runs is not known; " +
			"put the directory of npm's npx first on the server's PATH"
	default:
		realRunner, err := filepath.EvalSymlinks(runner)
		if err != nil || !strings.HasSuffix(realRunner, string(filepath.Separator)+filepath.Join("node_modules", "npm", "bin", script)) {
			return shown(prog) + " is " + shownPath(runner) + ", which is not npm's own " + script + ", so what runs may not be the " +
				"package etdi resolves; start the server with the npx that npm installs"
		}
		if nodeWhy != "" {
			return nodeWhy + "; npm runs on node"
		}
		realNode, err := filepath.EvalSymlinks(node)
		if err != nil || filepath.Join(filepath.Dir(filepath.Dir(realNode)), "lib", "node_modules", "npm", "bin", script) != realRunner {
			return "the first node on the launch's PATH, " + shownPath(node) + ", is not the node that " + shownPath(runner) +
				" comes with: it runs npm and the package's program, so what runs may not be the package etdi resolves; " +
				"put the directory of " + shownPath(runner) + " first on the server's PATH"
		}
	}
	sh, why := lookPath("sh", env, dir)
	if why != "" {
		if strings.Contains(why, "relative PATH entry") {
			return why + "; npm starts the package's program with it"
		}
		return "" // npm cannot start the program
	}
	realSh, err := filepath.EvalSymlinks(sh)
	system, serr := filepath.EvalSymlinks("/bin/sh")
	if err != nil || serr != nil || realSh != system {
		return "the first sh on the launch's PATH, " + shownPath(sh) + ", is not the system's /bin/sh: npm starts the package's " +
			"program with it, so what runs may not be the package etdi resolves; remove it from the server's PATH"
	}
	return ""
}

// npmHomeInProject refuses a home (or, on Windows, a LOCALAPPDATA) inside
// the project (npm's local prefix, holding package.json or node_modules),
// unless it is the account's own home: npm reads the user's .npmrc and
// runs what the npx cache holds from there, which the repository would
// then write. The cache's content is not checked against any lockfile.
func npmHomeInProject(home string, env *environ, dir string) string {
	check := []struct{ name, path string }{{"HOME", home}}
	if runtime.GOOS == "windows" {
		check = append(check, struct{ name, path string }{"LOCALAPPDATA", env.get("LOCALAPPDATA")})
	}
	for _, c := range check {
		if c.path == "" {
			continue
		}
		p := within(dir, c.path)
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if u, err := user.Current(); err == nil && c.name == "HOME" && sameFile(p, u.HomeDir) {
			continue // the account's own home, the launch started from it
		}
		for _, top := range []string{within(dir, "."), npmRoot(dir)} {
			if !exists(filepath.Join(top, "package.json")) && !exists(filepath.Join(top, "node_modules")) {
				continue // not a project
			}
			if real, err := filepath.EvalSymlinks(top); err == nil {
				top = real
			}
			if p == top || strings.HasPrefix(p, top+string(filepath.Separator)) {
				return c.name + " " + shownPath(c.path) + " is inside the project " + shownPath(top) + ": npx runs the packages of the npm " +
					"cache there, which the repository can write, so what runs may not be the package etdi resolves; " +
					"start the server with the account's own home"
			}
		}
	}
	return ""
}

// sameFile reports whether a and b name one existing directory.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// pythonCAEnv are the variables that add certificate authorities uv
// (SSL_CERT_FILE, SSL_CERT_DIR) or pip, through requests (REQUESTS_CA_BUNDLE,
// CURL_CA_BUNDLE), trust for the index. With one, a proxy (HTTPS_PROXY,
// harmless on its own) can answer for the index and serve another
// distribution under the pinned name and version; pip's own cert setting
// (PIP_CERT, cert in pip.conf) is refused with the other PIP_* settings.
var pythonCAEnv = []string{"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"}

// pythonCAConfig says why a uv or pipx launch trusts another authority for
// its index; "".
func pythonCAConfig(env *environ) string {
	for _, name := range pythonCAEnv {
		if v := env.get(name); v != "" && !npmSystemCAFiles[v] {
			return "the environment variable " + name + " is set: uv and pip trust the certificate authorities it names, whose " +
				"holder (a proxy) can serve another package under the index's name, so what runs may not be the package etdi " +
				"resolves; start the server without it"
		}
	}
	return ""
}
