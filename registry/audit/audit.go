// Package audit judges the entries of an MCP registry against an
// organisation's trust policy and approvals, offline of the servers
// (none is started): whether an entry is signed (its server.json names an
// etdi bundle, [registry.EtdiMeta]), whether the bundle it names is the
// one served and verifies, whether it was made for this entry's packages,
// remotes and name ([registry.Binding]), and whether its tools are
// approved in the team's pin store or lockfile, not revoked.
//
// [Judge] decides one entry; an [Auditor] decides many with one set of
// options (a lockfile is loaded once); [Auditor.Audit] walks a whole
// registry. Each entry gets a [Verdict]: a [Status], the findings of
// package finding, and the exit code they set (SPEC.md §11).
//
//	a, err := audit.New(audit.Options{Trust: policy, Pins: "pins.db"})
//	...
//	defer a.Close()
//	v := a.Judge(ctx, entry)
//	if !v.Pass() { ... } // v.Status, v.Findings, v.ExitCode
//
// What an entry and the server hosting its bundle send is hostile: the
// bundle is fetched bounded in bytes and time and refused unless its
// SHA-256 is the entry's, every entry is judged within [Options.Timeout],
// and the pin store is only ever opened read-only: an audit records
// nothing.
package audit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/pin/lockfile"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
)

// Status is the outcome of judging one entry. Its values are stable and
// appear in JSON output.
type Status string

// Statuses of an entry.
const (
	// Approved: signed, the bundle verifies and binds the entry, and every
	// tool it signs is approved in the pin store or lockfile (exit 0).
	Approved Status = "approved"
	// Verified: signed, the bundle verifies and binds the entry; no pin
	// store or lockfile was given, so approvals were not looked at (exit 0).
	Verified Status = "verified"
	// Unsigned: the entry names no bundle and the trust policy's unsigned
	// rule lets unsigned servers run (allow, or warn with an unsigned_tool
	// warning). Its tools are known only to a live check (exit 0).
	Unsigned Status = "unsigned"
	// ApprovalRequired: the bundle verifies and binds the entry, and some
	// tool is new or of a new version (exit 13).
	ApprovalRequired Status = "approval_required"
	// Blocked: a security finding (exit 10, 11, 12 or 14): an unsigned
	// entry the policy blocks, a bundle that cannot be fetched, is not the
	// one named, does not verify, binds another entry, or was revoked.
	Blocked Status = "blocked"
	// Deleted: the registry deleted the entry; it is not judged (exit 0).
	Deleted Status = "deleted"
	// Error: the entry could not be judged (the pin store could not be
	// read, the audit was cancelled): exit 1.
	Error Status = "error"
)

// ExitError is the exit code of an entry that could not be judged: an
// operational error, not a finding.
const ExitError = 1

// DefaultTimeout bounds the judgement of one entry when
// [Options.Timeout] is zero: fetching its bundle and verifying it.
const DefaultTimeout = 30 * time.Second

// Options say how entries are judged.
type Options struct {
	// Trust is the trust policy (required).
	Trust *trust.Policy
	// Pins is the team's pin store: a database file or an etcd://
	// location, opened read-only for each entry. A file that does not
	// exist is an empty store: every tool needs approval.
	Pins string
	// Etcd configures a store at an etcd:// location; LockTimeout bounds
	// the wait for a process holding the database.
	Etcd        pin.EtcdOptions
	LockTimeout time.Duration
	// Lockfile is a team lockfile (parsed and, where the team signs it,
	// verified by the caller) to judge approvals by instead of Pins: the
	// two are exclusive. Without either, approvals are not looked at and
	// a bound, verified entry is [Verified].
	Lockfile *lockfile.File
	// HTTP fetches bundles; nil is a client that times out after
	// registry.RequestTimeout and refuses redirects away from https.
	HTTP *http.Client
	// Now is the verification time (zero: now).
	Now time.Time
	// Tokens returns the verifier of identity provider tokens; nil:
	// bundles that need a token fail.
	Tokens func() verify.TokenVerifier
	// Timeout bounds the judgement of one entry (zero: DefaultTimeout).
	Timeout time.Duration
}

