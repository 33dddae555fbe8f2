package hostconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/etdi-dev/etdi/strictjson"
)

// Gate says which etdi is the user's own (docs/hosts.md#wrapping-host-configurations): the programs that
// count as etdi's gate, and the trust policy, pin store and lockfile that
// gate judges by. An entry is taken as wrapped only when its program
// resolves to one of Etdi, never by its name.
type Gate struct {
	// Etdi are the etdi programs the user runs: the running etdi and any
	// given with --etdi. An entry's program is compared with them as a
	// file (symbolic links followed, os.SameFile).
	Etdi []string
	// Trust, Pins and Lock are the trust policy, the pin store (a file or
	// an etcd:// URL) and the lockfile the user's own etdi uses; Lock is
	// empty when the user uses none. A wrapped entry whose etdi run uses
	// others is reported in its GateOverrides.
	Trust, Pins, Lock string
	// Cedar are the user's own call-time policy files (--cedar): a
	// wrapped entry's --cedar naming another is reported, as a policy
	// file can permit what the user's policies leave unpermitted.
	Cedar []string

	// trusted are the files of Etdi, found once per Load.
	trusted []os.FileInfo
	found   bool
}

// GateOverride is a trust policy, pin store or lockfile that a wrapped
// entry's etdi run uses instead of the user's own: the gate would judge
// the server by it.
type GateOverride struct {
	// What is "trust policy", "pin store" or "lockfile".
	What string `json:"what"`
	// Via is how the entry names it: a flag of etdi run (--trust) or a
	// variable of the entry's env (ETDI_TRUST, or HOME and the like,
	// which move etdi's default files).
	Via string `json:"via"`
	// Entry is what the entry's gate uses; User what the user's etdi uses
	// ("" for a lockfile the user does not use).
	Entry string `json:"entry"`
	User  string `json:"user"`
}

