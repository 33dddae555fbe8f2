// Package identity derives the name a server without a bundle is pinned
// under (unsigned:<name>) from what the server is, never from the
// arguments or environment values it is given, which may be secrets
// (SPEC.md §14).
//
// For a command line, the name is the package a package runner starts
// (npx, bunx, uvx, pipx, ...), the image of docker run or podman run, the
// name in the package.json nearest to the script node runs, or else the
// program's base name. For a URL, it is the host and the path, without
// user information, query or fragment. Versions and tags are dropped, so
// that an upgraded server is compared against the same pins. The value of
// a runner's flag is never taken for the package (npx --api-key SECRET
// pkg names pkg), and an argument that does not parse as a package spec
// of the runner's ecosystem gives no name.
//
// A derived name is never empty unless nothing could be derived, is at
// most MaxLen bytes, holds no control character, space or '=', and does
// not look like a credential (redact.LooksSecret); CommandFor also keeps
// out the values of a server's secret set.
package identity

import (
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/etdi-dev/etdi/internal/cmdline"
	"github.com/etdi-dev/etdi/internal/redact"
	"github.com/etdi-dev/etdi/strictjson"
)

// MaxLen is the longest name derived.
const MaxLen = 128

// maxManifest bounds a package.json or pyproject.toml read.
const maxManifest = 1 << 20

// Command derives a name from a command line. dir is the directory the
// command runs in (empty: the current directory); it is used only to find
// the package.json of a script node runs. It returns "" for an empty argv.
func Command(argv []string, dir string) string {
	return CommandFor(argv, dir, nil)
}

// CommandFor is Command for a server configured with secrets: a name that
// holds any value of secrets (as Set.String would mask it) falls back as
// one that looks like a credential does, to the program's base name, then
// to "server".
func CommandFor(argv []string, dir string, secrets *redact.Set) string {
	if len(argv) == 0 {
		return ""
	}
	ok := func(n string) bool { return Valid(n) && !secrets.Holds(n) }
	prog := progName(argv[0])
	if n := derive(prog, argv[1:], dir, 0); ok(n) {
		return n
	}
	if ok(prog) {
		return prog
	}
	return "server"
}

// progName is the base name of a program, without a Windows extension.
// Unlike package artifact, which resolves the file a name runs, it keeps
// the name's case and drops .ps1 too: npx.ps1 names what npx does.
func progName(p string) string {
	b, _ := cmdline.CutExt(cmdline.Base(p), ".exe", ".cmd", ".bat", ".ps1")
	return b
}

// derive names what prog runs with args; "" when it cannot tell.
func derive(prog string, args []string, dir string, depth int) string {
	if depth > 4 {
		return ""
	}
	switch prog {
	case "env":
		// env [-i] [-u NAME] [NAME=VALUE...] PROGRAM ARGS...
		rest := cmdline.Skip(args, cmdline.FlagSpec{Values: cmdline.Set("-u", "--unset", "-C", "--chdir", "-S", "--split-string"), Assignments: true})
		return deriveAgain(rest, dir, depth)
	case "npx", "bunx", "pnpx":
		return runner(args, cmdline.NPMFlags, npmSpec)
	case "npm":
		// npm exec [--package P] -- CMD, npm x ...
		if rest, ok := cmdline.Sub(args, nil, "exec", "x"); ok {
			return runner(rest, cmdline.NPMFlags, npmSpec)
		}
	case "pnpm", "yarn", "bun":
		return derivePackageManager(prog, args, dir)
	case "uvx":
		return runner(args, cmdline.UVFlags, pySpec)
	case "uv":
		return deriveUV(args, dir)
	case "pipx":
		if rest, ok := cmdline.Sub(args, nil, "run"); ok {
			return runner(rest, cmdline.PipxFlags, pySpec)
		}
	case "docker", "podman", "nerdctl":
		return image(args)
	case "node", "nodejs", "tsx", "ts-node":
		return script(args, dir, nodeFlags)
	case "deno":
		if rest, ok := cmdline.Sub(args, nil, "run"); ok {
			return script(rest, dir, denoFlags)
		}
	case "python", "python3", "py":
		return derivePython(args, dir)
	case "java":
		return deriveJava(args)
	}
	return ""
}

// deriveAgain names what the command rest runs (a program that runs
// another, such as env): what derive says of it, or else its program.
func deriveAgain(rest []string, dir string, depth int) string {
	if len(rest) == 0 {
		return ""
	}
	p := progName(rest[0])
	if n := derive(p, rest[1:], dir, depth+1); n != "" {
		return n
	}
	return p
}

