package main

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/hostconfig"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
	"github.com/spf13/pflag"
)

// serverFlags say which server is checked and how: trust policy, bundle,
// and where the tools come from (a saved tools/list, a command to start,
// a URL, or a host configuration file).
type serverFlags struct {
	// mcpb and mcpbConfig are etdi check's --mcpb and --mcpb-config.
	mcpb                            string
	mcpbConfig                      []string
	policy, bundle, tools, name, at string
	server                          bool
	url                             string
	headers                         []string
	config                          string
	inputs                          []string
	project                         bool
	// launchApproved, when set, says whether a project-scoped entry's
	// launch was approved earlier (docs/hosts.md#host-configuration-files).
	launchApproved        func(digest string) (bool, error)
	startTimeout, timeout time.Duration
	// argv is the server command, the arguments after "--".
	argv []string
	// etdi is another etdi of the user's (--etdi); gatePins and gateLock
	// the pin store and lockfile the command uses: what a wrapped entry's
	// gate is compared with (docs/hosts.md#wrapping-host-configurations).
	etdi, gatePins, gateLock string
	gateCedar                []string
	// capabilities is --capabilities: the client capabilities a listing
	// declares (capabilitiesOf).
	capabilities capabilitiesFlag
	// reg is --registry and the entry's choices (checkregistry.go).
	reg registryFlags
}

func (f *serverFlags) register(fs *pflag.FlagSet, e *env) {
	f.registerVerify(fs, e)
	f.registerTools(fs)
	f.registerLive(fs)
	f.registerConfig(fs)
}

// registerVerify registers the flags that say how a listing is verified.
func (f *serverFlags) registerVerify(fs *pflag.FlagSet, e *env) {
	fs.StringVar(&f.policy, "trust", e.defaultTrust(), "trust policy file ($ETDI_TRUST)")
	fs.StringVar(&f.bundle, "bundle", "", "the provider's signed bundle (default: the one the server carries in-band, if any)")
	fs.StringVar(&f.at, "at", "", "verify the bundle as of this RFC 3339 time instead of now")
}

// registerTools registers --tools, a saved listing.
func (f *serverFlags) registerTools(fs *pflag.FlagSet) {
	fs.StringVar(&f.tools, "tools", "", "a saved tools/list result instead of a live server (etdi fetch saves one)")
}

// registerLive registers the flags that reach a live server.
func (f *serverFlags) registerLive(fs *pflag.FlagSet) {
	fs.BoolVar(&f.server, "server", false, "start the server command given after -- and talk to it over stdio")
	fs.StringVar(&f.url, "url", "", "a Streamable HTTP server")
	fs.StringArrayVar(&f.headers, "header", nil, "HTTP header for --url, \"Name: value\" (repeatable)")
	fs.DurationVar(&f.startTimeout, "start-timeout", 20*time.Second, "how long a server may take to answer initialize")
	fs.DurationVar(&f.timeout, "timeout", 60*time.Second, "how long fetching one server's tools may take in all")
	fs.Var(&f.capabilities, "capabilities", "the client capabilities to declare to the server, roots,sampling,elicitation or none (default: with --config, those the entry's host declares; otherwise none)")
}

// registerConfig registers --config and --name (which also names what is
// pinned).
func (f *serverFlags) registerConfig(fs *pflag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "a host configuration file (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf, Gemini CLI), or auto for all found")
	fs.StringVar(&f.name, "name", "", "with --config: the one entry to check; otherwise the name a server without a bundle is pinned under")
	fs.StringArrayVar(&f.inputs, "input", nil, "with --config: a value for a VS Code ${input:ID} placeholder, ID=VALUE (repeatable)")
	fs.BoolVar(&f.project, "project", false, "with --config auto: also start the servers of project-scoped files in the working directory (.mcp.json, .vscode/mcp.json, ...)")
}

// target is one server to check: its description as the commands read
// it, and where its findings point.
type target struct {
	// ServerSpec describes the server; a saved listing or a bundle checked
	// alone has only a Label and a Name.
	*guard.ServerSpec
	// toolsFile is the saved listing checked (--tools).
	toolsFile string
	// location is the file findings point at (SARIF), line the line of
	// the configuration entry in it (0: the whole file).
	location string
	line     int
	// project marks an entry of a project-scoped file.
	project bool
	// reg is the registry entry's server (--registry), and registry
	// what the report says of the entry; nil otherwise.
	reg      *guard.RegistryServer
	registry *registryCheck
	// mcpb is the MCPB file of --mcpb, extracted and launched (checkmcpb.go).
	mcpb *mcpbTarget
}

