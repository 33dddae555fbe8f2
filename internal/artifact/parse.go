package artifact

import (
	"regexp"
	"strings"
	"sync"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/artifactsyntax"
	"github.com/etdi-dev/etdi/internal/cmdline"
)

// plan is what a command line runs, as far as its arguments tell: no file
// is read to make it.
type plan struct {
	kind   string // TypeNPM, TypePyPI, TypeOCI, TypeFile; "" if the arguments name nothing
	runner string // the program that decides, for messages: "npx", "uvx", "docker run", "node"
	why    string // set: Resolve cannot resolve it, and why

	// npm and pypi: the package spec.
	name    string
	version string // as written after '@' or "=="; "" when none
	exact   bool   // version is one exact version
	remote  bool   // a git or URL spec (why is set)
	npx     bool   // npx or npm exec: the npx cache applies
	cache   string // npx --cache
	command string // npx PKG: PKG as written, the command npm exec looks for first; "" with --package
	pkgCmd  string // npm exec --package=PKG -- CMD: CMD

	// oci
	prog    string // the container CLI, npx or npm as written (argv[0])
	ref     imageRef
	globals bool   // global options before run (another daemon or config)
	pull    string // --pull value

	// file
	path    string // the script or program as written
	program bool   // looked up like a program, on PATH

	env []envOp // what env wrappers change, outermost first

	// unsafe says why what runs may not be the artifact alone (a flag
	// that loads other code, another command after --package): Resolve
	// refuses it; Moving still reads the plan.
	unsafe string
}

// envOp is one change an env wrapper makes before running its program.
type envOp struct {
	clear bool   // env -i
	unset string // env -u NAME
	set   string // NAME=VALUE
	chdir string // env -C DIR, uv --directory DIR
}

// what names what a plan resolves, for messages.
func (p *plan) what() string {
	switch {
	case p.name != "":
		return p.runner + " " + shown(p.name)
	case p.kind == etdi.ArtifactOCI && p.ref.name != "":
		return p.runner + " " + shown(p.ref.String())
	case p.path != "" && p.program:
		return "program " + shown(p.path)
	case p.path != "":
		return p.runner + " " + shown(p.path)
	}
	return p.runner
}

func fail(runner, why string) plan { return plan{runner: runner, why: why} }

// progName is the base name of a program; a name with a Windows
// extension (.exe, .cmd, .bat) is without it, in lower case. Unlike
// package identity's, it keeps .ps1: a PowerShell script is not the
// program it is named after, and is resolved as the file it is.
func progName(p string) string {
	b := cmdline.Base(p)
	if n, ok := cmdline.CutExt(b, ".exe", ".cmd", ".bat"); ok && n != "" {
		return strings.ToLower(n)
	}
	return b
}

var pythonRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^python(w|[0-9]+(\.[0-9]+)?)?$`) })

// wrappers run another program or a command string, which is not
// followed: they are never taken for the server.
var wrappers = cmdline.Set("sudo", "doas", "su", "runuser", "nice", "ionice", "chrt", "taskset", "nohup", "setsid", "timeout",
	"stdbuf", "time", "xargs", "cmd", "powershell", "pwsh", "nix", "nix-shell", "corepack", "volta", "mise", "asdf",
	"direnv", "dotenv", "cross-env", "npm-run")

// parse reads a command line as a launcher would.
func parse(argv []string) plan { return parseAt(argv, 0) }

func parseAt(argv []string, depth int) plan {
	if len(argv) == 0 || argv[0] == "" {
		return fail("", "the command line is empty")
	}
	if depth > 8 {
		return fail(progName(argv[0]), "the command line nests wrappers too deep")
	}
	prog, args := progName(argv[0]), argv[1:]
	switch prog {
	case "env":
		return parseEnv(args, depth)
	case "npx", "bunx", "pnpx":
		p := npmRunner(prog, args)
		p.prog = argv[0]
		return p
	case "npm", "pnpm", "yarn", "bun":
		return parsePackageManager(prog, argv[0], args)
	case "uvx":
		return pyRunner("uvx", args, uvFlags)
	case "uv":
		return parseUV(args)
	case "pipx":
		return parsePipx(args)
	case "docker", "podman", "nerdctl":
		return containerRun(prog, argv[0], args)
	case "node", "nodejs", "tsx", "ts-node":
		return script(prog, args, nodeFlags)
	case "deno":
		return parseDeno(args)
	case "sh", "bash", "dash", "zsh", "ksh":
		return shellScript(prog, args)
	case "java":
		return javaJar(args)
	}
	// No name above is a python or a wrapper.
	switch {
	case pythonRE().MatchString(prog) || prog == "py":
		return pythonScript(prog, args)
	case wrappers[prog]:
		return fail(prog, prog+" runs another program or a command string; launch the server's program directly")
	}
	return plan{kind: etdi.ArtifactFile, runner: "program", path: argv[0], program: true}
}

// parsePackageManager reads npm exec, pnpm dlx, yarn dlx and bun x
// (a package) and bun [run] (a script); prog0 is the program as written.
func parsePackageManager(prog, prog0 string, args []string) plan {
	switch prog {
	case "npm":
		if rest, ok := cmdline.Sub(args, nil, "exec", "x"); ok {
			p := npmRunner("npm exec", rest)
			p.prog = prog0
			return p
		}
		return fail("npm", "npm runs a package.json script or an npm command, not a named package; "+
			"run the package with npx <package>@<version>, or the script with node")
	case "bun":
		if rest, ok := cmdline.Sub(args, bunFlags.Values, "x"); ok {
			return npmRunner("bun x", rest)
		}
		if rest, ok := cmdline.Sub(args, bunFlags.Values, "run"); ok {
			return script("bun", rest, bunFlags)
		}
		return script("bun", args, bunFlags)
	}
	if rest, ok := cmdline.Sub(args, nil, "dlx"); ok {
		return npmRunner(prog+" dlx", rest)
	}
	return fail(prog, prog+" runs a package.json script or a "+prog+" command, not a named package; "+
		"run the package with npx <package>@<version>, or the script with node")
}

// parsePipx reads pipx run.
func parsePipx(args []string) plan {
	if rest, ok := cmdline.Sub(args, nil, "run"); ok {
		return pyRunner("pipx run", rest, cmdline.PipxFlags)
	}
	return fail("pipx", "pipx runs an installed application here; run the package with pipx run --spec <package>==<version>")
}

// parseDeno reads deno run FILE, and deno FILE.
func parseDeno(args []string) plan {
	if rest, ok := cmdline.Sub(args, denoFlags.Values, "run"); ok {
		return script("deno run", rest, denoFlags)
	}
	if rest := cmdline.Skip(args, denoFlags); len(rest) > 0 && denoScriptRE().MatchString(rest[0]) {
		return script("deno", args, denoFlags)
	}
	return fail("deno", "deno runs a subcommand or task here, not a script; run the script with deno run <file>")
}

// parseEnv reads env [-i] [-u NAME] [-C DIR] [NAME=VALUE...] PROGRAM ARGS.
func parseEnv(args []string, depth int) plan {
	var ops []envOp
	i := 0
loop:
	for ; i < len(args); i++ {
		a := args[i]
		if op, ok := envAttached(a); ok {
			ops = append(ops, op)
			continue
		}
		switch {
		case a == "--":
			i++
			break loop
		case a == "-i" || a == "--ignore-environment" || a == "-":
			ops = append(ops, envOp{clear: true})
		case a == "-u" || a == "--unset" || a == "-C" || a == "--chdir":
			if i+1 >= len(args) {
				return fail("env", "env "+a+" has no value")
			}
			i++
			if a == "-u" || a == "--unset" {
				ops = append(ops, envOp{unset: args[i]})
			} else {
				ops = append(ops, envOp{chdir: args[i]})
			}
		case a == "-0" || a == "--null" || a == "-v" || a == "--debug":
		case strings.HasPrefix(a, "-S") || strings.HasPrefix(a, "--split-string"):
			return fail("env", "env -S splits a string into a command line; write the command line out")
		case strings.HasPrefix(a, "-"):
			return fail("env", "env option "+shown(a)+" is not understood; launch the program directly")
		case strings.Contains(a, "="):
			if strings.HasPrefix(a, "=") {
				return fail("env", "env assignment without a name")
			}
			ops = append(ops, envOp{set: a})
		default:
			break loop
		}
	}
	if i >= len(args) {
		return fail("env", "env runs no program")
	}
	p := parseAt(args[i:], depth+1)
	p.env = append(ops, p.env...)
	return p
}

// envAttached reads an env option with its value attached: --unset=NAME,
// -uNAME, --chdir=DIR, -CDIR.
func envAttached(a string) (envOp, bool) {
	switch {
	case strings.HasPrefix(a, "--unset="):
		return envOp{unset: a[len("--unset="):]}, true
	case strings.HasPrefix(a, "--chdir="):
		return envOp{chdir: a[len("--chdir="):]}, true
	case strings.HasPrefix(a, "-u") && len(a) > 2:
		return envOp{unset: a[2:]}, true
	case strings.HasPrefix(a, "-C") && len(a) > 2:
		return envOp{chdir: a[2:]}, true
	}
	return envOp{}, false
}

// npmFlags are cmdline.NPMFlags with npx -c (--call) a stop flag: it runs
// a shell command, which is not resolved. Package identity reads -c as a
// flag with a value and goes on to the package (npx -c CMD -p PKG names
// PKG), since the package is still what the server is.
var npmFlags = cmdline.NPMFlags.With(cmdline.FlagSpec{Stop: cmdline.Set("-c", "--call")})

// uvFlags are cmdline.UVFlags with uv run -m (--module) a stop flag, as an
// installed module is not resolved (package identity names it), and with
// --no-project and --no-sync known to take no value. Package identity
// does not take those two: the name it derives is the key a server's
// pins are under, and it has always named uvx --no-sync PKG uvx.
var uvFlags = cmdline.UVFlags.With(cmdline.FlagSpec{Stop: cmdline.Set("-m", "--module"), Bools: cmdline.Set("--no-project", "--no-sync")})

// Interpreter flags.
var (
	nodeFlags = cmdline.FlagSpec{Values: cmdline.Set("-r", "--require", "--import", "--loader", "--experimental-loader", "--env-file",
		"--conditions", "-C", "--input-type", "--title", "--inspect-port", "--stack-size", "--max-old-space-size"),
		Stop: cmdline.Set("-e", "--eval", "-p", "--print", "-", "--run", "-i", "--interactive")}
	bunFlags  = cmdline.FlagSpec{Values: cmdline.Set("--cwd", "-r", "--preload", "--config", "-c", "--env-file", "--tsconfig-override")}
	denoFlags = cmdline.FlagSpec{Values: cmdline.Set("-c", "--config", "--import-map", "--location", "--env-file", "--cert", "-L", "--log-level", "--seed"),
		Stop: cmdline.Set("--eval", "-e")}
)

var denoScriptRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\.(ts|tsx|js|jsx|mjs|mts|cjs|cts)$`) })

