package cmdline

import "strings"

// Flags of docker run and podman run (and their global options) that take
// a separate value. Every other flag is taken to stand alone; a
// --flag=value never takes the next argument.
var containerValues = Set(
	// global options, before "run"
	"-H", "--host", "-c", "--context", "--config", "-l", "--log-level", "--tlscacert", "--tlscert", "--tlskey",
	"--connection", "--identity", "--url", "--root", "--runroot", "--storage-driver", "--storage-opt", "--cgroup-manager",
	"--namespace", "-n", "--address", "-a",
	// run options
	"-e", "--env", "--env-file", "-v", "--volume", "--volumes-from", "--mount", "--tmpfs", "--name", "-p", "--publish",
	"--expose", "--network", "--net", "--network-alias", "--net-alias", "-w", "--workdir", "-u", "--user", "--entrypoint",
	"-h", "--hostname", "--domainname", "--label", "--label-file", "--annotation", "--add-host", "--dns", "--dns-option",
	"--dns-opt", "--dns-search", "--cap-add", "--cap-drop", "--device", "--device-cgroup-rule", "--device-read-bps",
	"--device-read-iops", "--device-write-bps", "--device-write-iops", "--gpus", "--group-add", "--ipc", "--pid", "--uts",
	"--userns", "--cgroupns", "--cgroup-parent", "--cidfile", "--cpus", "--cpu-shares", "--cpu-period", "--cpu-quota",
	"--cpu-rt-period", "--cpu-rt-runtime", "--cpuset-cpus", "--cpuset-mems", "-m", "--memory", "--memory-reservation",
	"--memory-swap", "--memory-swappiness", "--kernel-memory", "--shm-size", "--oom-score-adj", "--pids-limit", "--ulimit",
	"--blkio-weight", "--blkio-weight-device", "--restart", "--runtime", "--security-opt", "--stop-signal", "--stop-timeout",
	"--log-driver", "--log-opt", "--platform", "--pull", "--isolation", "--ip", "--ip6", "--link", "--link-local-ip",
	"--mac-address", "--sysctl", "--health-cmd", "--health-interval", "--health-retries",
	"--health-start-period", "--health-start-interval", "--health-timeout", "--attach", "--detach-keys",
	"--init-path", "--secret", "--pod", "--pod-id-file", "--arch", "--os", "--variant", "--authfile", "--creds",
	"--cert-dir", "--decryption-key", "--uidmap", "--gidmap", "--subuidname", "--subgidname", "--hooks-dir", "--pidfile",
	"--conmon-pidfile", "--cgroups", "--cgroup-conf", "--chrootdirs", "--image-volume", "--requires", "--sdnotify",
	"--seccomp-policy", "--timeout", "--tz", "--umask", "--unsetenv", "--volume-driver", "--group-entry", "--passwd-entry",
	"--personality", "--preserve-fd", "--rdt-class", "--retry", "--retry-delay", "--hostuser", "--systemd",
)

// Short flags of docker run that take a value, for clusters like -it or
// -ie NAME.
const containerShortValues = "ehlmpuvwac"

// ContainerCommand finds the subcommand of a container CLI (docker,
// podman, nerdctl) in args, what follows the program: the first argument
// that is neither a global option, the value of one, nor "container"
// (docker container run). It returns its index, len(args) if there is
// none, and whether global options stand before it (they may choose
// another daemon or configuration).
func ContainerCommand(args []string) (i int, globals bool) {
	for ; i < len(args); i++ {
		a := args[i]
		if a == "container" {
			continue
		}
		if !strings.HasPrefix(a, "-") {
			return i, globals
		}
		globals = true
		if containerValues[a] && !strings.Contains(a, "=") {
			i++
		}
	}
	return len(args), globals
}

// RunImage reads the options of docker run, podman run or nerdctl run,
// args being what follows "run". image is the first argument that is
// neither an option nor the value of one, or the one after "--"; "" if
// there is none. pull is the value of --pull given before it, "" if none.
func RunImage(args []string) (image, pull string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return args[i+1], pull
			}
			return "", pull
		case a == "--pull" && i+1 < len(args):
			pull = args[i+1]
			i++
		case strings.HasPrefix(a, "--pull="):
			pull = a[len("--pull="):]
		case strings.HasPrefix(a, "--"):
			if !strings.Contains(a, "=") && containerValues[a] {
				i++
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			// A cluster of short flags: the first that takes a value takes
			// the rest of the cluster, or the next argument.
			for j := 1; j < len(a); j++ {
				if strings.IndexByte(containerShortValues, a[j]) >= 0 {
					if j == len(a)-1 {
						i++
					}
					break
				}
			}
		default:
			return a, pull
		}
	}
	return "", pull
}

// CutDigest slices an image reference, NAME[:TAG][@DIGEST], around its
// '@': it returns NAME[:TAG], the digest and whether there was one.
func CutDigest(ref string) (name, digest string, found bool) {
	return strings.Cut(ref, "@")
}

// CutTag slices an image name, NAME[:TAG], around the ':' of its tag: it
// returns NAME, the tag and whether there was one. A ':' before the last
// '/' is a registry's port (localhost:5000/x), not a tag.
func CutTag(ref string) (name, tag string, found bool) {
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		return ref[:i], ref[i+1:], true
	}
	return ref, "", false
}