// targets resolves the flags into the servers to check.
func (e *env) targets(f *serverFlags, args []string, dash int) ([]target, error) {
	sources := 0
	for _, on := range []bool{f.tools != "", f.server, f.url != "", f.config != "", f.reg.url != "", f.mcpb != ""} {
		if on {
			sources++
		}
	}
	if f.capabilities.set && (f.tools != "" || sources == 0) {
		return nil, usagef("--capabilities applies to a live server (--server, --url, --config), not to a saved listing or a bundle")
	}
	if len(f.mcpbConfig) > 0 && f.mcpb == "" {
		return nil, usagef("--mcpb-config applies to an MCPB file (--mcpb FILE)")
	}
	if sources == 0 && f.bundle != "" {
		return []target{{ServerSpec: &guard.ServerSpec{Label: f.bundle, Name: f.name}, location: f.bundle}}, nil
	}
	if sources != 1 {
		return nil, usagef("give exactly one of --tools FILE, --server -- CMD..., --url URL, --config FILE|auto, --registry URL SERVER, --mcpb FILE (or only --bundle)")
	}
	if f.reg.url != "" {
		return e.registryTargets(f, args)
	}
	if f.reg.pkg != 0 || f.reg.remote != 0 {
		return nil, usagef("--package and --remote choose what of a registry entry is checked: they need --registry")
	}
	if f.server {
		if dash < 0 || dash >= len(args) {
			return nil, usagef("--server needs the command after --, e.g. --server -- node server.js")
		}
		f.argv = args[dash:]
	} else if len(args) > 0 {
		return nil, usagef("unexpected arguments %q (a server command goes after --server --)", args)
	}
	switch {
	case f.tools != "":
		if f.tools != "-" {
			// A manifest or a bundle given for --tools is a mix-up, a
			// usage error that says how to use the file (sniff.go).
			if data, err := e.readInput(f.tools); err == nil {
				if err := notAListing(f.tools, data); err != nil {
					return nil, err
				}
			}
		}
		return []target{{ServerSpec: &guard.ServerSpec{Label: f.tools, Name: f.name}, toolsFile: f.tools, location: f.tools}}, nil
	case f.server:
		t := targetOf(guard.Describe(f.argv, "", nil, f.name, os.Environ(), false))
		t.location = f.bundle
		return []target{t}, nil
	case f.mcpb != "":
		return e.mcpbTargets(f)
	case f.url != "":
		h, err := parseHeaders(f.headers)
		if err != nil {
			return nil, err
		}
		t := targetOf(guard.Describe(nil, f.url, h, f.name, nil, false))
		t.location = f.bundle
		return []target{t}, nil
	}
	return e.configTargets(f)
}

// configTargets are the servers of --config: every entry of the file (or
// of every file found, with auto), or the one --name selects.
func (e *env) configTargets(f *serverFlags) ([]target, error) {
	entries, err := e.configEntries(f)
	if err != nil {
		return nil, err
	}
	var ts []target
	for _, en := range entries {
		if f.name != "" && en.Name != f.name {
			continue
		}
		t := targetOf(guard.DescribeEntry(&en, e.lookupEnv, os.Environ()))
		t.location, t.line, t.project = en.File, en.Line, en.Project
		ts = append(ts, t)
	}
	if len(ts) == 0 {
		if f.name != "" {
			return nil, fmt.Errorf("no server named %q in %s", f.name, f.config)
		}
		return nil, fmt.Errorf("%s lists no MCP servers", f.config)
	}
	if f.bundle != "" && len(ts) > 1 {
		return nil, usagef("--bundle applies to one server; select it with --name")
	}
	return ts, nil
}