// script is an interpreter running the script that follows its flags.
func script(runner string, args []string, fs cmdline.FlagSpec) plan {
	// Before the script: a flag that loads other code makes the script
	// not all that runs; an unknown flag without "=value" may take the
	// next argument as its value (node --redirect-warnings good.js
	// evil.js runs evil.js), so where the script is cannot be told.
	unsafe := ""
	for i := 0; i < len(args) && unsafe == ""; i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || len(a) == 1 || fs.Stop[a] {
			break
		}
		k, _, hasValue := strings.Cut(a, "=")
		switch {
		case loadsCode[k]:
			unsafe = runner + " " + shown(k) + " loads other code before the script; start the script without it"
		case fs.Values[k]:
			if !hasValue {
				i++
			}
		case hasValue || harmless[k]:
		default:
			unsafe = runner + " option " + shown(k) + " is not known; write it as " + shown(k+"=VALUE") + " or leave it out"
		}
	}
	rest := cmdline.Skip(args, fs)
	if len(rest) == 0 {
		return fail(runner, runner+" runs code from its command line or standard input, not a file; put the code in a file")
	}
	return plan{kind: etdi.ArtifactFile, runner: runner, path: rest[0], unsafe: unsafe}
}

// loadsCode are interpreter flags that run code besides the script.
var loadsCode = cmdline.Set("-r", "--require", "--import", "--loader", "--experimental-loader", "--env-file", "--env-file-if-exists",
	"-C", "--conditions", "--preload", "--tsconfig-override", "--import-map", "--experimental-policy", "--snapshot-blob")