// IsEtdiRun reports whether command and args look like `etdi run`: the
// program is named etdi (etdi.exe) and its first argument is "run". The
// name proves nothing (any program can be called etdi): Load takes an
// entry as wrapped only when its program resolves to one of Gate.Etdi;
// one that is only named so is an imitation (Entry.Imitation).
func IsEtdiRun(command string, args []string) bool {
	base := strings.ToLower(filepath.Base(strings.ReplaceAll(command, `\`, "/")))
	return (base == "etdi" || base == "etdi.exe") && len(args) > 0 && args[0] == "run"
}

// goos is the platform whose rules programs are found by; a variable so
// tests can try the others.
var goos = runtime.GOOS

// envValue returns the entry's env variable name (without regard to case
// on Windows, as Windows reads it).
func envValue(env map[string]string, name string) (string, bool) {
	if goos == "windows" {
		// Hosts differ in which of several spellings they pass on: when
		// they disagree, the value is none etdi can prove anything by.
		val, n, differ := "", 0, false
		for k, v := range env {
			if strings.EqualFold(k, name) {
				differ = differ || n > 0 && v != val
				val, n = v, n+1
			}
		}
		if differ {
			return fmt.Sprintf("(%s given %d times, differently)", name, n), true
		}
		return val, n > 0
	}
	v, ok := env[name]
	return v, ok
}

// programFiles returns the files the host may start for command: an
// absolute path itself; a relative path against every folder the host
// may start it from (the configuration file's folder, the entry's cwd,
// the working directory), all of which must then be etdi; a bare name
// on the entry's env PATH, else the process PATH. A reason is returned
// instead when it cannot be told.
func programFiles(command, file, cwd, workspace string, env map[string]string, lookup func(string) (string, bool)) ([]string, string) {
	if strings.Contains(command, "${") {
		return nil, fmt.Sprintf("it is written with a placeholder (%q), which hosts expand differently (some not at all)", command)
	}
	if command == "" || strings.ContainsRune(command, 0) {
		return nil, "it is not a plain path"
	}
	if networkPath(command) || networkPath(cwd) {
		return nil, "it is on another machine (a network path), which etdi does not open"
	}
	dir := filepath.Dir(file)
	if !filepath.IsAbs(dir) {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
	}
	if filepath.IsAbs(command) {
		return []string{filepath.Clean(command)}, ""
	}
	if strings.ContainsRune(command, '/') || goos == "windows" && strings.ContainsRune(command, '\\') {
		return relativeFiles(command, dir, cwd, workspace), ""
	}
	path, fromEnv := envValue(env, "PATH")
	if !fromEnv {
		path, _ = lookupOrNil(lookup, "PATH")
	} else if strings.Contains(path, "${") {
		return nil, "the PATH of its env is written with a placeholder, which hosts expand differently (some not at all)"
	}
	return searchPath(command, path, fromEnv, dir, cwd, workspace)
}

// searchPath returns the programs named command a host finds on path
// (from the entry's env when fromEnv), as programFiles says, or why it
// cannot tell.
func searchPath(command, path string, fromEnv bool, dir, cwd, workspace string) ([]string, string) {
	names := []string{command}
	if goos == "windows" && filepath.Ext(command) == "" {
		// As Node's hosts (libuv) try them: the name, then .com, then
		// .exe; others try .cmd and .bat.
		names = []string{command, command + ".com", command + ".exe", command + ".cmd", command + ".bat"}
	}
	// On Windows, Node's hosts look in the folder they start the program
	// in before PATH: a program there (the repository's) is started
	// instead.
	var here []string
	if goos == "windows" {
		for _, d := range relativeFiles(".", dir, cwd, workspace) {
			here = append(here, programsIn(d, names)...)
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			return nil, fmt.Sprintf("PATH holds the relative folder %q, which depends on where the host starts it", d)
		}
		if fromEnv && networkPath(d) {
			return nil, fmt.Sprintf("the PATH of its env holds the network folder %q, which etdi does not open", d)
		}
		if found := programsIn(d, names); len(found) > 0 {
			return append(here, found...), ""
		}
	}
	if len(here) > 0 {
		return here, ""
	}
	return nil, "it is not found on PATH"
}

// programsIn returns the programs of those names in folder d.
func programsIn(d string, names []string) []string {
	var out []string
	for _, n := range names {
		p := filepath.Join(d, n)
		if networkPath(p) {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && (goos == "windows" || fi.Mode().Perm()&0o111 != 0) {
			out = append(out, p)
		}
	}
	return out
}

// relativeFiles returns relative path p from every folder the host may
// start a program in: the configuration file's folder dir, the entry's
// cwd (relative to dir) and the working directory.
func relativeFiles(p, dir, cwd, workspace string) []string {
	if filepath.IsAbs(p) {
		return []string{filepath.Clean(p)}
	}
	bases := []string{dir}
	if cwd != "" {
		if filepath.IsAbs(cwd) {
			bases = append(bases, cwd)
		} else {
			bases = append(bases, filepath.Join(dir, cwd))
		}
	}
	if workspace != "" {
		if abs, err := filepath.Abs(workspace); err == nil {
			bases = append(bases, abs)
		}
	}
	var out []string
	for _, b := range bases {
		out = append(out, filepath.Join(b, p))
	}
	return out
}

// networkPath reports a Windows path on another machine (\\host\share,
// //host/share, \\?\UNC\...): only looking at one makes Windows sign in
// to that machine with the user's credentials, which a configuration
// file must not make etdi do.
func networkPath(p string) bool {
	slash := func(c byte) bool { return c == '\\' || c == '/' }
	return goos == "windows" && len(p) >= 2 && slash(p[0]) && slash(p[1])
}

// fileInfo returns the file at path, symbolic links followed, if it is a
// regular file (never one on another machine).
func fileInfo(path string) (os.FileInfo, bool) {
	if networkPath(path) {
		return nil, false
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, false
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	return fi, true
}

// sameFile reports whether paths a and b are the same regular file,
// symbolic links followed.
func sameFile(a, b string) bool {
	fa, ok := fileInfo(a)
	if !ok {
		return false
	}
	fb, ok := fileInfo(b)
	return ok && os.SameFile(fa, fb)
}

// etdiFiles returns the files of g.Etdi that exist.
func (g *Gate) etdiFiles() []os.FileInfo {
	if !g.found {
		for _, t := range g.Etdi {
			if fi, ok := fileInfo(t); ok {
				g.trusted = append(g.trusted, fi)
			}
		}
		g.found = true
	}
	return g.trusted
}

// provenEtdi reports whether the entry's program is one of the user's
// etdi programs; if not, what it is instead.
func (g *Gate) provenEtdi(e *Entry, w written, workspace string, lookup func(string) (string, bool)) (bool, string) {
	files, why := programFiles(w.command, e.File, e.Cwd, workspace, w.env, lookup)
	if why != "" {
		return false, why
	}
	if g == nil || len(g.Etdi) == 0 {
		return false, fmt.Sprintf("it resolves to %s, and no etdi of yours is known to compare it with", files[0])
	}
	trusted := g.etdiFiles()
	for _, f := range files {
		ok := false
		if fi, isFile := fileInfo(f); isFile {
			for _, t := range trusted {
				if os.SameFile(fi, t) {
					ok = true
					break
				}
			}
		}
		if !ok {
			return false, fmt.Sprintf("it resolves to %s, which is not the etdi you run (%s)", f, strings.Join(g.Etdi, ", "))
		}
	}
	return true, ""
}

// runSpec is what the arguments of etdi run say, as etdi run reads them.
type runSpec struct {
	// dash is the index of "--" in the arguments (-1 without); url the
	// --url value.
	dash int
	url  string
	// urlIndex is the index of --url's value.
	urlIndex int
	bundle   string
	// headerEnv are the --header-env Name=VARIABLE pairs; headers the
	// --header "Name: value" ones, in order.
	headerEnv [][2]string
	headers   [][2]string
	// trust, pins and lock are the files named, with the flag's spelling.
	trust, pins, lock string
	hasTrust, hasPins bool
	// cedar are the --cedar files.
	cedar []string
}

// parseRun reads the arguments of `etdi run` (args[0] is "run"). An
// argument etdi run would not accept is an error: the entry is never
// read as something other than what etdi run does.
func parseRun(args []string) (runSpec, error) {
	s := runSpec{dash: -1, urlIndex: -1}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			s.dash = i
			break
		}
		flag, val, hasVal := strings.Cut(a, "=")
		switch flag {
		case "--trust", "--pins", "--name", "--url", "--header-env", "--header", "--bundle", "--timeout", "--lock-timeout", "--by",
			"--lock", "--lock-key", "--cedar", "--ask-timeout":
		case "--audit-calls":
			if hasVal && val != "true" && val != "false" {
				return s, fmt.Errorf("argument %q is not one etdi understands", a)
			}
			continue // a switch: it takes no value
		default:
			return s, fmt.Errorf("argument %q is not one etdi understands", a)
		}
		if !hasVal {
			if i+1 >= len(args) {
				return s, fmt.Errorf("%s needs a value", flag)
			}
			i++
			val = args[i]
		}
		if err := s.set(flag, val, i); err != nil {
			return s, err
		}
	}
	switch {
	case s.dash >= 0 && s.url != "":
		return s, fmt.Errorf("gives both a command and --url")
	case s.dash >= 0 && s.dash == len(args)-1:
		return s, fmt.Errorf("nothing after --")
	case s.dash < 0 && s.url == "":
		return s, fmt.Errorf("neither -- CMD nor --url")
	}
	return s, nil
}

// set records the value val of flag, the argument at index i.
func (s *runSpec) set(flag, val string, i int) error {
	switch flag {
	case "--bundle":
		s.bundle = val
	case "--url":
		s.url, s.urlIndex = val, i
	case "--trust":
		s.trust, s.hasTrust = val, true
	case "--pins":
		s.pins, s.hasPins = val, true
	case "--lock":
		s.lock = val
	case "--cedar":
		s.cedar = append(s.cedar, val)
	case "--header":
		name, v, ok := strings.Cut(val, ":")
		if !ok {
			return fmt.Errorf("--header wants \"Name: value\"")
		}
		s.headers = append(s.headers, [2]string{strings.TrimSpace(name), strings.TrimSpace(v)})
	case "--header-env":
		name, variable, ok := strings.Cut(val, "=")
		if !ok || name == "" || variable == "" {
			return fmt.Errorf("--header-env %q: want Name=VARIABLE", val)
		}
		s.headerEnv = append(s.headerEnv, [2]string{name, variable})
	}
	return nil
}

// lookThrough turns an entry that runs the user's etdi (g.Etdi) with
// `run` into the server behind it: `etdi run [flags] -- CMD ARGS...`
// becomes CMD ARGS, and `etdi run [flags] --url URL` becomes URL with
// each --header-env "Name=VAR" header taken from the entry's env VAR
// (which then leaves the env, as the server never sees it) or, failing
// that, from the environment. Arguments etdi cannot read become a
// problem: the entry is never checked as something other than what the
// host starts. An entry whose program is named etdi but is not the
// user's etdi is left as it is (the whole command is the server) and
// marked as an imitation; one whose gate uses another trust policy, pin
// store or lockfile than the user's gets GateOverrides.
//
// Whether the program is the user's etdi, and which files its gate
// judges by, are decided on w, the entry as the file writes it (nil: as
// e holds it): hosts expand different placeholders, some none, so a
// program or file that is the user's only once etdi expands one proves
// nothing.
func (e *Entry) lookThrough(lookup func(string) (string, bool), g *Gate, workspace string, w *written) {
	if len(e.Args) == 0 || e.Args[0] != "run" {
		return
	}
	as := written{e.Command, e.Args, e.Env}
	if w != nil && len(w.args) == len(e.Args) {
		as = *w
	}
	proven, why := g.provenEtdi(e, as, workspace, lookup)
	if !proven {
		if IsEtdiRun(e.Command, e.Args) {
			e.Imitation = fmt.Sprintf("its program %q is named etdi, but %s: the host would start it without etdi's gate", e.Command, why)
		}
		return
	}
	e.Wrapped = true
	env := map[string]string{}
	for k, v := range e.Env {
		env[k] = v
	}
	fail := func(err error) {
		e.Problems = append(e.Problems, runProblemPrefix+err.Error())
		e.Command, e.Args, e.URL = "", nil, ""
	}
	if e.URL != "" {
		// Gemini CLI connects to httpUrl or url before it starts a
		// command; Claude Code and VS Code follow "type": the host may
		// reach that server, never gated.
		fail(fmt.Errorf("the entry also has a URL member, which hosts may connect to instead of starting etdi"))
		return
	}
	s, err := parseRun(e.Args)
	if err != nil {
		fail(err)
		return
	}
	// The same arguments as written: the gate's files as the host may
	// read them.
	sw, err := parseRun(as.args)
	if err != nil {
		fail(err)
		return
	}
	e.Bundle = s.bundle
	e.GateOverrides = gateOverrides(sw, as.env, e, g, workspace, lookup)
	if s.dash >= 0 {
		e.Command, e.Args = e.Args[s.dash+1], e.Args[s.dash+2:]
		if len(e.Args) == 0 {
			e.Args = nil
		}
		return
	}
	headers := map[string]string{}
	for _, h := range s.headers {
		headers[h[0]] = h[1]
	}
	for _, h := range s.headerEnv {
		name, variable := h[0], h[1]
		if v, ok := env[variable]; ok {
			headers[name] = v
			delete(env, variable)
		} else if v, ok := lookupOrNil(lookup, variable); ok && v != "" {
			headers[name] = v
		} else {
			e.Problems = append(e.Problems, fmt.Sprintf("header %s comes from environment variable %s, which is not set", name, variable))
		}
	}
	e.Command, e.Args, e.URL = "", nil, s.url
	if len(headers) > 0 {
		e.Headers = headers
	}
	if e.Env != nil {
		e.setEnv(env)
	}
}

// written is an entry's command, arguments and env as its file writes
// them, before etdi expands any placeholder.
type written struct {
	command string
	args    []string
	env     map[string]string
}

// writtenOf returns the command, args and env of entry v (strings, as
// entry has checked).
func writtenOf(v *strictjson.Value) *written {
	w := &written{}
	if c := v.Get("command"); c != nil {
		w.command = c.Str
	}
	if a := v.Get("args"); a != nil {
		for _, x := range a.Elems {
			w.args = append(w.args, x.Str)
		}
	}
	if env := v.Get("env"); env != nil {
		w.env = map[string]string{}
		for _, m := range env.Members {
			w.env[m.Name] = m.Value.Str
		}
	}
	return w
}

// runProblemPrefix starts the problem of a wrapped entry whose etdi run
// arguments etdi cannot read.
const runProblemPrefix = "runs etdi run: "

// runProblem returns the problem of e's etdi run arguments, if any.
func runProblem(e Entry) string {
	for _, p := range e.Problems {
		if strings.HasPrefix(p, runProblemPrefix) {
			return strings.TrimPrefix(p, runProblemPrefix)
		}
	}
	return ""
}

// cacheDirVars are the variables that move the folder an etcd store's
// snapshots are in by default (os.UserCacheDir).
func cacheDirVars() []string {
	switch goos {
	case "windows":
		return []string{"LocalAppData"}
	case "darwin", "ios":
		return []string{"HOME"}
	case "plan9":
		return []string{"home"}
	}
	return []string{"XDG_CACHE_HOME", "HOME"}
}

// entryPins returns the pin store an entry's etdi run uses: --pins, else
// ETDI_PINS of its env, else the user's.
func entryPins(s runSpec, env map[string]string, user string) string {
	if s.hasPins {
		return s.pins
	}
	if v, ok := envValue(env, "ETDI_PINS"); ok && v != "" {
		return v
	}
	return user
}

// configDirVars are the variables that move the folder etdi's default
// trust policy and pin database are in (os.UserConfigDir).
func configDirVars() []string {
	switch goos {
	case "windows":
		return []string{"AppData"}
	case "darwin", "ios":
		return []string{"HOME"}
	case "plan9":
		return []string{"home"}
	}
	return []string{"XDG_CONFIG_HOME", "HOME"}
}

// gateOverrides returns the trust policy, pin store and lockfile the
// entry's etdi run uses instead of the user's: named by a flag, by
// ETDI_TRUST or ETDI_PINS in the entry's env, or moved by an env
// variable that moves etdi's default files; and an etcd snapshot folder
// (ETDI_ETCD_SNAPSHOTS) other than the user's.
func gateOverrides(s runSpec, env map[string]string, e *Entry, g *Gate, workspace string, lookup func(string) (string, bool)) []GateOverride {
	var out []GateOverride
	check := func(what, via, entryVal, user string) {
		if !sameGateFile(entryVal, user, e.File, e.Cwd, workspace) {
			out = append(out, GateOverride{What: what, Via: via, Entry: entryVal, User: user})
		}
	}
	var userTrust, userPins, userLock string
	if g != nil {
		userTrust, userPins, userLock = g.Trust, g.Pins, g.Lock
	}
	for _, f := range []struct {
		what, flag, variable, val, user string
		has                             bool
	}{
		{"trust policy", "--trust", "ETDI_TRUST", s.trust, userTrust, s.hasTrust},
		{"pin store", "--pins", "ETDI_PINS", s.pins, userPins, s.hasPins},
	} {
		switch v, inEnv := envValue(env, f.variable); {
		case f.has:
			check(f.what, f.flag, f.val, f.user)
		case inEnv && v != "":
			check(f.what, "env "+f.variable, v, f.user)
		default:
			for _, dv := range configDirVars() {
				v, ok := envValue(env, dv)
				if !ok {
					continue
				}
				if mine, _ := lookupOrNil(lookup, dv); v != mine {
					out = append(out, GateOverride{What: f.what, Via: "env " + dv, Entry: "the default under " + v, User: f.user})
				}
			}
		}
	}
	if s.lock != "" {
		check("lockfile", "--lock", s.lock, userLock)
	}
	for _, c := range s.cedar {
		mine := false
		if g != nil {
			for _, u := range g.Cedar {
				mine = mine || sameGateFile(c, u, e.File, e.Cwd, workspace)
			}
		}
		if !mine {
			out = append(out, GateOverride{What: "call-time policy", Via: "--cedar", Entry: c, User: strings.Join(gateCedar(g), ", ")})
		}
	}
	// Code loaded into etdi itself, and the certificate authorities its
	// TLS connections trust: a gate so started is not etdi's.
	for _, v := range []struct{ name, what string }{
		{"LD_PRELOAD", "library loaded into etdi"}, {"LD_AUDIT", "library loaded into etdi"}, {"LD_LIBRARY_PATH", "library folder of etdi"},
		{"DYLD_INSERT_LIBRARIES", "library loaded into etdi"}, {"DYLD_LIBRARY_PATH", "library folder of etdi"}, {"DYLD_FRAMEWORK_PATH", "library folder of etdi"},
		{"SSL_CERT_FILE", "certificate authorities etdi trusts"}, {"SSL_CERT_DIR", "certificate authorities etdi trusts"},
	} {
		if val, ok := envValue(env, v.name); ok {
			if mine, _ := lookupOrNil(lookup, v.name); val != mine {
				out = append(out, GateOverride{What: v.what, Via: "env " + v.name, Entry: val, User: mine})
			}
		}
	}
	// An etcd store's local snapshots, which the gate reads while etcd
	// cannot be reached: in ETDI_ETCD_SNAPSHOTS, else in the user cache
	// folder, which the cache folder variables move.
	if v, ok := envValue(env, "ETDI_ETCD_SNAPSHOTS"); ok {
		if mine, _ := lookupOrNil(lookup, "ETDI_ETCD_SNAPSHOTS"); v != mine {
			out = append(out, GateOverride{What: "pin store snapshot folder", Via: "env ETDI_ETCD_SNAPSHOTS", Entry: v, User: mine})
		}
	} else if store := entryPins(s, env, userPins); strings.HasPrefix(store, "etcd://") {
		for _, dv := range cacheDirVars() {
			if v, ok := envValue(env, dv); ok {
				if mine, _ := lookupOrNil(lookup, dv); v != mine {
					out = append(out, GateOverride{What: "pin store snapshot folder", Via: "env " + dv, Entry: "the default under " + v, User: mine})
				}
			}
		}
	}
	return out
}

// sameGateFile reports whether the file an entry's gate names is the
// user's: the same text, or the same file (a relative path must be the
// user's file from every folder the host may start etdi in).
func sameGateFile(entryVal, user, file, cwd, workspace string) bool {
	if entryVal == user {
		return true
	}
	if user == "" || entryVal == "" || strings.Contains(entryVal, "://") || strings.Contains(user, "://") || networkPath(entryVal) || networkPath(cwd) {
		return false
	}
	dir := filepath.Dir(file)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	files := relativeFiles(entryVal, dir, cwd, workspace)
	for _, f := range files {
		if filepath.Clean(f) != filepath.Clean(user) && !sameFile(f, user) {
			return false
		}
	}
	return len(files) > 0
}

// String says in one sentence what the override does.
func (o GateOverride) String() string {
	user := o.User
	if user == "" {
		user = "none"
	}
	return fmt.Sprintf("its etdi run uses the %s %s (%s), not yours (%s): the gate would judge the server by it", o.What, o.Entry, o.Via, user)
}

func lookupOrNil(lookup func(string) (string, bool), name string) (string, bool) {
	if lookup == nil {
		return "", false
	}
	return lookup(name)
}

func gateCedar(g *Gate) []string {
	if g == nil {
		return nil
	}
	return g.Cedar
}