// configEntries reads the entries of --config as their hosts read them:
// the file's, or with auto those of every file found, but the entries of
// project-scoped files whose launch was not approved, unless --project.
func (e *env) configEntries(f *serverFlags) ([]hostconfig.Entry, error) {
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	o := hostconfig.Options{Home: home, Cwd: cwd, Lookup: e.lookupEnv, Inputs: map[string]string{}}
	var err error
	if o.Gate, err = e.configGate(f); err != nil {
		return nil, err
	}
	for _, kv := range f.inputs {
		id, v, ok := strings.Cut(kv, "=")
		if !ok || id == "" {
			return nil, usagef("--input wants ID=VALUE (the value is not shown here)")
		}
		o.Inputs[id] = v
	}
	if f.config != "auto" {
		return hostconfig.Load(f.config, "", o)
	}
	es, files, searched, err := hostconfig.Discover(runtime.GOOS, o)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, &hintError{&linesError{fmt.Errorf("%w; searched", hostconfig.ErrNoConfig), searched}, "give a file with --config PATH"}
	}
	var entries []hostconfig.Entry
	var skipped []string
	for _, en := range es {
		if en.Project && !f.project && !en.NotStarted() {
			ok := false
			if f.launchApproved != nil && en.Launch != "" {
				var err error
				if ok, err = f.launchApproved(en.Launch); err != nil {
					return nil, err
				}
			}
			if !ok {
				skipped = append(skipped, fmt.Sprintf("%s (%s)", en.Name, en.File))
				continue
			}
		}
		entries = append(entries, en)
	}
	if len(skipped) > 0 {
		say(e.stderr, "etdi: not starting %d server(s) of project-scoped files, which the repository wrote: %s\n"+
			"etdi: hint: review them, then pass --project to check them too\n", len(skipped), strings.Join(skipped, ", "))
	}
	if len(entries) == 0 {
		return nil, &hintError{fmt.Errorf("no server to check in %s", strings.Join(files, ", ")), "pass --project to check the servers of project-scoped files"}
	}
	return entries, nil
}

// parseHeaders parses --header "Name: value" flags.
func parseHeaders(kvs []string) (http.Header, error) {
	h, err := guard.ParseHeaders(kvs)
	var he *guard.HeaderError
	if errors.As(err, &he) {
		// Not quoted: a malformed header may be all secret.
		return nil, usagef("--header #%d (%d bytes, not shown): want \"Name: value\"", he.Index+1, he.Len)
	}
	return h, err
}

// pinFlags locate the pin database: a file, or a store in etcd.
type pinFlags struct {
	path        string
	lockTimeout time.Duration
	by          string
	etcd        pin.EtcdOptions
	env         *env
	// lock, when set, is the team lockfile that path was loaded from
	// (--lock): nothing is recorded or approved.
	lock string
	// signing: the audit key was looked for (audit.go).
	signing bool
}

func (f *pinFlags) register(fs *pflag.FlagSet, e *env) {
	fs.StringVar(&f.path, "pins", e.defaultPins(), "pin database file, or etcd://HOST:PORT[,HOST:PORT...]/PREFIX for a store shared through etcd ($ETDI_PINS)")
	fs.DurationVar(&f.lockTimeout, "lock-timeout", pin.DefaultLockTimeout, "how long to wait for another etdi process holding the database")
	fs.StringVar(&f.etcd.CertFile, "etcd-cert", "", "TLS client certificate for etcd (PEM)")
	fs.StringVar(&f.etcd.KeyFile, "etcd-key", "", "key of --etcd-cert (PEM)")
	fs.StringVar(&f.etcd.CAFile, "etcd-ca", "", "CA that signed etcd's server certificates (PEM); turns TLS on")
	fs.DurationVar(&f.etcd.MaxStale, "max-stale", pin.DefaultMaxStale, "etcd store: how old the local snapshot may be when etcd cannot be reached; older, etdi fails closed (0: never use it)")
	fs.StringVar(&f.etcd.SnapshotDir, "etcd-snapshots", "", "etcd store: directory of the local snapshots (default: etdi/etcd in the user cache directory; $ETDI_ETCD_SNAPSHOTS)")
	f.env = e
}

// options are the options to open the store with; etcd's user and
// password come from $ETDI_ETCD_USER and $ETDI_ETCD_PASSWORD, never from
// flags, and $ETDI_MACHINE names this machine in shared records.
func (f *pinFlags) options(readOnly bool) pin.Options {
	o := pin.Options{LockTimeout: f.lockTimeout, ReadOnly: readOnly, Etcd: f.etcd}
	if o.Etcd.MaxStale == 0 {
		o.Etcd.MaxStale = -1 // --max-stale 0: never open on the snapshot alone
	}
	if f.env != nil {
		if o.Etcd.SnapshotDir == "" {
			o.Etcd.SnapshotDir, _ = f.env.lookupEnv("ETDI_ETCD_SNAPSHOTS")
		}
		o.Etcd.Username, _ = f.env.lookupEnv("ETDI_ETCD_USER")
		o.Etcd.Password, _ = f.env.lookupEnv("ETDI_ETCD_PASSWORD")
		o.Etcd.Machine, _ = f.env.lookupEnv("ETDI_MACHINE")
	}
	if !readOnly {
		f.signEachWrite(o) // audit.go: the audit key signs each write
	}
	return o
}

