package artifact

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/artifactsyntax"
)

// npmLock is what is read of a package-lock.json or npm-shrinkwrap.json.
type npmLock struct {
	LockfileVersion int                 `json:"lockfileVersion"`
	Packages        map[string]npmEntry `json:"packages"`
	Dependencies    map[string]npmEntry `json:"dependencies"` // lockfileVersion 1
}

type npmEntry struct {
	Name      string `json:"name"` // the real name of an aliased package
	Version   string `json:"version"`
	Integrity string `json:"integrity"`
	Resolved  string `json:"resolved"`
	Link      bool   `json:"link"`
	// Dependencies are the root package's dependencies (packages[""]); in
	// a version 1 entry they are nested entries, not read.
	Dependencies json.RawMessage `json:"dependencies"`
}

// readNPMLock reads a lockfile of at most maxLock bytes.
func readNPMLock(path string) (*npmLock, error) {
	b, err := readBounded(path, maxLock)
	if err != nil {
		return nil, err
	}
	var l npmLock
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// entry is the installed top-level package name: packages["node_modules/
// <name>"], or for a version 1 lock dependencies[name].
func (l *npmLock) entry(name string) (npmEntry, bool) {
	if l.Packages != nil {
		e, ok := l.Packages["node_modules/"+name]
		return e, ok
	}
	e, ok := l.Dependencies[name]
	return e, ok
}

// rootDepends reports whether the root package depends on name directly.
func (l *npmLock) rootDepends(name string) bool {
	root, ok := l.Packages[""]
	if !ok {
		return false
	}
	var deps map[string]json.RawMessage
	if json.Unmarshal(root.Dependencies, &deps) != nil {
		return false
	}
	_, ok = deps[name]
	return ok
}

// lockIn is the lockfile of a directory: npm-shrinkwrap.json, which npm
// prefers, else package-lock.json; "" if neither exists.
func lockIn(d string) string {
	for _, n := range []string{"npm-shrinkwrap.json", "package-lock.json"} {
		if p := filepath.Join(d, n); exists(p) {
			return p
		}
	}
	return ""
}

// resolveNPM finds the package an npm runner starts: in the project's
// lockfile, else (npx, npm exec) in the npx cache.
func resolveNPM(ctx context.Context, p *plan, env environ, dir string) (*Resolved, string) {
	if p.version != "" && !p.exact {
		return nil, errf("%s@%s is a range or tag, so %s would ask the registry what it means; pin an exact version: %s@<version>",
			shown(p.name), shown(p.version), p.runner, shown(p.name))
	}
	if p.npx {
		// What npm exec looks at before any lockfile or cache.
		if why := npxFirst(p, &env, dir); why != "" {
			return nil, why
		}
	}
	r, why, next := projectLock(p, dir)
	if !next {
		if r != nil && p.npx {
			if why := npxBin(p, r, &env, dir); why != "" {
				return nil, why
			}
		}
		return r, why
	}
	if !p.npx {
		return nil, errf("%s installs %s from its own cache, which is not read (%s); pin it in the project's package-lock.json",
			p.runner, shown(p.name), why)
	}
	cache, cwhy := npmCache(&env)
	if cwhy != "" {
		return nil, cwhy
	}
	return npxCache(ctx, p, cache, why)
}

// projectLock finds the package in the lockfile of the project dir is in
// (npmRoot). next is set when the project does not
// hold the package at the version asked for, and the npx cache is to be
// looked at; why then says where the package was not found, for a
// message.
func projectLock(p *plan, dir string) (r *Resolved, why string, next bool) {
	root := npmRoot(dir)
	lock := lockIn(root)
	installed := root != "" && exists(filepath.Join(root, "node_modules", filepath.FromSlash(p.name)))
	if lock == "" {
		if installed {
			return nil, errf("%s is installed in %s without a lockfile; run npm install there to write package-lock.json",
				shown(p.name), filepath.Join(root, "node_modules")), false
		}
		return nil, "the project has no package-lock.json", true
	}
	l, err := readNPMLock(lock)
	if err != nil {
		return nil, errf("cannot read %s: %v; repair it with npm install", lock, err), false
	}
	e, ok := l.entry(p.name)
	if !ok {
		if installed {
			return nil, errf("%s is installed in %s but %s does not record it; run npm install there",
				shown(p.name), filepath.Join(root, "node_modules"), lock), false
		}
		return nil, lock + " does not record it", true
	}
	if p.exact && e.Version != p.version {
		return nil, errf("%s records version %s", lock, shown(e.Version)), true
	}
	from := filepath.Base(lock) + " " + root
	if e.Link {
		return nil, errf("%s links %s to %s, a directory of the project, not a registry package; run the file it holds with node",
			lock, shown(p.name), shown(e.Resolved)), false
	}
	return npmResolved(p, e, from)
}

// npmResolved is the artifact of a lockfile entry.
func npmResolved(p *plan, e npmEntry, from string) (*Resolved, string, bool) {
	name := p.name
	if e.Name != "" {
		name = e.Name // node_modules/<alias> holds the package e.Name
	}
	if e.Version == "" {
		return nil, errf("%s records no version of %s; reinstall it with npm install", from, shown(name)), false
	}
	digests := sriHashes(e.Integrity)
	if len(digests) == 0 {
		if e.Integrity == "" {
			return nil, errf("%s records no integrity for %s %s (a git, file or linked package); "+
				"install a registry version", from, shown(name), shown(e.Version)), false
		}
		return nil, errf("%s records no sha256, sha384 or sha512 integrity for %s %s; reinstall it with a current npm",
			from, shown(name), shown(e.Version)), false
	}
	return &Resolved{Artifact: etdi.Artifact{Type: etdi.ArtifactNPM, Name: name, Version: e.Version, Digest: digests[0]}, Digests: digests, From: from}, "", false
}

// sriHashes are the SHA-2 hashes of an integrity string, strongest first;
// options (?...) are dropped and other algorithms ignored.
func sriHashes(integrity string) []string {
	var out []string
	for _, alg := range []string{"sha512", "sha384", "sha256"} {
		for _, h := range strings.Fields(integrity) {
			h, _, _ = strings.Cut(h, "?")
			if sriAlg(h) == alg && artifactsyntax.SRI(h) && !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	return out
}

// npmCache is npm's default cache directory: ~/.npm (%LocalAppData%\npm-cache
// on Windows). A cache set anywhere else (--cache, npm_config_cache, an
// .npmrc) has left the launch unresolved before: npx would run what that
// cache holds.
func npmCache(env *environ) (string, string) {
	if runtime.GOOS == "windows" {
		if la := env.get("LOCALAPPDATA"); la != "" {
			return filepath.Join(la, "npm-cache"), ""
		}
	}
	home := npmHome(env)
	if home == "" {
		return "", "HOME is not set, so the npx cache cannot be found"
	}
	return filepath.Join(home, ".npm"), ""
}

// npxCache finds the package in the npx cache: each <cache>/_npx/<hash>
// whose lockfile's root depends on the package directly (the entry npx
// made for it) and holds it at the version asked for. All such entries
// must agree on version and integrity.
// notLocal says why the project's lockfile does not give it, for a
// message.
func npxCache(ctx context.Context, p *plan, cache, notLocal string) (*Resolved, string) {
	at := ""
	if p.exact {
		at = "@" + p.version
	}
	npx := filepath.Join(cache, "_npx")
	f, err := os.Open(npx)
	if err != nil {
		return nil, errf("npx would download %s%s: %s, and npx has not installed it (no %s); pin it in the project's package-lock.json",
			shown(p.name), shown(at), notLocal, npx)
	}
	names, _ := f.Readdirnames(maxCacheDirs)
	f.Close()
	slices.Sort(names)
	var hits []*Resolved
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return nil, "stopped reading the npx cache: " + err.Error()
		}
		d := filepath.Join(npx, n)
		lock := lockIn(d)
		if lock == "" {
			continue
		}
		l, err := readNPMLock(lock)
		if err != nil || !l.rootDepends(p.name) {
			continue
		}
		e, ok := l.entry(p.name)
		if !ok || p.exact && e.Version != p.version {
			continue
		}
		r, why, _ := npmResolved(p, e, "npx cache "+d)
		if why != "" {
			return nil, why
		}
		hits = append(hits, r)
	}
	if len(hits) == 0 {
		return nil, errf("npx would download %s%s: %s, and the npx cache %s does not hold it; pin it in the project's package-lock.json",
			shown(p.name), shown(at), notLocal, npx)
	}
	var versions []string
	for _, h := range hits {
		if !slices.Contains(versions, h.Artifact.Version) {
			versions = append(versions, h.Artifact.Version)
		}
	}
	if len(versions) > 1 {
		return nil, errf("the npx cache holds %s at versions %s, so npx would ask the registry which version is latest; "+
			"pin one: %s@<version>", shown(p.name), strings.Join(versions, ", "), shown(p.name))
	}
	for _, h := range hits[1:] {
		if h.Artifact.Digest != hits[0].Artifact.Digest {
			return nil, errf("the npx cache holds %s %s with different integrities (%s, %s); remove the one npx did not install",
				shown(p.name), hits[0].Artifact.Version, hits[0].From, h.From)
		}
	}
	return hits[0], ""
}

// npmRoot is the project directory npm takes dir to be in (its local
// prefix, @npmcli/config loadLocalPrefix): the nearest directory, from
// dir up, holding package.json or node_modules; dir itself if none does.
func npmRoot(dir string) string {
	root := ""
	parents(dir, func(d string) bool {
		if exists(filepath.Join(d, "package.json")) || exists(filepath.Join(d, "node_modules")) {
			root = d
			return true
		}
		return false
	})
	if root == "" {
		return within(dir, ".")
	}
	return root
}

// npxFirst checks what npm exec (libnpmexec 10, npm 11) runs before it
// looks for the package, when the command line names the package as
// its command (no --package): a bin of that name in the project's own
// package.json; else the first node_modules/.bin/<command> from the
// project up to the file system's root; else <command> in npm's global
// bin directory. Only a bin that the package itself installed in the
// project's node_modules is the package. It also checks the shell npm
// starts the command with and the node the package's program runs on:
// "sh" and "node" are looked up first in each node_modules/.bin from the
// working directory up, where a project can put its own.
func npxFirst(p *plan, env *environ, dir string) string {
	root := npmRoot(dir)
	if why := npmWorkspaceRoot(root); why != "" {
		return why
	}
	// The same PATH is where the package's program, a "#!/usr/bin/env
	// node" script, finds node.
	for _, prog := range []string{"sh", "node"} {
		var found string
		parents(dir, func(d string) bool {
			if f := filepath.Join(d, "node_modules", ".bin", prog); isFile(f) {
				found = f
				return true
			}
			return false
		})
		if found != "" && runtime.GOOS != "windows" {
			if prog == "sh" {
				return shownPath(found) + " is a program named sh where npm looks for the shell it starts the package with; remove it"
			}
			return shownPath(found) + " is a program named node where the package's program looks for node, which runs it; remove it"
		}
	}
	if p.command == "" {
		return ""
	}
	cmd := p.command
	if why := projectBin(root, cmd); why != "" {
		return why
	}
	var found string
	parents(root, func(d string) bool {
		if f := filepath.Join(d, "node_modules", ".bin", cmd); isFile(f) {
			found = f
			return true
		}
		return false
	})
	if found != "" {
		if !ownBin(found, root, p.name) {
			return errf("npx runs %s, which is not a program of the package %s installed in %s; remove it, or install the package there",
				shownPath(found), shown(p.name), filepath.Join(root, "node_modules"))
		}
		return ""
	}
	if prefix := npmGlobalPrefix(env, dir); prefix != "" && prefix != root {
		bin := prefix
		if runtime.GOOS != "windows" {
			bin = filepath.Join(prefix, "bin")
		}
		if f := filepath.Join(bin, cmd); isFile(f) {
			return errf("npx runs %s, a program in npm's global bin directory, before it looks for the package; "+
				"install %s in the project (npm install %s) so that npx runs the project's copy", shownPath(f), shown(p.name), shown(p.name))
		}
	}
	return ""
}

// npmWorkspaceRoot refuses a project inside another package's directory
// whose package.json declares workspaces: npm may take that one as the
// project, with its own node_modules and .npmrc.
func npmWorkspaceRoot(root string) string {
	var why string
	up := filepath.Dir(root)
	if up == root {
		return ""
	}
	parents(up, func(d string) bool {
		f := filepath.Join(d, "package.json")
		if !exists(f) {
			return false
		}
		b, err := readBounded(f, maxSmall)
		if err != nil {
			why = "cannot read " + shownPath(f) + ": " + err.Error() + "; npm reads it to find the project's workspace root"
			return true
		}
		var pkg map[string]json.RawMessage
		if json.Unmarshal(b, &pkg) != nil {
			return false // npm ignores a package.json it cannot read here
		}
		if _, ok := pkg["workspaces"]; ok {
			why = shownPath(f) + " declares workspaces, so npm may take " + shownPath(d) + " as the project, with its own packages " +
				"and configuration; start the server from that directory"
			return true
		}
		return false
	})
	return why
}

// projectBin says why the project's own package.json makes npx run
// another program than the package: its bin holds cmd.
func projectBin(root, cmd string) string {
	f := filepath.Join(root, "package.json")
	if !exists(f) {
		return ""
	}
	b, err := readBounded(f, maxSmall)
	if err != nil {
		return "cannot read " + shownPath(f) + ": " + err.Error() + "; npx reads its bin"
	}
	var pkg struct {
		Name string          `json:"name"`
		Bin  json.RawMessage `json:"bin"`
	}
	if json.Unmarshal(b, &pkg) != nil {
		return shownPath(f) + " is not valid JSON; npx reads it for the project's own programs; repair it"
	}
	for _, name := range binNames(pkg.Name, pkg.Bin) {
		if name == cmd {
			return errf("%s declares a program %s of the project itself, which npx runs instead of the package; rename it, "+
				"or run the project's program with node", shownPath(f), shown(cmd))
		}
	}
	return ""
}

// binNames are the command names a package.json bin member declares: its
// keys (and their base names, as npm cleans them), or for a string the
// package's name without its scope (and with it).
func binNames(pkgName string, bin json.RawMessage) []string {
	var one string
	if json.Unmarshal(bin, &one) == nil {
		unscoped := pkgName
		if i := strings.LastIndexByte(pkgName, '/'); i >= 0 {
			unscoped = pkgName[i+1:]
		}
		return []string{pkgName, unscoped}
	}
	var many map[string]json.RawMessage
	if json.Unmarshal(bin, &many) != nil {
		return nil
	}
	var out []string
	for k := range many {
		out = append(out, k, filepath.Base(filepath.FromSlash(k)), strings.TrimSpace(k))
	}
	return out
}

// ownBin reports whether the program f is a file of the package name
// installed in root's node_modules (after symbolic links).
func ownBin(f, root, name string) bool {
	real, err := filepath.EvalSymlinks(f)
	if err != nil {
		return false
	}
	pkg, err := filepath.EvalSymlinks(filepath.Join(root, "node_modules", filepath.FromSlash(name)))
	if err != nil {
		return false
	}
	return strings.HasPrefix(real, pkg+string(filepath.Separator))
}

// npmGlobalPrefix is npm's default global prefix: that of the node found
// on the launch's PATH (the prefix setting and PREFIX have left the
// launch unresolved before); "" if there is none.
func npmGlobalPrefix(env *environ, dir string) string {
	node, why := lookPath("node", env, dir)
	if why != "" {
		return ""
	}
	real, err := filepath.EvalSymlinks(node)
	if err != nil {
		return ""
	}
	if runtime.GOOS == "windows" {
		return filepath.Dir(real)
	}
	return filepath.Dir(filepath.Dir(real))
}

// npxBin checks the program npm exec starts for a package the project's
// lockfile gives and node_modules holds: the package's bin (the one named
// after it, or its only one) looked up first in each node_modules/.bin
// from the working directory up, must be a file of the package.
func npxBin(p *plan, r *Resolved, env *environ, dir string) string {
	root := npmRoot(dir)
	pkgDir := filepath.Join(root, "node_modules", filepath.FromSlash(p.name))
	if !exists(pkgDir) {
		return "" // npx installs it: what it installs is the lockfile's version
	}
	if runtime.GOOS == "windows" {
		// npm writes command shims there, not links, and cmd.exe runs
		// the .cmd one: a script etdi does not read.
		return errf("on Windows npx starts %s through a command shim in %s, which etdi does not read; "+
			"run the package's program with node", shown(p.name), filepath.Join(root, "node_modules", ".bin"))
	}
	f := filepath.Join(pkgDir, "package.json")
	b, err := readBounded(f, maxSmall)
	if err != nil {
		return "cannot read " + shownPath(f) + ": " + err.Error() + "; reinstall the package with npm ci"
	}
	var pkg struct {
		Name string          `json:"name"`
		Bin  json.RawMessage `json:"bin"`
	}
	if json.Unmarshal(b, &pkg) != nil {
		return shownPath(f) + " is not valid JSON; reinstall the package with npm ci"
	}
	name := pkg.Name
	if name == "" {
		name = r.Artifact.Name
	}
	bins := npmBins(name, pkg.Bin)
	if p.pkgCmd != "" {
		bins = []string{p.pkgCmd} // npm exec --package=PKG -- CMD runs CMD
	}
	if len(bins) == 0 {
		return errf("%s declares no program npx can tell it runs (one bin, or one named after the package); run the program with node",
			shownPath(f))
	}
	for _, bin := range bins {
		var found string
		parents(dir, func(d string) bool {
			if c := filepath.Join(d, "node_modules", ".bin", bin); isFile(c) {
				found = c
				return true
			}
			return false
		})
		if found == "" {
			return errf("no node_modules/.bin/%s from %s up, so npx would look %s up on PATH; reinstall the package with npm ci",
				shown(bin), within(dir, "."), shown(bin))
		}
		if !ownBin(found, root, p.name) {
			return errf("npx runs %s, which is not a program of the package %s installed in %s; remove it, or reinstall the package with npm ci",
				shownPath(found), shown(p.name), filepath.Join(root, "node_modules"))
		}
	}
	return ""
}

// npmBins are the commands npm exec may run for a package (libnpmexec
// getBinFromManifest): every name of its bins when they all name one
// file (npm takes the first), else the bin named after the package
// without its scope; none if there is neither.
func npmBins(name string, bin json.RawMessage) []string {
	unscoped := name
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		unscoped = name[i+1:]
	}
	var one string
	if json.Unmarshal(bin, &one) == nil {
		return []string{unscoped}
	}
	var many map[string]string
	if json.Unmarshal(bin, &many) != nil || len(many) == 0 {
		return nil
	}
	files := map[string]bool{}
	var names []string
	for k, v := range many {
		files[v] = true
		names = append(names, k)
	}
	if len(files) == 1 {
		slices.Sort(names)
		return names
	}
	if _, ok := many[unscoped]; ok {
		return []string{unscoped}
	}
	return nil
}

// isFile reports whether f is a regular file, after symbolic links.
func isFile(f string) bool {
	fi, err := os.Stat(f)
	return err == nil && fi.Mode().IsRegular()
}
