package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/atomicfile"
	"github.com/etdi-dev/etdi/internal/hostconfig"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
)

const installHelp = `Install a server from an MCP Registry into a host's configuration, already
wrapped: the host starts it through etdi run, which verifies it on every
start.

etdi reads the entry (GET /v0.1/servers/{name}/versions/{version}; the
latest without @VERSION), builds the launch exactly as a host does from the
chosen package (its runner, arguments and environment; npx -y PKG@VERSION,
uvx PKG==VERSION, docker run -i --rm IMAGE, dnx PKG@VERSION) or remote (URL
and headers), and then:

  - an entry that names a signed bundle (its server.json's _meta
    dev.etdi): the bundle is fetched and must have the digest the entry
    names (else exit 10), verify against the trust policy, and be made for
    this entry: its registry name and its artifacts or endpoints must bind
    the chosen package or remote (else impersonation, exit 12). It is kept
    under the etdi configuration directory and named in the entry
    (etdi run --bundle FILE);
  - an unsigned entry follows the trust policy's unsigned rule: block
    refuses to install it (exit 10), warn and allow install it.

The entry is added where the host reads its servers (--host HOST for its
user configuration file, or --config FILE), then wrapped as etdi wrap
does: the file keeps every byte it had, a first change keeps
FILE.etdi-backup, and etdi unwrap restores the plain entry. An entry of the
same name is never replaced. --dry-run prints the change and writes
nothing.

Inputs the entry asks for (environment variables, headers, arguments,
URL variables) are given with --input NAME=VALUE; a required one missing is
named with the flag that gives it. The tools are approved the first time
the host starts the server (etdi review), or before with etdi check
--config FILE --name ENTRY --yes.`

type installFlags struct {
	registryURL, host, config, name string
	inputs                          []string
	pkg, remote                     int
	trust, pins                     string
	dryRun                          bool
}