// derivePackageManager is derive of pnpm, yarn and bun: dlx or x runs a
// package; bun (run) runs a script too.
func derivePackageManager(prog string, args []string, dir string) string {
	if rest, ok := cmdline.Sub(args, nil, "dlx", "x"); ok {
		return runner(rest, cmdline.NPMFlags, npmSpec)
	}
	if prog != "bun" {
		return ""
	}
	if rest, ok := cmdline.Sub(args, nil, "run"); ok {
		return script(rest, dir, bunFlags)
	}
	return script(args, dir, bunFlags)
}

// deriveUV is derive of uv: uv tool run runs a package, uv run a script
// or a program.
func deriveUV(args []string, dir string) string {
	if rest, ok := cmdline.UVToolRun(args); ok {
		return runner(rest, cmdline.UVFlags, pySpec)
	}
	rest, ok := cmdline.Sub(args, cmdline.UVFlags.Values, "run")
	if !ok {
		return ""
	}
	// uv --directory DIR run script.py: the script is in DIR.
	for i, a := range args {
		if (a == "--directory" || a == "--project") && i+1 < len(args) {
			d := args[i+1]
			if !filepath.IsAbs(d) && dir != "" {
				d = filepath.Join(dir, d)
			}
			dir = d
		} else if v, ok := strings.CutPrefix(a, "--directory="); ok {
			dir = v
		}
	}
	return scriptOrProgram(cmdline.Skip(rest, cmdline.UVFlags), dir)
}

// derivePython is derive of python: -m names a module, else the script.
func derivePython(args []string, dir string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-m" && i+1 < len(args):
			return pyName(args[i+1])
		case a == "-W" || a == "-X":
			i++
		case !strings.HasPrefix(a, "-") || a == "-c" || a == "-":
			return script(args[i:], dir, cmdline.FlagSpec{Stop: cmdline.Set("-c", "-")})
		}
	}
	return ""
}

// deriveJava is derive of java: the jar's stem, or the main class's last
// segment.
func deriveJava(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-jar" && i+1 < len(args):
			return stem(args[i+1])
		case a == "-cp" || a == "-classpath" || a == "--class-path" || a == "-p" || a == "--module-path":
			i++
		case !strings.HasPrefix(a, "-"):
			return lastSegment(strings.ReplaceAll(a, ".", "/"))
		}
	}
	return ""
}

// Interpreter flags. They are not package artifact's, which knows more
// flags and stops at more (node --run, deno --eval): a name derived here
// is the key a server's pins are under, and reading a command line
// differently would move servers already pinned to a new name. For the
// same reason node --eval=CODE is read as a flag (StopBare), as it always
// has been here.
var (
	nodeFlags = cmdline.FlagSpec{Values: cmdline.Set("-r", "--require", "--import", "--loader", "--experimental-loader", "--env-file", "--conditions", "-C", "--input-type", "--title"),
		Stop: cmdline.Set("-e", "--eval", "-p", "--print", "-"), StopBare: true}
	bunFlags  = cmdline.FlagSpec{Values: cmdline.Set("--cwd", "-r", "--preload", "--config", "-c")}
	denoFlags = cmdline.FlagSpec{Values: cmdline.Set("-c", "--config", "--import-map", "--location", "--env-file", "--cert", "-L", "--log-level")}
)

// runner names the package a package runner starts: the value of its
// package flag, else its first plain argument (cmdline.ReadRunner), never
// the value of another flag. The package must parse as a package spec of the runner's ecosystem (spec
// returns "" otherwise): a runner whose package cannot be told gives no
// name.
func runner(args []string, fs cmdline.FlagSpec, spec func(string) string) string {
	r := cmdline.ReadRunner(args, fs)
	if len(r.Pkgs) > 0 {
		return spec(r.Pkgs[0])
	}
	if r.First == "" {
		return ""
	}
	return spec(r.First)
}

var npmRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(@[A-Za-z0-9~][A-Za-z0-9._~-]*/)?[A-Za-z0-9~][A-Za-z0-9._~-]*$`)
})

// npmName is the package of an npm spec, without its version:
// "@scope/name@1.2.3" → "@scope/name", "npm:name@latest" → "name". A URL,
// a git spec or a path gives its last segment.
func npmName(spec string) string {
	spec = strings.TrimPrefix(spec, "npm:")
	spec = strings.TrimPrefix(spec, "jsr:")
	if name, _ := cmdline.SplitNPM(spec); npmRE().MatchString(name) {
		return name
	}
	return lastSegment(spec)
}

// npmSpec is npmName for an argument that parses as an npm package spec:
// name[@version], @scope/name[@version], npm: or jsr: with one of those,
// a URL, a git or file spec, a path or a GitHub shorthand; "" for
// anything else.
func npmSpec(spec string) string {
	if explicitSource(spec) || cmdline.NPMShorthand(spec) {
		return lastSegment(spec)
	}
	name, version := cmdline.SplitNPM(strings.TrimPrefix(strings.TrimPrefix(spec, "npm:"), "jsr:"))
	if len(name) > 214 || !npmRE().MatchString(name) || !cmdline.NPMVersion(version) {
		return ""
	}
	return name
}

// explicitSource reports whether a package spec names where the package
// comes from rather than a registry name: a URL, a git, GitHub or file
// spec, or a path.
func explicitSource(spec string) bool {
	for _, p := range []string{"git+", "git@", "git:", "github:", "gitlab:", "bitbucket:", "gist:", "file:", "./", "../", "/", "~/"} {
		if strings.HasPrefix(spec, p) {
			return true
		}
	}
	return strings.Contains(spec, "://") || strings.HasSuffix(spec, ".tgz") || strings.HasSuffix(spec, ".whl") || strings.HasSuffix(spec, ".tar.gz")
}

var pyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) })

// pyDistRE is a valid Python distribution name (PEP 508).
var pyDistRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])$`)
})

// pyReqRestRE is what may follow the name in a requirement: extras, then a
// version specifier or "@ URL", then markers.
var pyReqRestRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\[[A-Za-z0-9._, -]*\])?\s*([=<>!~@;].*)?$`) })

// pySpec is pyName for an argument that parses as a Python requirement
// (PEP 508) or a URL or path; "" for anything else.
func pySpec(spec string) string {
	if explicitSource(spec) {
		return lastSegment(spec)
	}
	i := strings.IndexAny(spec, "=<>!~[@; ")
	if i < 0 {
		i = len(spec)
	}
	if i == 0 || !pyDistRE().MatchString(spec[:i]) || !pyReqRestRE().MatchString(spec[i:]) {
		return ""
	}
	return spec[:i]
}

// pyName is the package of a Python requirement, without version, extras
// or markers: "mcp-server-fetch==1.0" → "mcp-server-fetch",
// "pkg[cli]@2" → "pkg". A URL or a path gives its last segment.
func pyName(spec string) string {
	if strings.Contains(spec, "://") || strings.HasPrefix(spec, "/") || strings.HasPrefix(spec, ".") {
		return lastSegment(spec)
	}
	name := spec
	if i := strings.IndexAny(name, "=<>!~[@; "); i > 0 {
		name = name[:i]
	}
	if pyRE().MatchString(name) {
		return name
	}
	return ""
}

// lastSegment is the last path segment of a URL or path, without a
// .git/.tgz/.whl suffix, a fragment or a query.
func lastSegment(spec string) string {
	if u, err := url.Parse(spec); err == nil && u.Scheme != "" && strings.Contains(spec, "://") {
		spec = u.Path
	}
	if i := strings.IndexAny(spec, "#?"); i >= 0 {
		spec = spec[:i]
	}
	spec = strings.TrimRight(spec, "/")
	if i := strings.LastIndexAny(spec, "/:"); i >= 0 {
		spec = spec[i+1:]
	}
	if i := strings.IndexByte(spec, '@'); i > 0 {
		spec = spec[:i] // repo.git@v1: a revision
	}
	for _, ext := range []string{".git", ".tgz", ".tar.gz", ".whl", ".zip"} {
		spec = strings.TrimSuffix(spec, ext)
	}
	return spec
}

// image names the image of docker run / podman run / docker container
// run, without tag or digest.
func image(args []string) string {
	i, _ := cmdline.ContainerCommand(args)
	if i == len(args) || args[i] != "run" {
		return ""
	}
	ref, _ := cmdline.RunImage(args[i+1:])
	return imageName(ref)
}

var imageRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9]+([._-]+[a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*$`)
})

// imageName is an image reference without tag or digest, if it is one.
func imageName(ref string) string {
	ref, _, _ = cmdline.CutDigest(ref)
	ref, _, _ = cmdline.CutTag(ref)
	if imageRE().MatchString(ref) {
		return ref
	}
	return ""
}

// script names what an interpreter runs: the name in the nearest
// package.json (node) or pyproject.toml (python) above the script, else
// the script's base name without extension.
func script(args []string, dir string, fs cmdline.FlagSpec) string {
	rest := cmdline.Skip(args, fs)
	if len(rest) == 0 {
		return ""
	}
	return scriptOrProgram(rest, dir)
}