// Verdict is the judgement of one registry entry.
type Verdict struct {
	// Name and Version are the entry's.
	Name    string `json:"name"`
	Version string `json:"version"`
	// RegistryStatus is what the registry says of the entry: active,
	// deprecated or deleted.
	RegistryStatus string `json:"registryStatus"`
	Status         Status `json:"status"`
	// Signed says the entry names a bundle (dev.etdi); Bundle and
	// BundleDigest are what it names.
	Signed       bool   `json:"signed"`
	Bundle       string `json:"bundle,omitempty"`
	BundleDigest string `json:"bundleDigest,omitempty"`
	// SignatureVerified says the bundle was fetched, is the one named, a
	// key (or keyless signer) the policy trusts for its provider signed
	// it, and its provider may publish under the entry's name (SPEC.md
	// §4.2): [verify.Result]'s Verified.
	SignatureVerified bool `json:"signatureVerified"`
	// Bound says the bundle was made for this entry: its registry name,
	// every package and every remote ([registry.Binding]).
	Bound bool `json:"bound"`
	// Provider and Server are the bundle's provider and its server's pin
	// identity (provider:server), once verified.
	Provider string `json:"provider,omitempty"`
	Server   string `json:"server,omitempty"`
	// Approvals is where approvals were looked up: "pins", "lockfile",
	// or "" when they were not.
	Approvals string `json:"approvals,omitempty"`
	// Tools are the signed tools compared with the approvals (empty when
	// they were not compared).
	Tools    []pin.ToolState   `json:"tools"`
	Findings []finding.Finding `json:"findings"`
	// ExitCode is the verdict's exit code (SPEC.md §11), ExitError when
	// the entry could not be judged; Error says why.
	ExitCode int    `json:"exitCode"`
	Error    string `json:"error,omitempty"`
}

// Pass reports whether the entry may be offered to hosts: judged, not
// deleted, and without an error finding.
func (v *Verdict) Pass() bool {
	return v.ExitCode == finding.ExitOK && v.Status != Deleted && v.Status != Error
}

// Auditor judges entries with one set of options.
type Auditor struct {
	opts      Options
	pins      string
	approvals string
	remove    func()
	store     sharedStore
}

// New returns an auditor for opts, loading opts.Lockfile into a private
// temporary pin database; Close removes it.
func New(opts Options) (*Auditor, error) {
	if opts.Trust == nil {
		return nil, errors.New("audit: no trust policy")
	}
	a := &Auditor{opts: opts, pins: opts.Pins, remove: func() {}}
	if a.opts.HTTP == nil {
		a.opts.HTTP = bundleClient()
	}
	switch {
	case opts.Lockfile != nil && opts.Pins != "":
		return nil, errors.New("audit: a pin store and a lockfile: give one")
	case opts.Lockfile != nil:
		path, remove, err := lockfile.Temporary(opts.Lockfile)
		if err != nil {
			return nil, err
		}
		a.pins, a.remove, a.approvals = path, remove, "lockfile"
	case opts.Pins != "":
		a.approvals = "pins"
	}
	return a, nil
}

// Close releases what New set up: the pin database, the lockfile's
// temporary one, the connections to bundle hosts. No judgement may be
// running.
func (a *Auditor) Close() error {
	err := a.store.close()
	a.remove()
	if a.opts.HTTP != nil {
		a.opts.HTTP.CloseIdleConnections()
	}
	return err
}

// bundleClient is the HTTP client of an auditor given none: as
// registry.FetchBundle's own (each request bounded by
// registry.RequestTimeout, no redirect away from https, at most five),
// keeping a connection per judgement that may run at once, so that
// bundles published on one host (a forge's releases) are fetched over
// kept connections rather than one new connection each.
func bundleClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = MaxConcurrency
	return &http.Client{Timeout: registry.RequestTimeout, Transport: t,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("more than 5 redirects")
			}
			if !etdi.SecureURL(req.URL) {
				return fmt.Errorf("redirect to %s refused: not https", req.URL.Redacted())
			}
			return nil
		}}
}

// Judge judges one entry with opts ([Auditor.Judge]).
func Judge(ctx context.Context, e registry.Entry, opts Options) Verdict {
	a, err := New(opts)
	if err != nil {
		v := newVerdict(e)
		v.fail(err)
		return v
	}
	defer a.Close()
	return a.Judge(ctx, e)
}

func newVerdict(e registry.Entry) Verdict {
	v := Verdict{Tools: []pin.ToolState{}, Findings: []finding.Finding{}, RegistryStatus: e.Official.Status}
	if e.Server != nil {
		v.Name, v.Version = e.Server.Name, e.Server.Version
	}
	if v.RegistryStatus == "" {
		v.RegistryStatus = registry.StatusActive
	}
	return v
}

func (v *Verdict) fail(err error) {
	v.Status, v.ExitCode, v.Error = Error, ExitError, err.Error()
}

func (v *Verdict) add(f finding.Finding) { v.Findings = append(v.Findings, f) }