func (e *env) installCmd() *cobra.Command {
	var f installFlags
	cmd := &cobra.Command{
		Use:   "install --registry URL SERVER[@VERSION] (--host HOST | --config FILE)",
		Short: "Install a server from an MCP Registry into a host's configuration, wrapped and verified",
		Long:  installHelp,
		Example: `  etdi install --registry https://registry.modelcontextprotocol.io io.github.acme/weather --host cursor --dry-run
  etdi install --registry https://registry.example.org io.github.acme/weather@1.2.0 --config ~/.cursor/mcp.json --input API_KEY=…`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.registryURL == "" {
				return usagef("--registry URL is required")
			}
			if (f.host == "") == (f.config == "") {
				return usagef("give the host with --host HOST or its file with --config FILE")
			}
			if f.pkg != 0 && f.remote != 0 {
				return usagef("--package and --remote choose one launch: give one of them")
			}
			return e.runInstall(&f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.registryURL, "registry", "", "the registry's URL (https, or http to a loopback host)")
	fl.StringVar(&f.host, "host", "", "the host whose user configuration file gets the entry: "+strings.Join(installHosts(), ", "))
	fl.StringVar(&f.config, "config", "", "the host configuration file that gets the entry")
	fl.StringVar(&f.name, "name", "", "the entry's name (default: the server's name after its namespace)")
	fl.StringArrayVar(&f.inputs, "input", nil, "a value the entry asks for, NAME=VALUE (repeatable)")
	fl.IntVar(&f.pkg, "package", 0, "install the entry's Nth package (1 is the first; default: the first etdi can start)")
	fl.IntVar(&f.remote, "remote", 0, "install the entry's Nth remote instead of a package")
	fl.StringVar(&f.trust, "trust", "", "the trust policy the entry uses, written as an absolute path (default: $ETDI_TRUST when set, else the default policy, not written)")
	fl.StringVar(&f.pins, "pins", "", "the pin database the entry uses, written as an absolute path (default: $ETDI_PINS when set, else the default database, not written)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the change and write nothing")
	return cmd
}

func installHosts() []string {
	var out []string
	for _, l := range hostconfig.Launches {
		out = append(out, l.Host)
	}
	return out
}

// installTarget is what install will write: the entry as the host would
// start it before wrapping, and where it came from.
type installTarget struct {
	rs  *guard.RegistryServer
	new hostconfig.NewEntry
}

func (e *env) runInstall(f *installFlags, arg string) error {
	name, version, _ := strings.Cut(arg, "@")
	if err := etdi.ValidateRegistryName(name); err != nil {
		return usagef("%v", err)
	}
	in, err := parseRegistryInputs(f.inputs)
	if err != nil {
		return err
	}
	client, err := registry.NewClient(f.registryURL)
	if err != nil {
		return usagef("--registry: %v", err)
	}
	// Trust and pins: the paths the entry will name, as wrap takes them.
	wf := &wrapFlags{trust: f.trust, pins: f.pins, name: f.name, dryRun: f.dryRun}
	if err := e.gatePaths(&wf.trust, &wf.pins); err != nil {
		return err
	}
	policyPath, pinsPath := e.defaultTrust(), e.defaultPins()
	if wf.trust != "" {
		policyPath = wf.trust
	}
	if wf.pins != "" {
		pinsPath = wf.pins
	}
	policy, err := loadPolicy(policyPath)
	if err != nil {
		return err
	}
	rs, err := guard.DescribeRegistry(e.ctx, client, name, version, guard.RegistryOptions{Inputs: in, Package: f.pkg, Remote: f.remote})
	if errors.Is(err, registry.ErrNotFound) {
		return fmt.Errorf("%s: no such server or version in %s", arg, f.registryURL)
	}
	if err != nil {
		return errors.New(maskInputs(in, err))
	}
	if note := rs.Deprecated(); note != "" {
		say(e.stderr, "etdi: warning: %s\n", note)
	}
	t := &installTarget{rs: rs, new: newEntryOf(rs)}
	if code, err := e.installVerify(t, policy, pinsPath); err != nil {
		// Printed here, as report would, to end with the finding's code.
		report(e.stderr, err, true)
		return &exitCodeError{code}
	}

	// The bundle is kept where the entry can name it.
	if f.name == "" {
		_, f.name, _ = strings.Cut(name, "/")
	}
	wf.name = f.name
	if rs.Bundle != nil {
		wf.bundle = filepath.Join(filepath.Dir(e.wrapStatePath()), "bundles", bundleFileName(name, rs.Entry.Server.Version))
	}
	path, host, err := e.installFile(f)
	if err != nil {
		return err
	}
	return e.installWrite(path, host, wf, t)
}

// newEntryOf is the entry a host would write for the package or remote
// rs describes.
func newEntryOf(rs *guard.RegistryServer) hostconfig.NewEntry {
	sp := rs.Spec
	if rs.Package != nil {
		env := map[string]string{}
		for _, kv := range sp.Env {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		return hostconfig.NewEntry{Command: sp.Command[0], Args: sp.Command[1:], Env: env}
	}
	typ := "http"
	if rs.Remote.Type == registry.TransportSSE {
		typ = "sse"
	}
	h := map[string]string{}
	for k := range sp.Header {
		h[k] = sp.Header.Get(k)
	}
	return hostconfig.NewEntry{URL: sp.URL, Transport: typ, Headers: h}
}

// installVerify decides whether the entry may be installed: what the
// entry alone decides (guard's Precheck: its bundle fetched by its
// digest, verified against the policy, made for this entry's name and
// the package or remote chosen; a revoked server), else, for an unsigned
// entry, the policy's unsigned rule. It returns the exit code of a
// refusal.
func (e *env) installVerify(t *installTarget, p *trust.Policy, pins string) (int, error) {
	rs := t.rs
	s := rs.Entry.Server
	opts := rs.Options(guard.Options{Policy: p, Pins: pins, Tokens: func() verify.TokenVerifier { return e.tokenVerifier(time.Time{}) }})
	r, err := rs.Precheck(e.ctx, opts)
	if err != nil {
		return exitError, err
	}
	if r != nil {
		var why []string
		for _, fd := range r.Findings {
			if fd.Severity == finding.Error {
				why = append(why, fd.Message)
			}
		}
		code := r.ExitCode()
		if code == finding.ExitImpersonation {
			return code, fmt.Errorf("impersonation: %s@%s is not what its bundle was made for: %s", s.Name, s.Version, strings.Join(why, "; "))
		}
		return code, fmt.Errorf("%s@%s is refused: %s", s.Name, s.Version, strings.Join(why, "; "))
	}
	if rs.Bundle == nil {
		switch p.Unsigned {
		case trust.Warn:
			say(e.stderr, "etdi: warning: %s@%s is unsigned: its tools are approved by digest when the host first starts it\n", s.Name, s.Version)
			return 0, nil
		case trust.Allow:
			return 0, nil
		}
		return finding.ExitSignature, &hintError{fmt.Errorf("%s@%s is unsigned (its server.json names no dev.etdi bundle) and the trust policy blocks unsigned servers: not installed", s.Name, s.Version),
			"to install unsigned servers and approve their tools by digest: etdi trust unsigned warn"}
	}
	// What the bundle signs, against the pins: a revoked tool or key, or
	// a rug pull of an approved version, is refused now rather than at
	// the host's first start. Tools never approved are approved then.
	o, err := guard.Observe(e.ctx, nil, opts)
	if err != nil {
		return exitError, err
	}
	if o.Observation != nil {
		if c, err := e.comparePinsReadOnly(pins, o.Observation); err != nil {
			return exitError, err
		} else if c != nil {
			var why []string
			code := 0
			for _, fd := range c.Findings {
				if fd.Severity == finding.Error && fd.Kind.ExitCode() != finding.ExitApproval {
					why = append(why, fd.Message)
					code = finding.Worse(code, fd.Kind.ExitCode())
				}
			}
			if len(why) > 0 {
				return code, fmt.Errorf("%s@%s is refused by the pins: %s", s.Name, s.Version, strings.Join(why, "; "))
			}
		}
	}
	say(e.stderr, "etdi: %s@%s: bundle verified for %s\n", s.Name, s.Version, rs.Chosen())
	return 0, nil
}

// comparePinsReadOnly compares what a bundle signs with the pin database
// at path, read-only; nil when there is no database yet (nothing approved,
// nothing revoked).
func (e *env) comparePinsReadOnly(path string, o *pin.Observation) (*pin.Comparison, error) {
	if !pin.IsEtcd(path) {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	st, err := (&pinFlags{path: path, env: e, lockTimeout: pin.DefaultLockTimeout}).open(true)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.Compare(o)
}

// bundleFileName is where install keeps an entry's bundle: the name and
// version escaped into one file name (a registry name may hold "..").
func bundleFileName(name, version string) string {
	n := url.PathEscape(name + "@" + version)
	if len(n) > 200 {
		h := registry.Digest([]byte(name + "@" + version))
		n = strings.TrimPrefix(h, "sha256:")
	}
	return n + ".etdi.json"
}

// installFile is the configuration file install writes and its host.
func (e *env) installFile(f *installFlags) (path, host string, err error) {
	if f.config != "" {
		return f.config, hostconfig.GuessHost(f.config), nil
	}
	home, _ := os.UserHomeDir()
	for _, l := range hostconfig.Locations(runtime.GOOS, hostconfig.Options{Home: home, Lookup: e.lookupEnv}) {
		if l.Host == f.host && !l.Project {
			return l.Path, l.Host, nil
		}
	}
	return "", "", usagef("--host %q: want one of %s", f.host, strings.Join(installHosts(), ", "))
}

// installWrite adds the entry to the file, wraps it, and writes both
// (or prints them with --dry-run).
func (e *env) installWrite(path, host string, wf *wrapFlags, t *installTarget) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	real := abs
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		real = r
	}
	var old []byte
	perm := os.FileMode(0o600)
	switch fi, err := os.Stat(real); {
	case err == nil:
		perm = fi.Mode().Perm()
		if old, err = hostconfig.ReadConfig(real); err != nil {
			return err
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return err
	}
	added, err := hostconfig.AddEntry(real, old, host, wf.name, t.new)
	if err != nil {
		var exists *hostconfig.ErrEntryExists
		if errors.As(err, &exists) {
			return &hintError{err, "choose another name with --name, or remove the entry first"}
		}
		return err
	}
	etdiPath, err := thisEtdi()
	if err != nil {
		return err
	}
	gate, err := e.wrapGate(wf, true)
	if err != nil {
		return err
	}
	res, err := hostconfig.Wrap(real, added, hostconfig.WrapOptions{Host: host, Etdi: etdiPath, Name: wf.name, Bundle: wf.bundle, Trust: wf.trust, Pins: wf.pins, Gate: gate, Lookup: e.lookupEnv})
	if err != nil {
		return err
	}
	if res.Count(hostconfig.StatusWrapped) != 1 {
		for _, o := range res.Outcomes {
			if o.Name == wf.name && o.Reason != "" {
				return fmt.Errorf("the new entry %s could not be wrapped: %s", wf.name, o.Reason)
			}
		}
		return fmt.Errorf("the new entry %s could not be wrapped", wf.name)
	}
	// One insertion into the old text: show it as a diff.
	p, s := hostconfig.CommonEnds(old, res.Data)
	diff := &hostconfig.Result{Data: res.Data, Changes: []hostconfig.Change{{OldStart: p, OldEnd: len(old) - s, NewStart: p, NewEnd: len(res.Data) - s}}}
	// The diff shows the entry as written, its secrets masked.
	var shown bytes.Buffer
	printWrapDiff(&shown, real, old, diff)
	showDiff := func() { io.WriteString(e.stdout, t.rs.Spec.Secrets.String(shown.String())) }
	if wf.dryRun {
		showDiff()
		say(e.stdout, "etdi: %s: would install %s@%s, %s, as %s, wrapped\n", real, t.rs.Entry.Server.Name, t.rs.Entry.Server.Version, t.rs.Chosen(), wf.name)
		return nil
	}
	if t.rs.Bundle != nil {
		if err := os.MkdirAll(filepath.Dir(wf.bundle), 0o700); err != nil {
			return err
		}
		if err := atomicfile.Write(wf.bundle, t.rs.Bundle, 0o600); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(real), 0o700); err != nil {
		return err
	}
	st, err := loadWrapState(e.wrapStatePath())
	if err != nil {
		return err
	}
	if err := writeWrapped(real, old, res, perm, true, st, e.wrapStatePath()); err != nil {
		return err
	}
	showDiff()
	say(e.stdout, "etdi: %s: installed %s@%s, %s, as %s, wrapped\n", real, t.rs.Entry.Server.Name, t.rs.Entry.Server.Version, t.rs.Chosen(), wf.name)
	say(e.stdout, "etdi: hint: approve its tools now with etdi check --config %s --name %s --yes, or when the host starts it with etdi review\n", real, wf.name)
	return nil
}