// harmless are interpreter flags known to take no value and to load no
// code.
var harmless = cmdline.Set("--enable-source-maps", "--no-warnings", "--no-deprecation", "--trace-warnings", "--trace-deprecation",
	"--trace-uncaught", "--experimental-vm-modules", "--experimental-strip-types", "--no-experimental-strip-types",
	"--experimental-transform-types", "--experimental-detect-module", "--abort-on-uncaught-exception",
	"--preserve-symlinks", "--preserve-symlinks-main", "--smol", "--no-clear-screen", "-A", "--allow-all",
	"--allow-net", "--allow-read", "--allow-write", "--allow-env", "--allow-run", "--allow-sys", "--allow-ffi", "-q", "--quiet",
	"--no-check", "--no-prompt", "--unstable", "--cached-only", "--no-remote", "--no-npm", "--no-config", "--no-lock", "--frozen")

// pythonScript reads python [flags] SCRIPT: -c and -m, and a short
// cluster holding them (-uc, -Bm), end the flags.
func pythonScript(prog string, args []string) plan {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-":
			return fail(prog, prog+" reads its program from standard input; run a script file")
		case a == "--":
			if i+1 < len(args) {
				return plan{kind: etdi.ArtifactFile, runner: prog, path: args[i+1]}
			}
		case a == "--check-hash-based-pycs":
			i++
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-"):
		cluster:
			for j := 1; j < len(a); j++ {
				switch a[j] {
				case 'c':
					return fail(prog, prog+" -c runs code from its command line; put the code in a file")
				case 'm':
					return fail(prog, prog+" -m runs an installed module, which is not resolved; run the module's file, "+
						"or the package with uvx <package>==<version>")
				case 'W', 'X':
					if j == len(a)-1 {
						i++
					}
					break cluster
				}
			}
		default:
			return plan{kind: etdi.ArtifactFile, runner: prog, path: a}
		}
	}
	return fail(prog, prog+" reads its program from standard input; run a script file")
}

// shellScript reads sh [flags] SCRIPT.
func shellScript(prog string, args []string) plan {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || a == "-":
			if i+1 < len(args) {
				return plan{kind: etdi.ArtifactFile, runner: prog, path: args[i+1]}
			}
			return fail(prog, prog+" reads commands from standard input; run a script file")
		case a == "--rcfile" || a == "--init-file" || a == "-o" || a == "+o" || a == "-O" || a == "+O":
			i++
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			if strings.ContainsAny(a[1:], "cs") {
				return fail(prog, prog+" -"+a[1:]+" runs commands from its command line or standard input; run a script file")
			}
		default:
			return plan{kind: etdi.ArtifactFile, runner: prog, path: a}
		}
	}
	return fail(prog, prog+" reads commands from standard input; run a script file")
}

// javaJar reads java [options] -jar FILE.
func javaJar(args []string) plan {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-jar":
			if i+1 < len(args) {
				return plan{kind: etdi.ArtifactFile, runner: "java -jar", path: args[i+1]}
			}
		case a == "-cp" || a == "-classpath" || a == "--class-path" || a == "-p" || a == "--module-path" ||
			a == "--add-modules" || a == "--add-opens" || a == "--add-exports" || a == "--add-reads" || a == "--patch-module":
			i++
		case !strings.HasPrefix(a, "-"):
			return fail("java", "java runs a class from a class path, which is not resolved; run a jar with java -jar <file>")
		}
	}
	return fail("java", "java runs no jar; run one with java -jar <file>")
}

// parseUV reads uv tool run (uvx) and uv run of a Python script.
func parseUV(args []string) plan {
	if rest, ok := cmdline.UVToolRun(args); ok {
		return pyRunner("uv tool run", rest, uvFlags)
	}
	rest, ok := cmdline.Sub(args, uvFlags.Values, "run")
	if !ok {
		return fail("uv", "uv runs a project command here; run a package with uvx <package>==<version>")
	}
	s := cmdline.Skip(rest, uvFlags)
	// uv --directory DIR run script.py: the script is in DIR.
	var ops []envOp
	for _, flags := range [][]string{args[:len(args)-len(rest)], rest[:len(rest)-len(s)]} {
		for i, a := range flags {
			if a == "--directory" && i+1 < len(flags) {
				ops = append(ops, envOp{chdir: flags[i+1]})
			} else if v, ok := strings.CutPrefix(a, "--directory="); ok {
				ops = append(ops, envOp{chdir: v})
			}
		}
	}
	if len(s) == 0 || !strings.HasSuffix(s[0], ".py") {
		return fail("uv run", "uv run runs a project command, which is not resolved; run a script file (uv run server.py) "+
			"or a package with uvx <package>==<version>")
	}
	p := plan{kind: etdi.ArtifactFile, runner: "uv run", path: s[0]}
	p.env = ops
	return p
}

