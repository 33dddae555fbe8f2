package artifact

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/etdi-dev/etdi"
)

// Launch is a command about to be started.
type Launch struct {
	Argv []string
	Dir  string // working directory ("" = current)
	// Env is the environment the command starts with. PATH, HOME,
	// npm_config_cache, LOCALAPPDATA and the like are read from it; only
	// when it is nil are they read from this process's environment.
	Env []string
}

// Resolve returns the artifact argv runs, read from what is on disk (and,
// for an image named without a digest, from docker image inspect). An
// error means it cannot be resolved: an *UnresolvedError whose reason a
// person can act on. It never guesses. The rules are in the package
// documentation.
func Resolve(ctx context.Context, l Launch) (*Resolved, error) {
	p := parse(l.Argv)
	fail := func(why string) error {
		return &UnresolvedError{What: conceal(l.Argv, p.what()), Reason: conceal(l.Argv, why)}
	}
	if p.why != "" {
		return nil, fail(p.why)
	}
	if p.unsafe != "" {
		return nil, fail(p.unsafe)
	}
	env := environ{vars: l.Env, inherit: l.Env == nil}
	dir := l.Dir
	for _, op := range p.env {
		env.apply(op)
		if op.chdir != "" {
			dir = within(dir, op.chdir)
		}
	}
	// Variables that load other code into whatever runs: the artifact
	// would not be all that runs.
	for _, name := range injecting {
		if v := env.get(name); v != "" {
			return nil, fail(name + " is set: it loads other code into the server, so what runs is not the artifact alone; start the server without it")
		}
	}
	// Configuration the runner reads besides its command line: a setting
	// that can swap what runs leaves the launch unresolved.
	if why := launchConfig(&p, &env, dir); why != "" {
		return nil, fail(why)
	}
	var (
		r   *Resolved
		why string
	)
	switch p.kind {
	case etdi.ArtifactNPM:
		r, why = resolveNPM(ctx, &p, env, dir)
	case etdi.ArtifactPyPI:
		r, why = resolvePyPI(&p, dir)
	case etdi.ArtifactOCI:
		r, why = resolveOCI(ctx, &p, env, dir)
	case etdi.ArtifactFile:
		r, why = resolveFile(ctx, &p, env, dir)
	default:
		why = "nothing to resolve"
	}
	if why != "" {
		return nil, fail(why)
	}
	// What a lockfile or image store says is checked as a signed artifact
	// would be: a name or version no manifest could hold is no answer.
	if err := etdi.ValidateArtifact(r.Artifact); err != nil {
		return nil, fail(r.From + " gives an artifact no bundle can name: " + err.Error())
	}
	return r, nil
}

// injecting are the environment variables that make a program or its
// interpreter load code the artifact does not hold: preloaded libraries,
// interpreter options and search paths, shell start-up files. The
// package runners' own settings (npm_config_*, UV_*, PIP_*, ...) are
// judged by launchConfig.
var injecting = []string{"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH",
	"NODE_OPTIONS", "NODE_PATH", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "BASH_ENV", "ENV",
	// Compiled code read from a directory the variable names instead of
	// compiling the source etdi hashed: Python's bytecode cache (a .pyc
	// is taken when its header matches the source's time and size) and
	// Node.js's V8 code cache.
	"PYTHONPYCACHEPREFIX", "NODE_COMPILE_CACHE",
	"JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "PERL5OPT", "RUBYOPT"}

// environ is a launch's environment.
type environ struct {
	vars    []string
	inherit bool // vars is nil: this process's environment
}

// get is the value of name; the last of duplicates wins, as exec.Cmd
// has it.
func (e *environ) get(name string) string {
	v, _ := e.lookup(name)
	return v
}

// lookup is the value of name and whether it is set.
func (e *environ) lookup(name string) (string, bool) {
	if e.inherit {
		return os.LookupEnv(name)
	}
	for i := len(e.vars) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(e.vars[i], "="); ok && sameEnvName(k, name) {
			return v, true
		}
	}
	return "", false
}

// all is every NAME=VALUE of the environment, duplicates included.
func (e *environ) all() []string {
	if e.inherit {
		return os.Environ()
	}
	return e.vars
}