// local is the store's file on this machine: the database, or an etcd
// store's snapshot.
func (f *pinFlags) local() string {
	if l, err := pin.LocalFile(f.path, f.options(false)); err == nil {
		return l
	}
	return f.path
}

func (f *pinFlags) registerBy(fs *pflag.FlagSet) {
	fs.StringVar(&f.by, "by", "", "who approves, recorded in the history (default: the current user)")
}

func (f *pinFlags) open(readOnly bool) (*pin.Store, error) {
	noPins := func(err error) error {
		return &hintError{err, "approve a server first: etdi pin approve --pins " + f.path + " ..."}
	}
	if readOnly && !pin.IsEtcd(f.path) {
		if _, err := os.Stat(f.path); errors.Is(err, os.ErrNotExist) {
			return nil, noPins(fmt.Errorf("no pin database at %s", f.path))
		}
	}
	s, err := pin.Open(f.path, f.options(readOnly))
	switch {
	case errors.Is(err, pin.ErrLocked):
		return nil, &hintError{err, "another etdi is using the database; retry, or raise --lock-timeout"}
	case readOnly && pin.IsEtcd(f.path) && errors.Is(err, os.ErrNotExist):
		return nil, noPins(err)
	case err == nil && s.Offline() != nil:
		say(f.env.stderr, "etdi: warning: %v; using the local snapshot, read-only\n", s.Offline())
	}
	return s, err
}

// launchChecker returns whether a launch was approved, reading the pin
// database if it exists (no database: nothing approved).
func (f *pinFlags) launchChecker() func(string) (bool, error) {
	return func(digest string) (bool, error) {
		if _, err := os.Stat(f.path); errors.Is(err, os.ErrNotExist) && !pin.IsEtcd(f.path) {
			return false, nil
		}
		s, err := f.open(true)
		if pin.IsEtcd(f.path) && errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		defer s.Close()
		return s.LaunchApproved(digest)
	}
}

// approveLaunches records the launches of the project-scoped entries the
// user chose to start with --project whose check passed, so later runs
// start them without --project while they stay exactly as written.
func (e *env) approveLaunches(pf *pinFlags, ts []target, passed func(i int) (server string, ok bool)) {
	for i, t := range ts {
		server, ok := passed(i)
		if !t.project || t.Launch == "" || !ok {
			continue
		}
		s, err := pf.open(false)
		if err != nil {
			say(e.stderr, "etdi: warning: could not record the launch of %s: %v\n", t.Label, err)
			return
		}
		err = s.ApproveLaunch(pin.Launch{Digest: t.Launch, Server: server, File: t.location, Entry: t.Name, By: pf.who()})
		s.Close()
		if err != nil {
			say(e.stderr, "etdi: warning: could not record the launch of %s: %v\n", t.Label, err)
		}
	}
}