// Judge judges one entry, offline of its server: its registry status, its
// bundle, the bundle's binding to the entry, and the approvals. It never
// fails: an entry that cannot be judged is a verdict of status [Error].
func (a *Auditor) Judge(ctx context.Context, e registry.Entry) Verdict {
	v := newVerdict(e)
	if e.Server == nil {
		v.fail(errors.New("entry without a server"))
		return v
	}
	if v.RegistryStatus == registry.StatusDeleted {
		v.Status = Deleted
		return v
	}
	timeout := a.opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	entryCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := a.judge(entryCtx, e.Server, &v)
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("audit stopped: %w", context.Cause(ctx))
	}
	if err != nil {
		v.Tools, v.Findings = []pin.ToolState{}, []finding.Finding{}
		v.fail(err)
		return v
	}
	v.ExitCode = finding.ExitCode(v.Findings)
	if v.Signed && !v.SignatureVerified {
		v.ExitCode = finding.Worse(v.ExitCode, finding.ExitSignature)
	}
	switch {
	case v.ExitCode == finding.ExitApproval:
		v.Status = ApprovalRequired
	case v.ExitCode != finding.ExitOK:
		v.Status = Blocked
	case !v.Signed:
		v.Status = Unsigned
	case v.Approvals == "":
		v.Status = Verified
	default:
		v.Status = Approved
	}
	return v
}

// judge adds to v what it finds about s; an error is operational.
func (a *Auditor) judge(ctx context.Context, s *registry.ServerJSON, v *Verdict) error {
	// What a host would run: the entry chooses arguments and variables
	// besides the package, and none may make the launch run more than it.
	launchOK := true
	for _, p := range s.Packages {
		if err := registry.CheckLaunch(p); err != nil {
			launchOK = false
			v.add(finding.Finding{Kind: finding.Impersonation, Severity: finding.Error,
				Message: fmt.Sprintf("registry entry %s@%s: %v", s.Name, s.Version, err)})
		}
	}
	m, signed, err := s.EtdiMeta()
	if err != nil {
		v.Signed = true
		v.add(finding.Finding{Kind: finding.BundleInvalid, Severity: finding.Error,
			Message: "the entry's dev.etdi metadata is malformed: " + err.Error()})
		return nil
	}
	if !signed {
		a.unsigned(s, v)
		return nil
	}
	v.Signed, v.Bundle, v.BundleDigest = true, m.Bundle, m.Digest
	data, err := registry.FetchBundle(ctx, a.opts.HTTP, m)
	if err != nil {
		v.add(finding.Finding{Kind: finding.BundleInvalid, Severity: finding.Error,
			Message: "the bundle the entry names cannot be used: " + err.Error()})
		return nil
	}
	r, err := guard.Observe(ctx, nil, guard.Options{Policy: a.opts.Trust, Bundle: data, BundleSource: m.Bundle,
		Now: a.opts.Now, Tokens: a.opts.Tokens, RegistryName: s.Name})
	if err != nil {
		return err
	}
	v.Findings = append(v.Findings, r.Findings...)
	res := r.Verification
	if res == nil || !res.Verified {
		return nil
	}
	v.SignatureVerified = true
	v.Provider, v.Server = res.Provider.ID, r.Server
	mismatches := registry.Binding(s, res.Server)
	for _, mm := range mismatches {
		v.add(finding.Finding{Kind: finding.Impersonation, Severity: finding.Error, Server: r.Server,
			Message: fmt.Sprintf("the bundle of %s does not bind registry entry %s@%s: %s", r.Server, s.Name, s.Version, mm.Error())})
	}
	v.Bound = len(mismatches) == 0 && launchOK
	if a.approvals == "" || r.Blocked() {
		return nil
	}
	v.Approvals = a.approvals
	c, err := a.compare(r.Observation)
	if err != nil {
		return err
	}
	v.Tools = c.Tools
	v.Findings = append(v.Findings, c.Findings...)
	return nil
}

// unsigned applies the trust policy's unsigned rule to an entry that
// names no bundle.
func (a *Auditor) unsigned(s *registry.ServerJSON, v *Verdict) {
	switch a.opts.Trust.Unsigned {
	case trust.Allow:
	case trust.Warn:
		v.add(finding.Finding{Kind: finding.UnsignedTool, Severity: finding.Warning,
			Message: fmt.Sprintf("registry entry %s@%s names no signed bundle (policy: warn)", s.Name, s.Version)})
	default:
		v.add(finding.Finding{Kind: finding.UnsignedTool, Severity: finding.Error,
			Message: fmt.Sprintf("registry entry %s@%s names no signed bundle and the trust policy blocks unsigned tools", s.Name, s.Version)})
	}
}