// npmRunner reads the package an npm package runner starts.
func npmRunner(runner string, args []string) plan {
	// A flag the runner reads that is not known to be harmless may change
	// what it installs or how it runs it (--registry, --node-options):
	// what runs would not be the package the lockfile names.
	unsafe := ""
	for i := 0; i < len(args) && unsafe == ""; i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || npmFlags.Stop[a] {
			break
		}
		k, _, hasValue := strings.Cut(a, "=")
		switch {
		case npmFlags.Pkg[k]:
			if !hasValue {
				i++
			}
		case npmHarmlessFlags[k]:
			if npmHarmlessValues[k] && !hasValue {
				i++
			}
		default:
			unsafe = runner + " option " + shown(k) + " may change what runs or where npm reads its configuration; run the package without it"
		}
	}
	r := cmdline.ReadRunner(args, npmFlags)
	first := r.First
	p := plan{kind: etdi.ArtifactNPM, runner: runner, cache: r.Cache, npx: runner == "npx" || runner == "npm exec"}
	switch {
	case len(r.Pkgs) > 1:
		return fail(runner, runner+" installs several packages (--package more than once); run one package")
	case r.Stopped:
		return fail(runner, runner+" -c runs a shell command; run the package with npx <package>@<version>")
	case len(r.Pkgs) == 1 && r.First == "":
		return fail(runner, runner+" --package without a command starts a shell; run the package with npx <package>@<version>")
	case len(r.Pkgs) == 1:
		// --package names what is installed; the command after it is
		// what runs, which must be the package's own.
		if first != "" && first != npmBinName(r.Pkgs[0]) && unsafe == "" {
			unsafe = runner + " --package installs " + shown(r.Pkgs[0]) + " and runs " + shown(first) + ", another command; run the package itself"
		}
		first = r.Pkgs[0]
	case r.Stopped:
		return fail(runner, runner+" -c runs a shell command; run the package with npx <package>@<version>")
	case first == "":
		return fail(runner, runner+" names no package")
	}
	if len(r.Pkgs) == 0 {
		p.command = first
	} else {
		p.pkgCmd = r.First
	}
	npmSpec(&p, first)
	p.unsafe = unsafe
	if p.why == "" {
		switch runner {
		case "pnpx", "pnpm dlx", "yarn dlx":
			p.why = runner + " installs the package from the registry at every start and nothing on disk records what it gets; " +
				"run it with npx from a project whose package-lock.json pins it"
		}
	}
	return p
}

// npmHarmlessFlags are the options of npx, npm exec, bunx and bun x known
// to leave what runs unchanged (npmHarmless has the reasons): every other
// option, --cache, --userconfig, --prefix (-C), --global (-g),
// --workspace (-w), --workspaces, --registry and --node-options among
// them, leaves the launch unresolved. npmHarmlessValues take a value.
var (
	npmHarmlessFlags = cmdline.Set("--yes", "-y", "--no", "--no-yes", "--no-install", "--quiet", "-q", "--silent", "-s",
		"--verbose", "-d", "-dd", "-ddd", "--loglevel", "--ignore-scripts", "--offline", "--prefer-offline", "--prefer-online",
		"--legacy-peer-deps", "--no-workspaces", "--bun", "--no-update-notifier", "--no-audit", "--no-fund",
		"--foreground-scripts", "--no-color", "--color")
	npmHarmlessValues = cmdline.Set("--loglevel")
)