func sameEnvName(a, b string) bool {
	if runtime.GOOS == "windows" {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// apply makes the change an env wrapper makes.
func (e *environ) apply(op envOp) {
	if e.inherit && (op.clear || op.unset != "" || op.set != "") {
		e.vars, e.inherit = os.Environ(), false
	}
	switch {
	case op.clear:
		e.vars = []string{}
	case op.unset != "":
		var kept []string
		for _, kv := range e.vars {
			if k, _, _ := strings.Cut(kv, "="); !sameEnvName(k, op.unset) {
				kept = append(kept, kv)
			}
		}
		e.vars = append([]string{}, kept...)
	case op.set != "":
		e.vars = append(e.vars[:len(e.vars):len(e.vars)], op.set)
	}
}

// list is the environment to start a command with: nil for this
// process's own.
func (e *environ) list() []string {
	if e.inherit {
		return nil
	}
	return e.vars
}

// home is the user's home directory as the launch sees it.
func (e *environ) home() string {
	if runtime.GOOS == "windows" {
		if h := e.get("USERPROFILE"); h != "" {
			return h
		}
	}
	return e.get("HOME")
}

// within is path p taken relative to dir; dir "" is the current
// directory.
func within(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	if !filepath.IsAbs(dir) {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
	}
	return filepath.Join(dir, p)
}

// parents calls f for dir and each directory above it, nearest first,
// until f returns true.
func parents(dir string, f func(d string) bool) {
	d := within(dir, ".")
	for range maxParents {
		if f(d) {
			return
		}
		up := filepath.Dir(d)
		if up == d {
			return
		}
		d = up
	}
}

// exists reports whether path exists, without following a final
// symbolic link.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// hasPathSep reports whether a program name holds a directory, so that
// it is not looked up on PATH.
func hasPathSep(name string) bool {
	if runtime.GOOS == "windows" {
		return strings.ContainsAny(name, `/\:`)
	}
	return strings.Contains(name, "/")
}

// lookPath finds a program as exec.LookPath does, with the launch's PATH
// and directory: a name with a directory in it is taken relative to dir;
// otherwise the first executable regular file of that name in a PATH
// directory. A PATH entry that is not absolute, or empty, is not searched:
// if the program is found there the lookup fails, as Go's ErrDot does.
func lookPath(name string, env *environ, dir string) (string, string) {
	if hasPathSep(name) {
		p := within(dir, name)
		if !executable(p) {
			return "", "no executable file " + shown(name) + " (relative to " + within(dir, ".") + ")"
		}
		return p, ""
	}
	for _, d := range filepath.SplitList(env.get("PATH")) {
		rel := d == "" || !filepath.IsAbs(d)
		if d == "" {
			d = "."
		}
		for _, cand := range candidates(filepath.Join(d, name), env) {
			if rel {
				if exists(within(dir, cand)) {
					return "", shown(name) + " is found through the relative PATH entry " + shown(d) + "; use absolute PATH entries or an absolute program path"
				}
				continue
			}
			if executable(cand) {
				return cand, ""
			}
		}
	}
	return "", shown(name) + " is not found on the launch's PATH"
}

// candidates are the file names a program name can have: on Windows, with
// each PATHEXT extension unless it has one.
func candidates(p string, env *environ) []string {
	if runtime.GOOS != "windows" {
		return []string{p}
	}
	exts := env.get("PATHEXT")
	if exts == "" {
		exts = ".COM;.EXE;.BAT;.CMD"
	}
	var out []string
	for _, e := range strings.Split(strings.ToLower(exts), ";") {
		if e != "" && strings.EqualFold(filepath.Ext(p), e) {
			return []string{p}
		}
	}
	for _, e := range strings.Split(exts, ";") {
		if e != "" {
			out = append(out, p+e)
		}
	}
	return out
}

// executable reports whether p is a regular file (after symbolic links)
// that may be executed.
func executable(p string) bool {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	return runtime.GOOS == "windows" || fi.Mode().Perm()&0o111 != 0
}

// resolveFile hashes the script an interpreter runs or the program itself.
func resolveFile(ctx context.Context, p *plan, env environ, dir string) (*Resolved, string) {
	path := p.path
	switch {
	case strings.Contains(path, "://") || strings.HasPrefix(path, "npm:") || strings.HasPrefix(path, "jsr:"):
		return nil, p.runner + " fetches the script from the network; save it to a file and run that"
	case p.program:
		found, why := lookPath(path, &env, dir)
		if why != "" {
			return nil, why
		}
		path = found
	default:
		path = within(dir, path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, "no file " + shown(p.path) + " (relative to " + within(dir, ".") + "); name the file the server runs"
		}
		return nil, "cannot follow " + shown(p.path) + ": " + err.Error()
	}
	fi, err := os.Stat(real)
	switch {
	case err != nil:
		return nil, "cannot read " + shown(p.path) + ": " + err.Error()
	case fi.IsDir():
		return nil, shown(p.path) + " is a directory, which " + p.runner + " resolves to a file itself; name the file"
	case !fi.Mode().IsRegular():
		return nil, shown(p.path) + " is not a regular file"
	}
	d, err := fileDigest(ctx, real)
	if err != nil {
		return nil, "cannot hash " + shown(p.path) + ": " + err.Error()
	}
	return &Resolved{Artifact: etdi.Artifact{Type: etdi.ArtifactFile, Name: filepath.Base(real), Digest: d}, From: "file " + real, Path: filepath.Clean(path)}, ""
}

// errf formats a reason.
func errf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
