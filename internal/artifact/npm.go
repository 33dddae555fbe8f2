package artifact

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
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
	r, why, next := projectLock(p, dir)
	if !next {
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

// projectLock finds the package in the lockfile of the project dir is in:
// the nearest directory, from dir up, holding a lockfile, package.json or
// node_modules (npm's local prefix). next is set when the project does not
// hold the package at the version asked for, and the npx cache is to be
// looked at; why then says where the package was not found, for a
// message.
func projectLock(p *plan, dir string) (r *Resolved, why string, next bool) {
	var root, lock string
	parents(dir, func(d string) bool {
		if lock = lockIn(d); lock != "" || exists(filepath.Join(d, "package.json")) || exists(filepath.Join(d, "node_modules")) {
			root = d
			return true
		}
		return false
	})
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
	return &Resolved{Artifact: Artifact{Type: TypeNPM, Name: name, Version: e.Version, Digest: digests[0]}, Digests: digests, From: from}, "", false
}

// sriHashes are the SHA-2 hashes of an integrity string, strongest first;
// options (?...) are dropped and other algorithms ignored.
func sriHashes(integrity string) []string {
	var out []string
	for _, alg := range []string{"sha512", "sha384", "sha256"} {
		for _, h := range strings.Fields(integrity) {
			h, _, _ = strings.Cut(h, "?")
			if sriAlg(h) == alg && validSRI(h) && !slices.Contains(out, h) {
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