// npmExactRE is one exact version (npm accepts a leading "=" or "v").
var npmExactRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[=v]?\s*([0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?)$`)
})

// npmSpec reads an npm package spec into p: name, name@version,
// @scope/name@version, each with an optional "npm:" prefix. A git, URL,
// file or path spec, or a jsr: one, sets p.why.
func npmSpec(p *plan, spec string) {
	switch {
	case explicitLocal(spec):
		p.why = "the package is a local path or file spec; run the file itself (node <file>) to resolve it"
		return
	case explicitRemote(spec) || cmdline.NPMShorthand(spec):
		p.remote = true
		p.why = "the package is a git or URL spec, which is not resolved; run a registry version: <package>@<version>"
		return
	case strings.HasPrefix(spec, "jsr:"):
		p.why = "jsr packages are not resolved; run an npm registry version: <package>@<version>"
		return
	}
	name, version := cmdline.SplitNPM(strings.TrimPrefix(spec, "npm:"))
	if len(name) > 214 || !artifactsyntax.NPMName(name) || !cmdline.NPMVersion(version) {
		p.why = "the argument where the package belongs is not an npm package spec"
		return
	}
	p.name, p.version = name, version
	if m := npmExactRE().FindStringSubmatch(version); m != nil {
		p.version, p.exact = m[1], true
	}
}

// explicitLocal reports whether a package spec names a local file or
// directory.
func explicitLocal(spec string) bool {
	for _, p := range []string{"file:", "./", "../", "/", "~/", ".\\", "..\\"} {
		if strings.HasPrefix(spec, p) {
			return true
		}
	}
	return spec == "." || spec == ".." || len(spec) > 2 && spec[1] == ':' && (spec[2] == '\\' || spec[2] == '/') ||
		!strings.Contains(spec, "://") && (strings.HasSuffix(spec, ".tgz") || strings.HasSuffix(spec, ".whl") || strings.HasSuffix(spec, ".tar.gz"))
}

// explicitRemote reports whether a package spec names a git repository or
// a URL.
func explicitRemote(spec string) bool {
	for _, p := range []string{"git+", "git@", "git:", "github:", "gitlab:", "bitbucket:", "gist:", "http:", "https:"} {
		if strings.HasPrefix(spec, p) {
			return true
		}
	}
	return strings.Contains(spec, "://")
}

// pyRunner reads the package a Python package runner starts.
func pyRunner(runner string, args []string, fs cmdline.FlagSpec) plan {
	// Extra packages and other indexes change what is installed beside or
	// instead of the package the lockfile names.
	unsafe := ""
	for _, a := range args {
		if a == "--" || !strings.HasPrefix(a, "-") {
			break
		}
		if k, _, _ := strings.Cut(a, "="); pyChangesInstall[k] && unsafe == "" {
			unsafe = runner + " option " + shown(k) + " changes what is installed; run the package without it"
		}
	}
	r := cmdline.ReadRunner(args, fs)
	first := r.First
	p := plan{kind: etdi.ArtifactPyPI, runner: runner}
	switch {
	case len(r.Pkgs) > 1:
		return fail(runner, runner+" names the package more than once")
	case len(r.Pkgs) == 1:
		// --from/--spec names what is installed; the command after it is
		// what runs, which must be the package's own.
		if first != "" && pep503(first) != pep503(pyName(r.Pkgs[0])) && unsafe == "" {
			unsafe = runner + " installs " + shown(r.Pkgs[0]) + " and runs " + shown(first) + ", another command; run the package itself"
		}
		first = r.Pkgs[0]
	case r.Stopped || first == "":
		return fail(runner, runner+" names no package")
	}
	pySpec(&p, first, runner != "pipx run")
	p.unsafe = unsafe
	return p
}

// pyReqRE is a requirement: name, extras, then an optional version
// specifier.
var pyReqRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]|[A-Za-z0-9])\s*(\[[A-Za-z0-9._, -]*\])?\s*(.*)$`)
})