// scriptOrProgram names the script or program rest[0].
func scriptOrProgram(rest []string, dir string) string {
	if len(rest) == 0 {
		return ""
	}
	s := rest[0]
	for _, p := range []string{"npm:", "jsr:"} {
		if strings.HasPrefix(s, p) {
			return npmName(s)
		}
	}
	if strings.Contains(s, "://") {
		return stem(lastSegment(s))
	}
	if n := manifestName(s, dir); n != "" {
		return n
	}
	return stem(s)
}

// stem is the base name of a path without its extension.
func stem(p string) string {
	b := cmdline.Base(p)
	if e := filepath.Ext(b); e != b {
		b = strings.TrimSuffix(b, e)
	}
	return b
}

// manifestName finds the name of the package a script belongs to: the
// "name" of the nearest package.json, or the [project] name of the nearest
// pyproject.toml, in the script's directory or above. Symbolic links are
// followed first (node_modules/.bin/x points into its package).
func manifestName(scriptPath, dir string) string {
	p := scriptPath
	if !filepath.IsAbs(p) {
		if dir == "" {
			dir, _ = os.Getwd()
		}
		p = filepath.Join(dir, p)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.IsDir() {
		return ""
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	d := filepath.Dir(p)
	for range 64 {
		if n := packageJSONName(filepath.Join(d, "package.json")); n != "" {
			return n
		}
		if n := pyprojectName(filepath.Join(d, "pyproject.toml")); n != "" {
			return n
		}
		up := filepath.Dir(d)
		if up == d {
			break
		}
		d = up
	}
	return ""
}

func readSmall(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifest+1))
	if err != nil || len(b) > maxManifest {
		return nil
	}
	return b
}

// packageJSONName is the valid npm "name" of a package.json, or "" (a
// package.json without a name, as in dist/package.json {"type":"module"},
// is passed over).
func packageJSONName(path string) string {
	b := readSmall(path)
	if b == nil {
		return ""
	}
	v, err := strictjson.Parse(b)
	if err != nil || v.Kind != strictjson.Object {
		return ""
	}
	n := v.Get("name")
	if n == nil || n.Kind != strictjson.String || len(n.Str) > 214 || !npmRE().MatchString(n.Str) {
		return ""
	}
	return n.Str
}

var (
	tomlSection = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\[([^\]]*)\]`) })
	tomlName    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*name\s*=\s*["']([^"']*)["']`) })
)

// pyprojectName is the [project] name of a pyproject.toml, or "".
func pyprojectName(path string) string {
	b := readSmall(path)
	if b == nil {
		return ""
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		if m := tomlSection().FindStringSubmatch(line); m != nil {
			in = strings.TrimSpace(m[1]) == "project"
			continue
		}
		if m := tomlName().FindStringSubmatch(line); in && m != nil && pyRE().MatchString(m[1]) {
			return m[1]
		}
	}
	return ""
}

// URL derives a name from a server URL: the host (with a port other than
// the scheme's default) and the path without a trailing '/', leaving out
// user information, query, fragment, matrix parameters (;k=v) and every
// path segment that holds '=' or looks like a credential. It returns "" for a URL without a host.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" && !(p == "443" && u.Scheme == "https") && !(p == "80" && u.Scheme == "http") {
		host += ":" + p
	}
	name := host
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		seg, _, _ = strings.Cut(seg, ";") // matrix parameters
		d, err := url.PathUnescape(seg)
		if err != nil || d == "" || d == "." || d == ".." || strings.ContainsAny(d, "=;/") || !printable(d) || redact.LooksSecret(d) {
			continue
		}
		if len(name)+1+len(seg) > MaxLen {
			break
		}
		name += "/" + seg
	}
	if !Valid(name) {
		return ""
	}
	return name
}

// Valid reports whether name can be a derived identity: 1 to MaxLen
// bytes of valid UTF-8, no control character, space or '=', and nothing
// that looks like a credential.
func Valid(name string) bool {
	if name == "" || len(name) > MaxLen || !utf8.ValidString(name) || !printable(name) || strings.Contains(name, "=") {
		return false
	}
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == ':' || r == '@' }) {
		if redact.LooksSecret(part) {
			return false
		}
	}
	return !redact.LooksSecret(name)
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x21 || r == 0x7f || unicode.IsControl(r) || unicode.IsSpace(r) || r == utf8.RuneError {
			return false
		}
	}
	return true
}
