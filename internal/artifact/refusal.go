package artifact

import (
	"fmt"
	"slices"
	"strings"

	"github.com/etdi-dev/etdi"
)

// Refusal says why the command line argv with environment env could not
// be resolved to the artifact typ name@version, from the command line and
// environment alone (nothing on disk is read): an option that loads other
// code or swaps what runs (npx --registry, docker run --entrypoint), a
// variable that injects code (NODE_OPTIONS, LD_PRELOAD), a spec that is
// not that one exact package, or for an image a privileged container. ""
// when they run that artifact alone; Resolve may still refuse what it
// reads on disk.
//
// A registry entry builds its launch from arguments and variables it
// chooses: what a bundle binds is the package, and this is how a launch
// that would run more than the package is told apart before a host gets
// it.
func Refusal(argv []string, env map[string]string, typ, name, version string) string {
	p := parse(argv)
	if p.why != "" {
		return p.why
	}
	if p.unsafe != "" {
		return p.unsafe
	}
	for _, n := range injecting {
		if _, set := env[n]; set {
			return n + " is set: it loads other code into the server"
		}
	}
	if p.kind != typ {
		return fmt.Sprintf("the command line runs %s, not the %s package %s", p.what(), typ, name)
	}
	switch typ {
	case etdi.ArtifactNPM, etdi.ArtifactPyPI:
		if !sameName(typ, p.name, name) || !p.exact || !sameVersion(typ, p.version, version) {
			return fmt.Sprintf("the command line runs %s, not %s@%s", p.what(), name, version)
		}
	case etdi.ArtifactOCI:
		if p.globals || p.pull == "always" {
			return "the command line gives the container CLI options that can change what runs"
		}
		if !sameName(typ, p.ref.name, name) {
			return fmt.Sprintf("the command line runs %s, not the image %s", p.what(), name)
		}
		if why := privileged(argv); why != "" {
			return why
		}
	}
	return ""
}

// privilegedFlags give a container the host: it would not be the image
// alone that runs with the person's rights.
var privilegedFlags = []string{"--privileged", "--cap-add", "--device", "--security-opt", "--pid", "--ipc", "--uts", "--userns", "--cgroupns", "--network", "--net"}

// privileged says which option of docker run ARGS gives the container
// more than an isolated container has: the host's devices, namespaces or
// capabilities, or the host's root file system mounted.
func privileged(argv []string) string {
	for i, a := range argv {
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(a, "=")
		for _, f := range privilegedFlags {
			if name != f {
				continue
			}
			if !hasVal && i+1 < len(argv) {
				val = argv[i+1]
			}
			switch f {
			case "--privileged", "--cap-add", "--device", "--security-opt":
				return "the container is given " + f + ": it would run with more than the image's own rights"
			default:
				if val == "host" {
					return "the container shares the host's " + strings.TrimPrefix(f, "--") + " namespace (" + f + " host)"
				}
			}
		}
		if name == "-v" || name == "--volume" || name == "--mount" {
			if !hasVal && i+1 < len(argv) {
				val = argv[i+1]
			}
			if mountsRoot(name, val) {
				return "the container mounts the host's root file system (" + name + " " + val + ")"
			}
		}
	}
	return ""
}

func mountsRoot(flag, val string) bool {
	if flag == "--mount" {
		for _, kv := range strings.Split(val, ",") {
			k, v, _ := strings.Cut(kv, "=")
			if (k == "src" || k == "source") && strings.TrimRight(v, "/") == "" {
				return true
			}
		}
		return false
	}
	src, _, _ := strings.Cut(val, ":")
	return strings.HasPrefix(val, "/") && strings.TrimRight(src, "/") == ""
}

// Injecting reports whether the environment variable name loads other
// code into what runs (NODE_OPTIONS, LD_PRELOAD, PYTHONPATH, ...).
func Injecting(name string) bool { return slices.Contains(injecting, name) }

// RunsFile returns the script or program file the command line argv runs
// (as written: a program looked up on PATH is its bare name), and why not
// when it runs something else or more than that file (a package, code an
// option or a variable loads).
func RunsFile(argv []string, env map[string]string) (path, why string) {
	p := parse(argv)
	switch {
	case p.why != "":
		return "", p.why
	case p.unsafe != "":
		return "", p.unsafe
	case p.kind != etdi.ArtifactFile:
		return "", "the command line runs " + p.what() + ", not a file"
	}
	for _, n := range injecting {
		if _, set := env[n]; set {
			return "", n + " is set: it loads other code into the server"
		}
	}
	return p.path, ""
}