// pyExactRE is one exact version of a requirement: ==X or ===X.
var pyExactRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^===?\s*([A-Za-z0-9][A-Za-z0-9.+!_-]*)$`) })

// pySpec reads a Python requirement into p: name, name==X, name[extra]==X,
// and with at (uv's runners) name@X. A URL, a path or markers set p.why.
func pySpec(p *plan, spec string, at bool) {
	switch {
	case explicitLocal(spec):
		p.why = "the package is a local path; run the file itself to resolve it"
		return
	case explicitRemote(spec):
		p.remote = true
		p.why = "the package is a git or URL spec, which is not resolved; run an index version: <package>==<version>"
		return
	}
	m := pyReqRE().FindStringSubmatch(strings.TrimSpace(spec))
	if m == nil {
		p.why = "the argument where the package belongs is not a Python requirement"
		return
	}
	p.name = m[1]
	rest := strings.TrimSpace(m[3])
	switch {
	case rest == "":
	case strings.HasPrefix(rest, "@") && at && !strings.Contains(rest, "://") && !strings.ContainsAny(rest[1:], " ;@"):
		p.version = strings.TrimSpace(rest[1:])
		p.exact = p.version != "latest" && p.version != ""
	case strings.HasPrefix(rest, "@"):
		p.remote = true
		p.why = "the package is a direct URL reference, which is not resolved; run an index version: <package>==<version>"
	case strings.Contains(rest, ";"):
		p.why = "the requirement has environment markers; run <package>==<version>"
	case strings.ContainsAny(rest[:1], "=<>!~"):
		p.version = rest
		if v := pyExactRE().FindStringSubmatch(rest); v != nil && !strings.Contains(rest, "*") {
			p.version, p.exact = v[1], true
		}
	default:
		p.name = ""
		p.why = "the argument where the package belongs is not a Python requirement"
	}
}

// containerRun reads docker|podman|nerdctl [global options] [container]
// run [options] IMAGE.
func containerRun(prog, argv0 string, args []string) plan {
	p := plan{kind: etdi.ArtifactOCI, runner: prog + " run", prog: argv0}
	i, globals := cmdline.ContainerCommand(args)
	switch {
	case i >= len(args):
		return fail(prog, prog+" runs no container; run the server with "+prog+" run <image>@sha256:<digest>")
	case args[i] != "run":
		return fail(prog, prog+" "+shown(args[i])+" is not "+prog+" run; run the server with "+prog+" run <image>@sha256:<digest>")
	}
	p.globals = globals
	// Global options other than logging may choose another daemon
	// (-H/--host, -c/--context, --url, --connection, --remote, --address,
	// --namespace), another configuration (--config) or other TLS
	// settings: that daemon decides what an image name, even one pinned
	// by digest, runs.
	for j := 0; j < i; j++ {
		k, _, hasValue := strings.Cut(args[j], "=")
		switch {
		case !strings.HasPrefix(k, "-") || k == "container":
		case k == "-D" || k == "--debug":
		case k == "-l" || k == "--log-level":
			if !hasValue {
				j++
			}
		default:
			p.unsafe = prog + " option " + shown(k) + " before run may choose another daemon or configuration, which decides " +
				"what the image runs; run the server with the default daemon"
			j = i
		}
	}
	image, pull := cmdline.RunImage(args[i+1:])
	p.pull = pull
	// --entrypoint before the image runs another program than the
	// image's own.
	for _, a := range args[i+1:] {
		if a == image {
			break
		}
		if (a == "--entrypoint" || strings.HasPrefix(a, "--entrypoint=")) && p.unsafe == "" {
			p.unsafe = prog + " run --entrypoint runs another program than the image's; run the image as it is"
		}
	}
	if image == "" {
		return fail(p.runner, p.runner+" names no image")
	}
	ref, why := parseRef(image)
	if why != "" {
		p.why = why
		return p
	}
	p.ref = ref
	switch {
	case ref.digest != "":
	case p.globals:
		p.why = "global options before run may choose another daemon or configuration, which is not inspected; " +
			"pin the image by digest: " + ref.name + "@sha256:<digest>"
	case p.pull == "always" || p.pull == "newer":
		p.why = "--pull=" + p.pull + " fetches the tag again at every start; pin the image by digest: " + ref.name + "@sha256:<digest>"
	}
	return p
}

// imageRef is an image reference: name, tag, digest.
type imageRef struct {
	name, tag, digest string
}

// String is the reference as docker takes it, without a digest.
func (r imageRef) String() string {
	if r.tag != "" {
		return r.name + ":" + r.tag
	}
	return r.name
}

// parseRef reads NAME[:TAG][@sha256:HEX].
func parseRef(s string) (imageRef, string) {
	var r imageRef
	if len(s) > 512 {
		return r, "the image reference is too long"
	}
	name, digest, ok := cmdline.CutDigest(s)
	if ok {
		r.digest = digest
		if !artifactsyntax.SHA256(r.digest) {
			return r, "the image digest is not sha256:<64 lowercase hex digits>; pin the image by its sha256 digest"
		}
	}
	name, tag, ok := cmdline.CutTag(name)
	if ok {
		r.tag = tag
		if !artifactsyntax.Tag(r.tag) {
			return r, "the argument where the image belongs is not an image reference"
		}
	}
	if len(name) > artifactsyntax.MaxNameLen || !artifactsyntax.ImageName(name) {
		return r, "the argument where the image belongs is not an image reference"
	}
	r.name = name
	return r, ""
}

// canonicalImage is the fully qualified form of an image name, so that
// x, library/x, docker.io/library/x and index.docker.io/library/x
// compare equal.
func canonicalImage(name string) string {
	first, rest, ok := strings.Cut(name, "/")
	if !ok || !strings.ContainsAny(first, ".:") && first != "localhost" && strings.ToLower(first) == first {
		first, rest = "docker.io", name
	}
	first = strings.ToLower(first)
	if first == "index.docker.io" || first == "registry-1.docker.io" {
		first = "docker.io"
	}
	if first == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	return first + "/" + rest
}

// Moving reports whether argv runs a moving target, whose content can
// change with no change to the command line: a package runner without an
// exact version (npx -y pkg, npx pkg@latest, npx pkg@^1, uvx pkg without
// ==X, pipx run pkg), a git or URL package spec, or an image without a
// digest whose tag is absent or "latest". The string says what moves and
// how to pin it. Pinned command lines (npx -y pkg@1.2.3, uvx pkg==1.0,
// docker run img@sha256:..., docker run img:1.2), plain programs and
// scripts are not moving. Moving reads nothing but argv.
func Moving(argv []string) (bool, string) {
	moving, msg := moving(argv)
	return moving, conceal(argv, msg)
}

func moving(argv []string) (bool, string) {
	p := parse(argv)
	switch p.kind {
	case etdi.ArtifactNPM, etdi.ArtifactPyPI:
		pin := "<package>@<version>"
		if p.kind == etdi.ArtifactPyPI {
			pin = "<package>==<version>"
		}
		if p.name != "" {
			pin = strings.Replace(pin, "<package>", shown(p.name), 1)
		}
		switch {
		case p.remote:
			return true, p.runner + " runs a git or URL spec, which can change under the same name; pin a registry version: " + pin
		case p.name == "":
			return false, ""
		case p.version == "":
			return true, p.runner + " runs whatever version of " + shown(p.name) + " the registry calls latest; pin it: " + pin
		case !p.exact:
			return true, p.runner + " runs " + shown(p.name) + " " + shown(p.version) + ", a range or tag the registry decides; pin it: " + pin
		}
	case etdi.ArtifactOCI:
		r := p.ref
		if r.name != "" && r.digest == "" && (r.tag == "" || r.tag == "latest") {
			what := shown(r.name) + " has no tag"
			if r.tag != "" {
				what = shown(r.String()) + " is the latest tag"
			}
			return true, what + ": " + p.runner + " runs whatever it points to; pin it by digest: " + shown(r.name) +
				"@sha256:<digest> (" + progName(p.prog) + " image inspect --format '{{index .RepoDigests 0}}' " + shown(r.String()) + ")"
		}
	}
	return false, ""
}

// npmBinName is the command a package spec is run by when it has one bin
// of its own name: the name without scope or version.
func npmBinName(spec string) string {
	spec = strings.TrimPrefix(spec, "npm:")
	if i := strings.LastIndexByte(spec, '@'); i > 0 {
		spec = spec[:i]
	}
	if i := strings.LastIndexByte(spec, '/'); i >= 0 {
		spec = spec[i+1:]
	}
	return spec
}

// pyChangesInstall are the flags of uvx, uv tool run and pipx run that
// install more than the package, or from elsewhere, or run it otherwise.
var pyChangesInstall = cmdline.Set("--with", "-w", "--with-editable", "--with-requirements", "--index", "--index-url", "-i",
	"--extra-index-url", "--default-index", "--find-links", "-f", "--pip-args", "--editable", "-e",
	// Another configuration, environment, interpreter, cache or
	// resolution: what uv would read or install from.
	"--config-file", "--env-file", "--python", "-p", "--cache-dir", "--constraints", "-c", "--overrides", "--build-constraints",
	"-b", "--prerelease", "--exclude-newer", "--allow-insecure-host", "--backend", "--system-site-packages")

// pyName is the distribution name of a requirement: what precedes its
// extras or version specifier.
func pyName(req string) string {
	if m := pyReqRE().FindStringSubmatch(req); m != nil {
		return m[1]
	}
	return req
}