func (f *pinFlags) who() string {
	if f.by != "" {
		return f.by
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "unknown"
}

// listing is what target t offers: a saved tools/list, the answer of a
// live server, or nil for a bundle checked alone.
func (e *env) listing(f *serverFlags, t *target) (*guard.Listing, error) {
	switch {
	case t.toolsFile != "":
		data, err := e.readInput(t.toolsFile)
		if err != nil {
			return nil, err
		}
		// A saved listing has the bound of a live one (docs/live.md#live-servers).
		l, err := guard.ReadListing(data)
		if err != nil {
			if uerr := notAListing(t.toolsFile, data); uerr != nil {
				return nil, uerr
			}
			return nil, fmt.Errorf("%s: %w", t.toolsFile, err)
		}
		return l, nil
	case len(t.Command) > 0 || t.URL != "":
		return e.fetch(f, t)
	}
	return nil, nil
}

// guardOptions are the options of guard for target t: the trust policy,
// the bundle of --bundle, the name of a server without one, the time of
// --at, the target's credentials and, with pf, the pin database.
func (e *env) guardOptions(f *serverFlags, pf *pinFlags, t *target, p *trust.Policy) (guard.Options, error) {
	now, err := parseTimeFlag("at", f.at)
	if err != nil {
		return guard.Options{}, err
	}
	opts := guard.Options{Policy: p, Name: t.Name, Now: now, Credentials: t.Credentials, Spec: t.ServerSpec,
		Tokens: func() verify.TokenVerifier { return e.tokenVerifier(now) }}
	if t.reg != nil {
		// The entry's bundle, fetched from where the entry names it.
		opts = t.reg.Options(opts)
	} else if bundle := cmp.Or(f.bundle, t.Bundle); bundle != "" {
		data, err := e.readInput(bundle)
		if err != nil {
			return opts, err
		}
		if err := notABundle(bundle, data); err != nil {
			return opts, err
		}
		opts.Bundle, opts.BundleSource = data, bundle
	}
	if pf != nil {
		opts.Pins, opts.LockTimeout, opts.By, opts.Etcd = pf.path, pf.lockTimeout, pf.who(), pf.options(false).Etcd
		opts.NoRecord = pf.lock != ""
	}
	return opts, nil
}

// observe establishes what target t offers: its tools (fetched live or
// read from a file), its bundle (from --bundle, or carried in-band), and
// the verification of that bundle. With compare, the tools are also
// compared with the pins of pf and the findings recorded (guard.Check).
func (e *env) observe(f *serverFlags, pf *pinFlags, t *target, p *trust.Policy, compare bool) (*guard.Report, error) {
	opts, err := e.guardOptions(f, pf, t, p)
	if err != nil {
		return nil, err
	}
	t.SecretEnv = guard.SecretEnv(p)
	if t.mcpb != nil {
		opts.Origin = t.mcpb.origin()
	}
	if opts.Origin == nil && t.toolsFile == "" && (len(t.Command) > 0 || t.URL != "") {
		// What the command runs is resolved before it is started.
		opts.Origin = guard.ResolveOrigin(e.ctx, t.Server())
	}
	l, err := e.listing(f, t)
	if err != nil {
		return nil, err
	}
	t.mcpb.served(t, l)
	var r *guard.Report
	if compare {
		r, err = guard.Check(e.ctx, l, opts)
	} else {
		r, err = guard.Observe(e.ctx, l, opts)
	}
	return r, e.guardError(err)
}

// guardError turns the errors of guard that are about the flags into
// usage errors, and adds hints.
func (e *env) guardError(err error) error {
	var ne *guard.NameError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, guard.ErrNoName):
		return usagef("a server without a bundle needs --name NAME to be pinned under")
	case errors.As(err, &ne):
		return &usageError{err}
	case errors.Is(err, pin.ErrLocked):
		return &hintError{err, "another etdi is using the database; retry, or raise --lock-timeout"}
	}
	return err
}

// fetch lists a live server.
func (e *env) fetch(f *serverFlags, t *target) (*guard.Listing, error) {
	e.progress("checking %s", t.Label)
	l, err := guard.Fetch(e.ctx, t.Server(), guard.FetchOptions{StartTimeout: f.startTimeout, Timeout: f.timeout, ClientVersion: readBuildInfo().Version,
		Capabilities: f.capabilitiesOf(t)})
	if err != nil {
		// The error may quote the server's stderr, a URL or a header.
		var se *guard.FetchError
		if errors.As(err, &se) {
			se.Stderr = t.Secrets.Tail(se.Stderr) // the kept tail may start inside a secret
		}
		return nil, t.Secrets.Error(fmt.Errorf("server %s: %w", t.Label, err))
	}
	e.progress("%s: %d tool(s) in %d page(s)", t.Label, len(l.Tools), l.Pages)
	return l, nil
}

// observeOne resolves the flags to exactly one server and observes it,
// without comparing it with the pins of pf (which may be nil).
func (e *env) observeOne(f *serverFlags, pf *pinFlags, args []string, dash int) (*guard.Report, error) {
	ts, err := e.targets(f, args, dash)
	if err != nil {
		return nil, err
	}
	if len(ts) != 1 {
		return nil, usagef("this command works on one server; select it with --name")
	}
	if len(ts[0].Problems) > 0 {
		return nil, fmt.Errorf("server %s cannot be checked: %s", ts[0].Label, strings.Join(ts[0].Problems, "; "))
	}
	p, err := loadPolicy(f.policy)
	if err != nil {
		return nil, err
	}
	return e.observe(f, pf, &ts[0], p, false)
}

// auditKeyPaths returns the audit key and verifier key paths for a pin
// database: audit.key and audit.pub beside it, unless given. key may name
// either file of the pair (audit verify needs only the .pub).
func auditKeyPaths(pins, key string) (string, string) {
	if key == "" {
		key = filepath.Join(filepath.Dir(pins), "audit.key") // pins: pinFlags.local()
	}
	if base, ok := strings.CutSuffix(key, ".pub"); ok {
		return base + ".key", key
	}
	return key, strings.TrimSuffix(key, ".key") + ".pub"
}

// targetOf is the target of a server's description.
func targetOf(s *guard.ServerSpec) target { return target{ServerSpec: s} }
