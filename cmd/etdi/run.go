package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/gate"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/redact"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
	"github.com/spf13/cobra"
)

// runExitCodes are the exit codes of etdi run; its help, the README and
// docs/gate.md#runtime-gate name each of them.
var runExitCodes = []int{0, 1, 2, finding.ExitSignature, finding.ExitRugPull, finding.ExitImpersonation, finding.ExitApproval, finding.ExitRevoked}

// runFlags are the flags of etdi run.
type runFlags struct {
	policy, bundle, name, url, listen string
	listenTokenFile                   string
	headers, headerEnv, passEnv       []string
	timeout, askTimeout               time.Duration
	idleTimeout                       time.Duration
	maxSessions                       int
	audit                             bool
	cedar                             cedarFlags
	lock                              lockFlags
}

// runHelp is the long help of etdi run.
const runHelp = `Run an MCP server behind etdi's runtime gate. A host launches etdi run
instead of the server (etdi wrap rewrites host configurations to do so):
etdi starts the server (-- CMD ARGS...) or connects to a Streamable HTTP
server (--url), speaks stdio with the host, and relays the session, so
what the host uses is what etdi verified (docs/gate.md#runtime-gate):

- initialize is relayed as the host sent it; before its answer reaches the
  host, etdi lists the server itself, on the same connection, and checks
  the listing as etdi check does. Instructions that are not the approved
  ones are withheld.
- every tools/list, prompts/list, resources/list and
  resources/templates/list answer is verified and compared with the pins,
  page by page; what is not approved and unchanged is removed.
- a tools/call, prompts/get or resources/read goes through when what it
  names is approved and unchanged in etdi's own latest listing, whether or
  not the host listed it (a host that did must hold the approved
  definition), and so does a read of a resource an approved tool
  returned. Anything else never reaches the server: what the server
  offers and etdi withholds is answered with JSON-RPC error -32090, a name
  it does not offer with -32602 (a resource: -32002); the data names the
  finding kind and the command that reviews it.
- on notifications/tools/list_changed etdi lists the server again before
  it relays the notification, and blocks what changed.
- what was withheld is told to the host (notifications/message, level
  warning) and written to standard error for the host's log.
- with call-time policies (--cedar FILE, or the trust policy's cedar
  member; docs/policies.md#call-time-policies), every tools/call of an approved tool is authorized
  first: one a policy forbids is refused with error -32090 naming the
  policy; one a policy annotated @ask asks about is put to the person
  through the host's elicitation (the reason, the tool, its scopes and a
  summary of the arguments) and forwarded only when the person accepts; a
  decline, a dismissal, no answer within --ask-timeout, a host without
  elicitation, or arguments the question cannot show whole (more than 16
  members, a value over 96 bytes, look-alike names) refuses it. A policy
  file that does not validate against etdi's schema stops etdi run
  before the server starts.

Nothing is approved here: review and approve with etdi check --approve or
etdi pin approve. The pin database is opened only for a moment at a time,
so many gates and etdi check share it. --audit-calls records each
tools/call in the history (tool, pinned digest, SHA-256 of the arguments,
outcome, duration, the policies' decision and the person's answer; never
the arguments or results).

--listen 127.0.0.1:PORT serves hosts that connect to a URL: Streamable
HTTP at http://127.0.0.1:PORT/mcp instead of stdio (port 0 picks a free
port; etdi prints "etdi: listening on URL" on standard error). Only
loopback addresses are accepted and requests from web pages of other
origins are refused. Other users of the machine can reach a loopback
port: with --listen-token-file FILE (a file only you can read, mode 0600)
or ETDI_LISTEN_TOKEN set, every request must carry "Authorization: Bearer
TOKEN" (put the header in the host's configuration). The token is never
given to the server, nor put on a command line; prefer the file: a
process of your user can read etdi's environment.
Every initialize starts a session of its own, with its own gate and its
own server: a server process per session (-- CMD), or a session with the
--url server. At most --max-sessions (default 16) run at once; a new one
then ends the session idle longest, or gets HTTP 503 when every one has a
request in flight or a stream open. A session ends when the host ends it (HTTP
DELETE), when its server ends, or after --idle-timeout (default 10m)
without a request or an open stream; its server is
then ended, and its id gets 404, so the host starts a new session. etdi
run keeps listening until it is interrupted (SIGINT, SIGTERM): then it
ends every session and exits 0. Progress, sampling and elicitation of a
call go on the call's own event stream, so a host without the GET stream
gets them; events can be resumed with Last-Event-ID (docs/gate.md#runtime-gate).

The server is started without any ETDI_* variable and without the
variables etdi read a secret from (--header-env, the trust policy's
introspection client secret); --pass-env NAME passes one of them on
purpose (never ETDI_LISTEN_TOKEN).

--lock FILE gates against a team lockfile (etdi pin export --lock;
docs/fleets.md#team-lockfile) instead of a pin database, read-only: it is loaded into a
private temporary database, removed when etdi run ends; no finding is
recorded, no listing saved for review, and --audit-calls and --pins
cannot be combined with it. With --lock-key KEY an unsigned or tampered
lockfile starts nothing (exit 10), nor one of a lower generation than a
lockfile of that key accepted before (exit 11), nor an expired one (14).

Exit codes: 0 when the host ended the session (with --listen: when etdi
was interrupted); 1 when the server ended it or etdi could not start (an
unreadable trust policy or pin database, a server that cannot be
started); 2 usage. When what would run is not what was approved, etdi
does not start the server: it answers the host's session itself (no
tools, a warning naming the exact review command) and, once the host
leaves, exits with the finding's code: 10 a bundle or lockfile that does
not verify, 11 a rug pull (another implementation of approved tools; an
older lockfile generation), 12 impersonation (a bundle served by a server
it was not made for), 13 approval required, 14 revoked or expired (an
expired lockfile). A lockfile that does not verify stops etdi before any
session.`

