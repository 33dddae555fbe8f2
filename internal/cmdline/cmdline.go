// Package cmdline reads the command line of a stdio server as the programs
// on it read their arguments: a program's base name, subcommands, the
// flags of package runners (npx, uvx, pipx, ...) and which of them take a
// value, and the options and image of docker run. Package identity names
// a server from what it reads and package artifact resolves what the
// server runs; both read a command line alike because both read it here.
//
// A flag's value is never taken for what follows the flags: npx --api-key
// SECRET pkg runs pkg.
package cmdline

import (
	"path/filepath"
	"strings"
)

// Base is the last element of a path, read with '/' and '\' both as
// separators: a command line may come from a Windows configuration.
func Base(p string) string {
	return filepath.Base(strings.ReplaceAll(p, `\`, "/"))
}

// CutExt returns name without the first of exts it ends in, compared
// without regard to case (NPX.CMD ends in .cmd), and whether it ended in
// one.
func CutExt(name string, exts ...string) (string, bool) {
	for _, ext := range exts {
		if len(name) >= len(ext) && strings.EqualFold(name[len(name)-len(ext):], ext) {
			return name[:len(name)-len(ext)], true
		}
	}
	return name, false
}

// Set is a set of strings, for flag tables.
func Set(s ...string) map[string]bool {
	m := map[string]bool{}
	for _, x := range s {
		m[x] = true
	}
	return m
}

// FlagSpec describes a runner's or interpreter's own flags.
type FlagSpec struct {
	// Values take the next argument as their value.
	Values map[string]bool
	// Pkg name the package to run (npx -p PKG, uvx --from PKG).
	Pkg map[string]bool
	// Stop end the flags: what follows is inline code or a module, and
	// there is no script or package after them. A stop flag written with
	// its value (--eval=CODE) stops too, unless StopBare is set.
	Stop map[string]bool
	// StopBare: a stop flag stops only written alone; --eval=CODE is
	// skipped as any other flag is.
	StopBare bool
	// Bools are the long flags known to take no value. A package runner
	// takes any other long flag written without "=value" to take the next
	// argument (npx --api-key SECRET pkg): that argument is never the
	// package.
	Bools map[string]bool
	// Assignments: NAME=VALUE arguments among the flags are skipped as
	// flags are (env NAME=VALUE PROGRAM).
	Assignments bool
}

// With returns fs with the flags of more added to it.
func (fs FlagSpec) With(more FlagSpec) FlagSpec {
	union := func(a, b map[string]bool) map[string]bool {
		m := map[string]bool{}
		for x := range a {
			m[x] = true
		}
		for x := range b {
			m[x] = true
		}
		return m
	}
	return FlagSpec{Values: union(fs.Values, more.Values), Pkg: union(fs.Pkg, more.Pkg), Stop: union(fs.Stop, more.Stop),
		Bools: union(fs.Bools, more.Bools), StopBare: fs.StopBare || more.StopBare, Assignments: fs.Assignments || more.Assignments}
}

// Sub returns the arguments after the subcommand if the first argument
// that is neither a flag nor the value of one (listed in values) is one
// of names.
func Sub(args []string, values map[string]bool, names ...string) ([]string, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			if values[a] {
				i++
			}
			continue
		}
		for _, n := range names {
			if a == n {
				return args[i+1:], true
			}
		}
		return nil, false
	}
	return nil, false
}

// Skip drops leading flags, the values of flags that take one and, with
// fs.Assignments, NAME=VALUE arguments; it returns what follows "--" or
// the flags, or nil at a stop flag (node -e CODE, node --eval=CODE).
func Skip(args []string, fs FlagSpec) []string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return args[i+1:]
		case fs.Stop[a]:
			return nil
		case fs.Values[a]:
			i++
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if k, _, ok := strings.Cut(a, "="); ok && fs.Stop[k] && !fs.StopBare {
				return nil
			}
		case fs.Assignments && strings.Contains(a, "="):
		default:
			return args[i:]
		}
	}
	return nil
}

// Runner is what a package runner's own flags say about the package it
// starts. Only the flags before the first plain argument are the
// runner's: what follows belongs to the server (npx pkg -p 8080).
type Runner struct {
	// Pkgs are the values of the package flag (npx -p, uvx --from), in
	// order; when there is one, it is the package.
	Pkgs []string
	// First is the first argument that is neither a flag nor a flag's
	// value, or the one after "--"; "" if there is none. It is the
	// package when no package flag names one, and the program to run
	// when one does.
	First string
	// Cache is the value of --cache (npx's cache directory).
	Cache string
	// Stopped is set when a stop flag (npx -c CMD) ended the flags:
	// First is then "".
	Stopped bool
}

// ReadRunner reads a package runner's flags. A long flag not known to
// take no value takes the next argument, which is never the package (npx
// --api-key SECRET pkg).
func ReadRunner(args []string, fs FlagSpec) Runner {
	var r Runner
	for i := 0; i < len(args); i++ {
		a := args[i]
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
			switch {
			case fs.Pkg[k]:
				r.Pkgs = append(r.Pkgs, v)
			case fs.Stop[k] && !fs.StopBare:
				r.Stopped = true
				return r
			case k == "--cache":
				r.Cache = v
			}
			continue
		}
		switch {
		case a == "--":
			if i+1 < len(args) {
				r.First = args[i+1]
			}
			return r
		case fs.Stop[a]:
			r.Stopped = true
			return r
		case fs.Pkg[a] || a == "--cache":
			if i+1 < len(args) {
				if a == "--cache" {
					r.Cache = args[i+1]
				} else {
					r.Pkgs = append(r.Pkgs, args[i+1])
				}
			}
			i++
		case fs.Values[a]:
			i++
		case strings.HasPrefix(a, "--") && !fs.Bools[a]:
			i++ // an unknown long flag: assumed to take the next argument
		case strings.HasPrefix(a, "-") && len(a) > 1:
		default:
			r.First = a
			return r
		}
	}
	return r
}

// NPMFlags are the flags of npx, npm exec, bunx, pnpm dlx, yarn dlx and
// bun x that matter to find the package.
var NPMFlags = FlagSpec{Values: Set("-p", "--package", "-c", "--call", "--cache", "--userconfig", "-w", "--workspace"),
	Pkg: Set("-p", "--package"),
	Bools: Set("--yes", "--no", "--no-yes", "--quiet", "--silent", "--verbose", "--ignore-scripts", "--no-install",
		"--offline", "--prefer-offline", "--prefer-online", "--legacy-peer-deps", "--force", "--workspaces", "--ws",
		"--include-workspace-root", "--no-workspaces", "--bun", "--no-update-notifier", "--no-audit", "--no-fund",
		"--foreground-scripts", "--global", "--dry-run", "--shell-emulator", "--no-color", "--color")}

// UVFlags are the flags of uvx, uv tool run and uv run, global options
// included.
var UVFlags = FlagSpec{Values: Set("--from", "--with", "-w", "--with-editable", "--with-requirements", "--python", "-p",
	"--index", "--index-url", "-i", "--extra-index-url", "--default-index", "--find-links", "-f", "--directory", "--project",
	"--cache-dir", "--config-file", "--env-file", "--constraints", "-c", "--overrides", "--build-constraints", "-b",
	"--refresh-package", "--reinstall-package", "--upgrade-package", "-P", "--no-binary-package", "--only-binary-package",
	"--color", "--index-strategy", "--keyring-provider", "--resolution", "--prerelease", "--exclude-newer", "--link-mode",
	"--allow-insecure-host", "--python-preference", "--package", "--extra", "--group", "--script"),
	Pkg: Set("--from"),
	Bools: Set("--isolated", "--no-cache", "--offline", "--quiet", "--verbose", "--native-tls", "--no-progress",
		"--no-python-downloads", "--allow-python-downloads", "--no-config", "--refresh", "--reinstall", "--upgrade",
		"--no-build", "--no-binary", "--no-sources", "--no-index", "--no-build-isolation", "--compile-bytecode",
		"--managed-python", "--no-managed-python", "--preview", "--no-env-file", "--system-certs", "--lfs",
		"--all-extras", "--no-deps", "--exact", "--frozen", "--locked", "--no-color")}

// PipxFlags are the flags of pipx run.
var PipxFlags = FlagSpec{Values: Set("--spec", "--python", "--index-url", "-i", "--pip-args", "--backend"), Pkg: Set("--spec"),
	Bools: Set("--no-cache", "--pypi", "--verbose", "--quiet", "--system-site-packages", "--path", "--editable", "--preinstall")}

// UVToolRun returns the arguments after uv tool run, if args (what
// follows uv) are that.
func UVToolRun(args []string) ([]string, bool) {
	if rest, ok := Sub(args, UVFlags.Values, "tool"); ok {
		return Sub(rest, UVFlags.Values, "run")
	}
	return nil, false
}
