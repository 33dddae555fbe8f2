package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/registry/audit"
	"github.com/etdi-dev/etdi/registry/mirror"
	"github.com/spf13/cobra"
)

func init() {
	registrySubcommands = append(registrySubcommands, (*env).registryServeCmd)
}

// registryServeFlags are the flags of etdi registry serve.
type registryServeFlags struct {
	pf          pinFlags
	lf          lockFlags
	policy      string
	upstream    string
	listen      string
	public      bool
	concurrency int
	timeout     time.Duration
}

func (e *env) registryServeCmd() *cobra.Command {
	var f registryServeFlags
	cmd := &cobra.Command{
		Use:   "serve --upstream URL [--listen 127.0.0.1:PORT] [--trust FILE] [--pins DB | --lock FILE]",
		Short: "Serve a read-only MCP registry listing only the upstream's entries that verify and are approved",
		Long: `Stand between an MCP registry (--upstream) and the hosts: serve the
registry API v0.1's reading endpoints, listing only the entries that
verify and are approved, so that hosts pointed at this registry see the
servers the organisation signed off and nothing else:

  GET /v0.1/servers                              (cursor, limit, search, updated_since, version)
  GET /v0.1/servers/{name}/versions
  GET /v0.1/servers/{name}/versions/{version}    ("latest": the upstream's latest)

An entry is served when etdi registry audit would call it approved: it
names a bundle (dev.etdi), the bundle is the one named, a key the trust
policy holds for its provider signed it, it binds the entry's registry
name, packages and remotes, and every tool it signs is approved in the
team's pin database (--pins, opened read-only for each entry) or
lockfile (--lock). Anything else is left out of listings and answered
404: an unsigned entry (even where the trust policy lets unsigned
servers run: their tools are known only to a live check), a bundle that
does not verify or was made for another entry, tools not approved or
revoked, an entry deleted upstream. Each entry served carries etdi's
verdict under its _meta, as "dev.etdi/verdict" (status, provider, server,
bundle digest, checkedAt).

Nothing is cached: every request is judged anew, so a server revoked
with etdi pin revoke is gone from the next answer. A lockfile (--lock)
is read once, when etdi starts: serve a new one by restarting. Listings are paged
over the filtered result with cursors of this registry's own (valid
until it stops). Everything else is 404 or 405: nothing can be published
and there is no login.

etdi prints "etdi: listening on URL" on standard error when ready, then
one line per request (method, path, status, entries served, time). It
listens on loopback only, unless --public: then it warns that every
machine that reaches the address may read the list. SIGINT or SIGTERM
stops it once the requests under way are answered
(docs/registry.md#serving-hosts-only-what-is-approved).`,
		Example: `  etdi registry serve --upstream https://registry.modelcontextprotocol.io --pins team.db --listen 127.0.0.1:8080
  etdi registry serve --upstream https://registry.example.com --lock .etdi/etdi.lock.json --lock-key audit.pub`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error { return e.runRegistryServe(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.upstream, "upstream", "", "the registry whose entries are judged and served: https, or http to a loopback host (required)")
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8080", "address to serve on: a loopback address, or any with --public (port 0 picks one)")
	fl.BoolVar(&f.public, "public", false, "allow a --listen address other than loopback (every machine that reaches it may read the list)")
	fl.StringVar(&f.policy, "trust", e.defaultTrust(), "trust policy file ($ETDI_TRUST)")
	f.pf.register(fl, e)
	f.lf.register(fl, "judge approvals by this team lockfile instead of a pin database (etdi pin export --lock writes one)")
	fl.IntVar(&f.concurrency, "concurrency", mirror.DefaultConcurrency, "entries judged (bundles fetched) at a time for one request, 1 to 64")
	fl.DurationVar(&f.timeout, "timeout", audit.DefaultTimeout, "how long judging one entry may take (fetching its bundle included)")
	return cmd
}

func (e *env) runRegistryServe(cmd *cobra.Command, f *registryServeFlags) error {
	if f.upstream == "" {
		return usagef("--upstream URL is required: the registry to serve from")
	}
	upstream, err := registry.NewClient(f.upstream)
	if err != nil {
		return usagef("--upstream: %v", err)
	}
	if f.concurrency < 1 || f.concurrency > 64 {
		return usagef("--concurrency %d: want 1 to 64", f.concurrency)
	}
	if f.timeout <= 0 {
		return usagef("--timeout %s: want a positive duration", f.timeout)
	}
	if f.lf.path != "" && cmd.Flags().Changed("pins") {
		return usagef("--lock and --pins cannot be combined: approvals are judged by one of them")
	}
	if len(f.lf.keys) > 0 && f.lf.path == "" {
		return usagef("--lock-key needs --lock FILE")
	}
	host, _, err := net.SplitHostPort(f.listen)
	if err != nil {
		return usagef("--listen %q: want HOST:PORT, such as 127.0.0.1:8080", f.listen)
	}
	if ip := net.ParseIP(host); !f.public && !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
		return usagef("--listen %q is not a loopback address: add --public to serve other machines", f.listen)
	}
	p, err := loadPolicy(f.policy)
	if err != nil {
		return err
	}
	opts := audit.Options{Trust: p, Etcd: f.pf.options(true).Etcd, LockTimeout: f.pf.lockTimeout, Timeout: f.timeout}
	if f.lf.path != "" {
		if opts.Lockfile, err = e.readLock(f.lf.path, f.lf.keys); err != nil {
			return err
		}
	} else {
		opts.Pins = f.pf.path
		if _, err := os.Stat(opts.Pins); !pin.IsEtcd(opts.Pins) && errors.Is(err, os.ErrNotExist) {
			say(e.stderr, "etdi: warning: no pin database at %s: no entry is approved, so none is listed (approve with: etdi pin approve --pins %s ...)\n", opts.Pins, opts.Pins)
		}
	}
	a, err := audit.New(opts)
	if err != nil {
		return err
	}
	defer a.Close()

	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", f.listen, err)
	}
	if !mirror.IsLoopback(ln.Addr()) {
		if !f.public {
			ln.Close()
			return fmt.Errorf("--listen %s is %s, not a loopback address: add --public to serve other machines", f.listen, ln.Addr())
		}
		say(e.stderr, "etdi: warning: serving on %s, not loopback: every machine that reaches it may read which servers are approved\n", ln.Addr().String())
	}
	h := mirror.New(upstream, mirror.Approved(a))
	h.Concurrency = f.concurrency
	var logMu sync.Mutex
	h.Log = func(line string) {
		logMu.Lock()
		defer logMu.Unlock()
		say(e.stderr, "etdi: %s\n", line)
	}
	say(e.stderr, "etdi: serving the approved entries of %s\n", upstream.BaseURL)
	fmt.Fprintf(e.stderr, "etdi: listening on http://%s\n", ln.Addr().String())
	ctx, stop := signal.NotifyContext(e.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := h.Serve(ctx, ln); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serving: %w", err)
	}
	say(e.stderr, "etdi: stopped\n")
	return nil
}