func (e *env) runCmd() *cobra.Command {
	var f runFlags
	var pf pinFlags
	cmd := &cobra.Command{
		Use:   "run [--trust F] [--pins P] [--bundle B] [--name N] (-- CMD ARGS... | --url URL [--header \"Name: value\"])",
		Short: "Run a server behind a gate: the host sees only approved tools and calls nothing else",
		Long:  runHelp,
		Example: `  etdi run --name weather -- node server.js
  etdi run --name remote --url https://mcp.example.com/mcp --header-env Authorization=MCP_TOKEN
  etdi run --audit-calls --name files -- npx -y @modelcontextprotocol/server-filesystem@2026.8.31 ~/notes
  etdi run --cedar examples/policies/exfiltration.cedar --audit-calls --bundle files.etdi.json -- node files.js
  etdi run --lock ~/team/etdi.lock.json --lock-key ~/team/audit.pub --name weather -- node server.js`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.runGate(cmd, &f, &pf, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.policy, "trust", e.defaultTrust(), "trust policy file ($ETDI_TRUST)")
	fl.StringVar(&f.bundle, "bundle", "", "the provider's signed bundle (default: the one the server carries in-band, if any)")
	fl.StringVar(&f.name, "name", "", "the name a server without a bundle is pinned under (etdi wrap gives the config entry's name)")
	fl.StringVar(&f.url, "url", "", "a Streamable HTTP server, instead of a command after --")
	fl.StringArrayVar(&f.headers, "header", nil, "HTTP header for --url, \"Name: value\" (repeatable; visible in process listings: prefer --header-env)")
	fl.StringArrayVar(&f.headerEnv, "header-env", nil, "HTTP header for --url whose value is in an environment variable, Name=VARIABLE (repeatable)")
	fl.DurationVar(&f.timeout, "timeout", 60*time.Second, "how long etdi's own listing of the server may take")
	fl.BoolVar(&f.audit, "audit-calls", false, "record every tools/call in the history (never the arguments or results)")
	fl.StringVar(&f.listen, "listen", "", "offer Streamable HTTP towards the host at ADDR (loopback only) instead of stdio")
	fl.StringVar(&f.listenTokenFile, "listen-token-file", "", "with --listen: the file (mode 0600) holding the token every request must carry as \"Authorization: Bearer TOKEN\" (or $ETDI_LISTEN_TOKEN)")
	fl.IntVar(&f.maxSessions, "max-sessions", gate.DefaultMaxSessions, "with --listen: the most host sessions (each with its own server) served at once; beyond, the longest idle one ends, or HTTP 503 when none is idle")
	fl.DurationVar(&f.idleTimeout, "idle-timeout", gate.DefaultIdleTimeout, "with --listen: end a session (and its server) after this long without a request or an open stream")
	fl.StringArrayVar(&f.passEnv, "pass-env", nil, "pass this variable to the server although etdi would remove it (an ETDI_* variable or one etdi read a secret from; never ETDI_LISTEN_TOKEN; repeatable)")
	f.cedar.register(fl)
	fl.DurationVar(&f.askTimeout, "ask-timeout", 2*time.Minute, "how long a call a policy asks about waits for the person's answer before it is refused")
	pf.register(fl, e)
	fl.StringVar(&pf.by, "by", "", "who is named in the history records the gate writes (findings, --audit-calls; default: the current user)")
	f.lock.register(fl, "gate against this team lockfile, read-only, instead of a pin database (etdi pin export --lock writes one)")
	return cmd
}

// runGate runs the session: the server the flags describe, behind a
// gate, or a refusal when what it would run is not what was approved.
func (e *env) runGate(cmd *cobra.Command, f *runFlags, pf *pinFlags, args []string) error {
	argv, err := runArgs(cmd, f, args)
	if err != nil {
		return err
	}
	remove, err := e.useLock(cmd, &f.lock, pf)
	if err != nil {
		return err
	}
	defer remove()
	spec, err := e.describeRun(f, argv)
	if err != nil {
		return err
	}
	secrets := &spec.Secrets
	p, err := loadPolicy(f.policy)
	if err != nil {
		return err // fail closed: no policy, no session
	}
	opts, err := e.gateOptions(cmd, f, pf, p, spec)
	if err != nil {
		return err
	}
	if len(argv) > 0 {
		// The server gets no ETDI_* variable and none etdi read a secret
		// from, but those passed on purpose (guard.ServerEnv).
		spec.SecretEnv = append(guard.SecretEnv(p), guard.HeaderEnvVariables(f.headerEnv)...)
		spec.KeepEnv = f.passEnv
	}
	srv := spec.Server()
	// What the command runs is resolved before it starts, and a server the
	// out-of-band bundle was not made for, or an implementation other than
	// the approved one, is never started: etdi answers the host itself.
	opts.Origin = guard.ResolveOrigin(e.ctx, srv)
	opts.Review, opts.ReviewTarget = e.reviewCommand(cmd, spec.Name, argv, f.url, secrets)
	findings, refusal, err := gate.Preflight(opts.Origin, opts)
	if err != nil {
		return e.guardError(err) // fail closed: pins that cannot be read start nothing
	}
	for _, fd := range findings {
		say(e.stderr, "etdi: %s: %s: %s\n", string(fd.Severity), string(fd.Kind), secrets.String(fd.Message))
	}
	if refusal != nil {
		return e.refuseSession(f, opts, refusal, secrets)
	}
	if unserved, err := guard.UnservedPins(opts.Origin, opts.Options); err == nil && len(unserved) > 0 {
		say(e.stderr, "etdi: warning: %d pin(s) of %s were approved without recording what served them; another program serving the same definitions is not told apart until it is recorded: %s --yes %s\n",
			len(unserved), secrets.String(spec.Name), opts.Review, opts.ReviewTarget)
	}
	var logMu sync.Mutex
	opts.Log = e.gateLog(secrets, &logMu)
	if f.listen != "" {
		return e.listenGate(f, opts, srv, secrets, &logMu, nil)
	}
	return e.stdioGate(opts, srv, secrets, &logMu)
}

// runArgs checks the flags and arguments of etdi run and returns the
// server command (nil for --url).
func runArgs(cmd *cobra.Command, f *runFlags, args []string) ([]string, error) {
	dash := cmd.ArgsLenAtDash()
	var argv []string
	switch {
	case dash >= 0 && f.url != "":
		return nil, usagef("give either -- CMD ARGS... or --url URL, not both")
	case dash >= 0:
		argv = args[dash:]
		if len(argv) == 0 {
			return nil, usagef("nothing after --: give the server command, e.g. etdi run --name weather -- node server.js")
		}
	case f.url == "":
		return nil, usagef("give the server: -- CMD ARGS... or --url URL")
	case len(args) > 0:
		return nil, usagef("unexpected arguments %q (a server command goes after --)", args)
	}
	if f.listenTokenFile != "" && f.listen == "" {
		return nil, usagef("--listen-token-file goes with --listen")
	}
	for _, name := range []string{"max-sessions", "idle-timeout"} {
		if cmd.Flags().Changed(name) && f.listen == "" {
			return nil, usagef("--%s goes with --listen", name)
		}
	}
	if f.maxSessions < 1 || f.idleTimeout <= 0 {
		return nil, usagef("--max-sessions is at least 1 and --idle-timeout more than 0 (e.g. --max-sessions 4 --idle-timeout 30m)")
	}
	for _, name := range f.passEnv {
		if name == "" || strings.Contains(name, "=") {
			return nil, usagef("--pass-env %q: want a variable name", name)
		}
		if strings.EqualFold(name, guard.ListenTokenEnv) {
			return nil, usagef("--pass-env %s: the --listen token is never given to the server", guard.ListenTokenEnv)
		}
	}
	if f.lock.path != "" && f.audit {
		return nil, usagef("--audit-calls records calls in the pin database, and --lock is read-only")
	}
	return argv, nil
}

// describeRun describes the server of etdi run: the command argv, or
// --url with its headers (--header, --header-env). The gate passes its
// own environment on to a command, so the credentials in it are the
// server's too.
func (e *env) describeRun(f *runFlags, argv []string) (*guard.ServerSpec, error) {
	var h http.Header
	if f.url != "" {
		var err error
		if h, err = parseHeaders(f.headers); err != nil {
			return nil, err
		}
		if err := guard.AddHeaderEnv(h, f.headerEnv, e.lookupEnv); err != nil {
			var he *guard.HeaderEnvError
			switch {
			case !errors.As(err, &he):
				return nil, err
			case he.Unset:
				return nil, fmt.Errorf("--header-env %s: environment variable %s is not set", he.Name, he.Variable)
			}
			return nil, usagef("--header-env %q: want Name=VARIABLE", he.Arg)
		}
	}
	return guard.Describe(argv, f.url, h, f.name, os.Environ(), true), nil
}

// gateOptions are the options of the gate of etdi run: the trust policy
// p, the server's name and credentials, the pin store, the call-time
// policies and the bundle of --bundle.
func (e *env) gateOptions(cmd *cobra.Command, f *runFlags, pf *pinFlags, p *trust.Policy, spec *guard.ServerSpec) (gate.Options, error) {
	opts := gate.Options{Timeout: f.timeout, AuditCalls: f.audit}
	opts.Credentials = spec.Credentials
	opts.Policy, opts.Name, opts.Pins, opts.LockTimeout, opts.By, opts.Etcd = p, spec.Name, pf.path, pf.lockTimeout, pf.who(), pf.options(false).Etcd
	opts.ReadOnly = pf.lock != ""
	var err error
	if opts.Policies, err = f.cedar.load(f.policy, p); err != nil {
		return opts, err // fail closed: policies that do not load start nothing
	}
	opts.AskTimeout, opts.PolicyReview = f.askTimeout, f.cedar.review(cmd)
	opts.Tokens = func() verify.TokenVerifier { return e.tokenVerifier(time.Time{}) }
	if f.bundle != "" {
		data, err := e.readInput(f.bundle)
		if err != nil {
			return opts, err
		}
		if err := notABundle(f.bundle, data); err != nil {
			return opts, err
		}
		opts.Bundle, opts.BundleSource = data, f.bundle
	}
	return opts, nil
}

// stdioGate runs one session with the host over standard input and
// output, through a gate, with the server srv started for it.
func (e *env) stdioGate(opts gate.Options, srv guard.Launch, secrets *redact.Set, logMu *sync.Mutex) error {
	g, err := gate.New(opts)
	if err != nil {
		return err
	}
	host, err := e.hostConn()
	if err != nil {
		return err
	}
	host = settleAfterFirstAnswer(host)
	stderr := &lineEscaper{w: e.stderr, secrets: secrets, mu: logMu}
	server, err := guard.StartServer(srv, stderr)
	if err != nil {
		host.Close()
		return secrets.Error(fmt.Errorf("starting the server: %w", err))
	}
	ctx, stop := signal.NotifyContext(e.ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	err = g.Run(ctx, host, server)
	stderr.flush()
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil // interrupted: the server was ended
		}
		return secrets.Error(err)
	}
	return nil
}