// compare compares an observation with the approvals, read-only: an audit
// records nothing in the store's history.
func (a *Auditor) compare(o *pin.Observation) (*pin.Comparison, error) {
	if !pin.IsEtcd(a.pins) {
		if _, err := os.Stat(a.pins); errors.Is(err, os.ErrNotExist) {
			return nothingApproved(o, a.pins), nil
		}
	}
	var c *pin.Comparison
	err := a.store.with(func() (*pin.Store, error) {
		return pin.Open(a.pins, pin.Options{ReadOnly: true, LockTimeout: a.opts.LockTimeout, Etcd: a.opts.Etcd})
	}, func(s *pin.Store) error {
		var err error
		c, err = s.Compare(o)
		return err
	})
	if errors.Is(err, os.ErrNotExist) {
		return nothingApproved(o, a.pins), nil
	}
	return c, err
}

// MaxHold bounds how long an [Auditor] keeps the pin database open (with
// its shared lock) for the entries it judges at once: opening it for
// each entry costs more than judging one, and an approval or a
// revocation, which waits for the lock, waits at most this long (less
// than pin.DefaultLockTimeout).
const MaxHold = time.Second

// ReopenGap is how long a closed pin database stays closed before the
// next judgement opens it again: long enough for an approval or a
// revocation waiting for the lock (which bbolt retries every 50 ms) to
// take it.
const ReopenGap = 200 * time.Millisecond

// sharedStore is the pin database an auditor's concurrent judgements
// share: opened on first use, and closed once MaxHold has passed and the
// judgements using it are done. A judgement that starts after MaxHold
// does not join it: it waits for it to close and for ReopenGap to pass,
// so that a stream of overlapping judgements never keeps a writer out.
type sharedStore struct {
	mu       sync.Mutex
	cond     *sync.Cond
	s        *pin.Store
	users    int
	expired  bool
	timer    *time.Timer
	closedAt time.Time
	// closeErr is the first error of closing it, reported by Close.
	closeErr error
}

// with runs fn with the shared store, opening it with open when it is
// not.
func (sh *sharedStore) with(open func() (*pin.Store, error), fn func(*pin.Store) error) error {
	sh.mu.Lock()
	if sh.cond == nil {
		sh.cond = sync.NewCond(&sh.mu)
	}
	for sh.s == nil || sh.expired {
		if sh.s != nil {
			sh.cond.Wait() // draining: closed by its last user
			continue
		}
		if wait := time.Until(sh.closedAt.Add(ReopenGap)); wait > 0 {
			sh.mu.Unlock()
			time.Sleep(wait)
			sh.mu.Lock()
			continue
		}
		s, err := open()
		if err != nil {
			sh.mu.Unlock()
			return err
		}
		sh.s, sh.expired = s, false
		sh.timer = time.AfterFunc(MaxHold, sh.expire)
	}
	s := sh.s
	sh.users++
	sh.mu.Unlock()

	err := fn(s)

	sh.mu.Lock()
	sh.users--
	if sh.users == 0 && sh.expired {
		sh.closeLocked()
	}
	sh.mu.Unlock()
	return err
}

// expire closes the store when no judgement uses it, else lets the last
// one close it.
func (sh *sharedStore) expire() {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.expired = true
	if sh.users == 0 {
		sh.closeLocked()
	}
}

func (sh *sharedStore) closeLocked() {
	if sh.s == nil {
		return
	}
	if sh.timer != nil {
		sh.timer.Stop()
	}
	if err := sh.s.Close(); err != nil && sh.closeErr == nil {
		sh.closeErr = fmt.Errorf("closing the pin database: %w", err)
	}
	sh.s, sh.closedAt = nil, time.Now()
	if sh.cond != nil {
		sh.cond.Broadcast()
	}
}

// close closes the store (no judgement may be running) and returns the
// first error of closing it.
func (sh *sharedStore) close() error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.closeLocked()
	return sh.closeErr
}

// nothingApproved is the comparison with a pin store that does not exist
// yet: every tool is new.
func nothingApproved(o *pin.Observation, path string) *pin.Comparison {
	c := &pin.Comparison{Server: o.Server, Tools: []pin.ToolState{}, Findings: []finding.Finding{}}
	for _, t := range o.Tools {
		c.Tools = append(c.Tools, pin.ToolState{Item: t.Item, Name: t.Name, Version: t.Version, Digest: t.Digest.String(), Status: pin.StatusNew})
		c.Findings = append(c.Findings, finding.Finding{Kind: finding.NewTool, Severity: finding.Error, Server: o.Server,
			Tool: t.Name, Version: t.Version, Live: t.Digest.String(), Permissions: t.Permissions,
			Message: fmt.Sprintf("tool %q of %s was never approved (no pin database %s yet)", t.Name, o.Server, path)})
	}
	return c
}