// gateLog writes the gate's lines to stderr, one at a time and with the
// secrets etdi knows masked.
func (e *env) gateLog(secrets *redact.Set, mu *sync.Mutex) func(string) {
	return func(line string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(e.stderr, secrets.String(line))
	}
}

// refuseSession answers the host's session itself when Preflight refused
// to start the server (gate.ServeRefusal; with --listen, every session
// until etdi is interrupted): the host sees etdi connected with a
// message, no tools, and the review command; nothing of the server runs.
// The exit code is the findings' once the host has left.
func (e *env) refuseSession(f *runFlags, opts gate.Options, r *gate.Refusal, secrets *redact.Set) error {
	r.Version = readBuildInfo().Version
	say(e.stderr, "etdi: not starting the server: what it would run is not what was approved; the host is told so and offered no tools (exit %d once it leaves)\n", r.Code)
	say(e.stderr, "etdi: review: %s\n", secrets.String(r.Review))
	if r.Approve != "" {
		say(e.stderr, "etdi: approve the new implementation by naming its tools: %s\n", secrets.String(r.Approve))
	}
	var logMu sync.Mutex
	opts.Log = e.gateLog(secrets, &logMu)
	if f.listen != "" {
		if err := e.listenGate(f, opts, guard.Launch{}, secrets, &logMu, r); err != nil {
			return err
		}
		return &exitCodeError{r.Code}
	}
	host, err := e.hostConn()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(e.ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if err := gate.ServeRefusal(ctx, host, r, opts.Log); err != nil && !errors.Is(err, context.Canceled) {
		say(e.stderr, "etdi: %s\n", secrets.String(err.Error()))
	}
	return &exitCodeError{r.Code}
}

// hostConn returns the host's side of the session: stdin and stdout.
func (e *env) hostConn() (guard.Conn, error) {
	in, out := pollable(e.stdin), pollable(e.stdout)
	return guard.StreamConn(in, out, func() error {
		if c, ok := e.stdin.(io.Closer); ok && e.stdin != os.Stdin {
			return c.Close()
		}
		return nil
	}), nil
}

// listenGate serves hosts over Streamable HTTP on a loopback address
// (--listen), every session through its own gate and its own server,
// until etdi is interrupted.
func (e *env) listenGate(f *runFlags, opts gate.Options, srv guard.Launch, secrets *redact.Set, logMu *sync.Mutex, refusal *gate.Refusal) error {
	tok, err := e.listenToken(f)
	if err != nil {
		return err
	}
	h, err := gate.ListenHTTP(f.listen, gate.HTTPOptions{
		Gate: opts, Token: tok, MaxSessions: f.maxSessions, IdleTimeout: f.idleTimeout, Refusal: refusal,
		Upstream: func(context.Context) (guard.Conn, error) {
			stderr := &lineEscaper{w: e.stderr, secrets: secrets, mu: logMu}
			c, err := guard.StartServer(srv, stderr)
			if err != nil {
				return nil, secrets.Error(err)
			}
			return flushingConn{c, stderr}, nil
		},
	})
	if errors.Is(err, gate.ErrListenAddr) {
		return usagef("--listen %q: want 127.0.0.1:PORT, [::1]:PORT or localhost:PORT (loopback only; port 0 picks one)", f.listen)
	}
	if err != nil {
		return fmt.Errorf("--listen %s: %w", f.listen, err)
	}
	fmt.Fprintf(e.stderr, "etdi: listening on %s\n", h.URL())
	ctx, stop := signal.NotifyContext(e.ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	select {
	case <-ctx.Done():
	case <-h.Done():
	}
	h.Close()
	if err := h.Err(); err != nil {
		return secrets.Error(err)
	}
	return nil // interrupted: every session and its server were ended
}

// flushingConn writes the last line a server left unfinished on its
// stderr when its session ends.
type flushingConn struct {
	guard.Conn
	stderr *lineEscaper
}

// SetProtocolVersion passes the negotiated version on to a server over
// Streamable HTTP, which then sends it with every request and opens its
// standalone stream (where a server's requests to the host may come).
func (c flushingConn) SetProtocolVersion(v string) {
	if s, ok := c.Conn.(interface{ SetProtocolVersion(string) }); ok {
		s.SetProtocolVersion(v)
	}
}

func (c flushingConn) Close() error {
	err := c.Conn.Close()
	c.stderr.flush()
	return err
}

// listenToken is the token of --listen: from --listen-token-file, or
// from $ETDI_LISTEN_TOKEN, which is removed from etdi's environment at
// once (no process etdi starts inherits it; the server never gets it,
// guard.ServerEnv). Both at once are refused: which one the host meant
// cannot be told.
func (e *env) listenToken(f *runFlags) (string, error) {
	envTok, inEnv := e.lookupEnv(guard.ListenTokenEnv)
	os.Unsetenv(guard.ListenTokenEnv)
	if f.listenTokenFile == "" {
		if inEnv && strings.TrimSpace(envTok) == "" {
			// A token was meant (a host's "${UNSET}" expands to nothing):
			// listening without one would let every local user in.
			return "", usagef("$%s is set but empty: set it to the token (or give --listen-token-file FILE), or unset it to listen without one", guard.ListenTokenEnv)
		}
		return envTok, nil
	}
	if inEnv && envTok != "" {
		return "", usagef("give the --listen token once: --listen-token-file or $%s, not both", guard.ListenTokenEnv)
	}
	tok, err := gate.ReadListenToken(f.listenTokenFile)
	if err != nil {
		return "", fmt.Errorf("--listen-token-file: %w", err)
	}
	return tok, nil
}

// reviewCommand is the etdi check command that reviews what the gate
// blocks (its flags), and how it reaches the server (the target), as one
// exact command a person can paste into any directory: the files it names
// are absolute, the trust policy and pin database etdi run took from
// $ETDI_TRUST and $ETDI_PINS are named (the person's shell need not have
// them), a command whose arguments name files of the host's working
// directory is run there (cd DIR && ...), and every argument is
// shell-quoted. Secrets are masked; when that leaves the target unusable
// and the server is an entry etdi wrap wrapped, the target is that entry
// (--config FILE) instead.
func (e *env) reviewCommand(cmd *cobra.Command, name string, argv []string, url string, secrets *redact.Set) (string, string) {
	parts := []string{"etdi check"}
	for _, fl := range []struct{ name, env string }{
		{"trust", "ETDI_TRUST"}, {"pins", "ETDI_PINS"}, {"lock", ""}, {"bundle", ""},
		{"etcd-cert", ""}, {"etcd-key", ""}, {"etcd-ca", ""}, {"etcd-snapshots", "ETDI_ETCD_SNAPSHOTS"},
	} {
		f := cmd.Flags().Lookup(fl.name)
		if f == nil || f.Value.String() == "" {
			continue
		}
		fromEnv := false
		if fl.env != "" {
			v, ok := e.lookupEnv(fl.env)
			fromEnv = ok && v != ""
		}
		if !f.Changed && !fromEnv {
			continue
		}
		// The host's working directory is not the person's: the files
		// are named wherever the command is run.
		path := f.Value.String()
		if !pin.IsEtcd(path) && path != "-" {
			if abs, err := filepath.Abs(path); err == nil {
				path = abs
			}
		}
		parts = append(parts, "--"+fl.name+" "+termtext.ShellQuote(path))
	}
	if name != "" {
		parts = append(parts, "--name "+termtext.ShellQuote(name))
	}
	var target []string
	masked := false
	if url != "" {
		shown := redact.URL(url)
		masked = shown != url || secrets.String(url) != url
		target = []string{"--url", termtext.ShellQuote(shown)}
	} else {
		target = []string{"--server", "--"}
		for i, a := range redact.Args(argv) {
			masked = masked || a != argv[i] || secrets.String(a) != a
			target = append(target, termtext.ShellQuote(a))
		}
	}
	if masked && name != "" {
		if cfg := e.wrappedConfig(name); cfg != "" {
			return secrets.String(strings.Join(parts, " ")), "--config " + termtext.ShellQuote(cfg)
		}
	}
	review := strings.Join(parts, " ")
	if url == "" && dirMatters(argv) {
		if wd, err := os.Getwd(); err == nil {
			review = "cd " + termtext.ShellQuote(wd) + " && " + review
		}
	}
	return secrets.String(review), secrets.String(strings.Join(target, " "))
}

// dirMatters reports whether a server command depends on the working
// directory it is started in: its program is a relative path, or an
// argument names a file or directory relative to it.
func dirMatters(argv []string) bool {
	for i, a := range argv {
		if strings.HasPrefix(a, "-") {
			_, v, ok := strings.Cut(a, "=")
			if !ok {
				continue
			}
			a = v
		}
		if a == "" || filepath.IsAbs(a) {
			continue
		}
		if i == 0 && !strings.ContainsAny(a, `/\`) {
			continue // looked up on PATH
		}
		if a == "." || a == ".." || strings.ContainsAny(a, `/\`) {
			return true
		}
		if _, err := os.Lstat(a); err == nil {
			return true
		}
	}
	return false
}

// wrappedConfig is the one host configuration file whose entry name etdi
// wrap wrapped (as its records say), "" when there is none or more than
// one.
func (e *env) wrappedConfig(name string) string {
	st, err := loadWrapState(e.wrapStatePath())
	if err != nil {
		return ""
	}
	found := ""
	for file, recs := range st.Files {
		for _, r := range recs {
			if len(r.Path) > 0 && r.Path[len(r.Path)-1] == name {
				if found != "" && found != file {
					return ""
				}
				found = file
			}
		}
	}
	return found
}

// lineEscaper passes a server's stderr on to etdi's, line by line, with
// secrets masked and every line escaped for a terminal; a line is cut at
// 64 KiB.
type lineEscaper struct {
	w       io.Writer
	secrets *redact.Set
	mu      *sync.Mutex
	buf     []byte
}

func (l *lineEscaper) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) > 64<<10 {
				l.emit(l.buf)
				l.buf = l.buf[:0]
			}
			return len(p), nil
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

func (l *lineEscaper) emit(line []byte) {
	w := bufio.NewWriter(l.w)
	w.WriteString(termtext.Escape(l.secrets.String(strings.TrimSuffix(string(line), "\r"))))
	w.WriteByte('\n')
	w.Flush()
}

// flush writes a last line without its newline.
func (l *lineEscaper) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit(l.buf)
		l.buf = nil
	}
}
