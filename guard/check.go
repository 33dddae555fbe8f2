package guard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/strictjson"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
)

// Options say how a listing is judged.
type Options struct {
	// Policy is the trust policy (required).
	Policy *trust.Policy
	// Pins is the pin database file, or an etcd:// location of a store
	// shared through etcd; Check opens it only while it reads or writes,
	// never for longer.
	Pins string
	// LockTimeout bounds the wait for another process holding the pin
	// database (default pin.DefaultLockTimeout).
	LockTimeout time.Duration
	// Etcd configures a store at an etcd:// location.
	Etcd pin.EtcdOptions
	// Bundle is the provider's bundle given out of band, named
	// BundleSource in reports; nil means the one the listing carries
	// in-band, if any.
	Bundle       []byte
	BundleSource string
	// Name is what a server without a bundle is pinned under
	// (unsigned:<Name>); without it such a server is an error.
	Name string
	// Now is the verification time (default: now).
	Now time.Time
	// Tokens returns the verifier of identity provider tokens for one
	// verification (it may remember that a provider was unreachable); nil:
	// bundles that need a token fail.
	Tokens func() verify.TokenVerifier
	// Credentials are the secrets the server is configured with, which no
	// definition may show (SPEC.md §14).
	Credentials []Credential
	// By names who checks or approves, in the history.
	By string
	// NoRecord compares without appending findings to the history (a
	// gate that recorded its bound of them this session).
	NoRecord bool
	// Origin is where the listing came from (ResolveOrigin): a bundle that
	// names its server's endpoints or artifacts is held to it, and the
	// pins record what served each tool. nil for a listing of no server
	// (a saved file), which checks neither.
	Origin *Origin
	// Spec is the description of the server the listing comes from
	// (Describe, DescribeEntry); nil for a saved listing or a bundle
	// checked alone. Check reports a command that runs a package without
	// a fixed version, or an image by a moving tag, as a moving_target
	// warning (never recorded: it is about the command, not the tools),
	// its message masked with the Spec's secrets.
	Spec *ServerSpec
	// Registry is the registry entry the server was described from
	// ([DescribeRegistry]; [RegistryServer.Options] sets it): a verified
	// bundle must name the entry (server.registryName, when it names one)
	// and bind the package or remote checked, else impersonation and
	// nothing is compared. nil for a server of no registry.
	Registry *RegistryServer
	// RegistryName is the name of the MCP registry entry the server was
	// found through (io.github.acme/weather), "" for none: its bundle is
	// held to it ([verify.Options.RegistryName], SPEC.md §4.2).
	RegistryName string
	// InGate says the listing is a gate's (package gate sets it): under
	// the update rule ask, an update of an unsigned server is relayed
	// with a notice.
	InGate bool
}

// NameError reports a server without a bundle that cannot be pinned
// under the name given ([Options.Name]).
type NameError struct{ Err error }

func (e *NameError) Error() string { return e.Err.Error() }
func (e *NameError) Unwrap() error { return e.Err }

// ErrNoName is returned for a server without a bundle when [Options.Name]
// does not say what to pin it under.
var ErrNoName = &NameError{errors.New("a server without a bundle needs a name to be pinned under")}

// Report is what was found about one server: the verification of its
// bundle, the state of each tool against its pin, and every finding.
type Report struct {
	// Server is the server's pin identity ("acme:weather",
	// "unsigned:files"); empty when verification failed before it was
	// established.
	Server string `json:"server,omitempty"`
	// Verification is the bundle's verification (nil without a bundle).
	Verification *verify.Result `json:"verification,omitempty"`
	// Tools is the state of each tool against the pins (empty when the
	// tools were not compared: see Blocked).
	Tools    []pin.ToolState   `json:"tools"`
	Findings []finding.Finding `json:"findings"`

	// Observation is what the server offers as established by
	// verification; nil when it could not be (Blocked).
	Observation *pin.Observation `json:"-"`
	// Comparison is the comparison with the pins (nil before Check
	// compares, or when Blocked): Tools are its tools, and Findings end
	// with its findings.
	Comparison *pin.Comparison `json:"-"`
	// Listing is the listing judged (nil for a bundle checked alone).
	Listing *Listing `json:"-"`
	opts    Options
	// observed is the number of findings of verification, before those
	// of the comparison.
	observed int
	// verdicts caches Allowed for every item, by item and name: a report
	// of 1,000 tools is asked about each of them.
	verdicts map[[2]string]bool
	// Recorded is the number of findings Check appended to the history.
	Recorded int `json:"-"`
	// command are the findings about the command that serves the listing
	// (moving_target), which end Findings and are never recorded.
	command []finding.Finding
}

// Observed returns the findings of verification (and of the unsigned
// rule), without those of the comparison with the pins.
func (r *Report) Observed() []finding.Finding { return r.Findings[:r.observed:r.observed] }

// After returns a copy of r with comparison c, made later (after an
// approval), in place of the one r was made with.
func (r *Report) After(c *pin.Comparison) *Report {
	after := *r
	after.verdicts = nil
	after.Comparison, after.Tools = c, c.Tools
	after.Findings = append(append(append([]finding.Finding{}, r.Observed()...), c.Findings...), r.command...)
	return &after
}

// Since returns the findings of r, a report made after before (an
// approval through it), as etdi check reports them: r's, with the
// suspicious_text warnings before carried that r no longer does (an
// approved tool is not scanned again), so that what was approved stays
// on record; the findings about the command end them.
func (r *Report) Since(before *Report) []finding.Finding {
	own := r.Findings[:len(r.Findings)-len(r.command)]
	out := append([]finding.Finding{}, own...)
	for _, f := range before.Findings {
		if f.Kind == finding.SuspiciousText && !slices.ContainsFunc(own, func(g finding.Finding) bool {
			return g.Kind == f.Kind && g.Tool == f.Tool && g.Pointer == f.Pointer && g.Match == f.Match
		}) {
			out = append(out, f)
		}
	}
	return append(out, r.command...)
}

// Blocked reports whether verification failed so that nothing was
// compared with the pins: no tool is allowed.
func (r *Report) Blocked() bool { return r.Observation == nil }

// ExitCode is the exit code of the report (SPEC.md §11): the most severe
// error finding ([finding.ExitCode]), and never 0 when the tools were not
// established: a blocked report fails as an unverified bundle does
// ([verify.Result.ExitCode]).
func (r *Report) ExitCode() int {
	if r.Blocked() {
		return (&verify.Result{Findings: r.Findings}).ExitCode()
	}
	return finding.ExitCode(r.Findings)
}

// Allowed reports whether tool may reach the host: it is offered, matches
// its pin (approved, unchanged, not revoked), and no error finding
// concerns it or the whole server. Changed server instructions do not
// block the tools: they concern the instructions alone, which the gate
// withholds.
func (r *Report) Allowed(tool string) bool {
	if r.Blocked() {
		return false
	}
	return r.allowed(pin.ItemTool, tool)
}

// AllowedItem is [Report.Allowed] for any item kind: a prompt, resource or
// resource template ([pin.ItemPrompt], ...), or a tool ([pin.ItemTool]).
func (r *Report) AllowedItem(item, name string) bool { return r.allowed(item, name) }

func (r *Report) allowed(item, tool string) bool {
	if r.Blocked() {
		return false
	}
	if r.verdicts == nil {
		r.verdicts = map[[2]string]bool{}
		for _, t := range r.Tools {
			k := [2]string{t.Item, t.Name}
			_, twice := r.verdicts[k]
			r.verdicts[k] = !twice && t.Status == pin.StatusOK // listed twice, or not approved
		}
		for _, f := range r.Findings {
			if f.Severity != finding.Error {
				continue
			}
			if f.Tool == "" && !f.Kind.AboutInstructions() {
				clear(r.verdicts) // about the whole server: nothing is allowed
				break
			}
			if _, ok := r.verdicts[[2]string{f.Item, f.Tool}]; ok {
				r.verdicts[[2]string{f.Item, f.Tool}] = false
			}
		}
	}
	return r.verdicts[[2]string{item, tool}]
}

// Observe verifies a listing against the trust policy without reading
// the pins: it establishes the server's identity and what it offers
// ([Report.Observation]), or reports why that failed. l may be nil to
// check the bundle alone. An operational failure (an unreadable bundle,
// an identity provider that cannot be reached) is an error, never a
// finding.
func Observe(ctx context.Context, l *Listing, opts Options) (*Report, error) {
	r := &Report{Tools: []pin.ToolState{}, Findings: []finding.Finding{}, Listing: l, opts: opts}
	if opts.Policy == nil {
		return nil, errors.New("guard: no trust policy")
	}
	var live *etdi.ToolsList
	var inband []byte
	if l != nil {
		live = &etdi.ToolsList{Tools: l.Tools}
		// A definition that shows a configured secret is never compared,
		// approved or recorded: it would be stored exactly (SPEC.md §14).
		if fs := CredentialFindings(l, opts.Credentials); len(fs) > 0 {
			r.Findings = append(r.Findings, fs...)
			return r, nil
		}
		var err error
		if inband, err = etdi.InbandBundle(append(append([]*strictjson.Value{}, l.Metas...), l.ToolMetas...)); err != nil {
			r.Findings = append(r.Findings, finding.Finding{Kind: finding.BundleInvalid, Severity: finding.Error, Message: "in-band bundle: " + err.Error()})
			return r, nil
		}
	}
	data, source := opts.Bundle, opts.BundleSource
	if data == nil && inband != nil {
		data, source = inband, "in-band"
	}
	if data == nil {
		if l == nil {
			return nil, errors.New("guard: nothing to check: no listing and no bundle")
		}
		if opts.Name == "" {
			return nil, ErrNoName
		}
		return r, r.unsigned(l, opts.Name, opts.Policy.Unsigned)
	}
	var tokens verify.TokenVerifier
	if opts.Tokens != nil {
		tokens = opts.Tokens()
	}
	res := verify.Verify(data, opts.Policy, verify.Options{Now: opts.Now, Live: live, Tokens: tokens, Context: ctx, Origin: opts.Origin.verifyOrigin(), RegistryName: opts.RegistryName})
	if u, ok := tokens.(interface{ Unreachable() error }); ok {
		if err := u.Unreachable(); err != nil {
			return nil, err // operational; nothing was verified
		}
	}
	res.Source = source
	r.Verification = res
	r.Findings = append(r.Findings, res.Findings...)
	if !res.Verified {
		return r, nil
	}
	if fs := opts.Registry.bindingFindings(res); len(fs) > 0 {
		r.Findings = append(r.Findings, fs...)
		return r, nil
	}
	st := res.Statement
	signer := SignerOf(res)
	obs := &pin.Observation{Server: pin.SignedServerKey(st.Provider.ID, st.Server.Name), Provider: st.Provider.ID,
		Name: st.Server.Name, Sequence: st.Sequence}
	if live == nil {
		for _, t := range st.Tools {
			obs.Tools = append(obs.Tools, pin.Observed{Name: t.Name, Version: t.Version, Digest: t.Digest,
				Canonical: t.Canonical, Permissions: t.Permissions, Signer: signer})
		}
	} else {
		for _, lt := range live.Tools {
			ob := pin.Observed{Name: lt.Name, Digest: lt.Digest, Canonical: lt.Canonical, Signer: pin.Unsigned}
			if t := st.Tool(lt.Name); t != nil {
				ob.Version, ob.Permissions, ob.Signer = t.Version, t.Permissions, signer
			}
			obs.Tools = append(obs.Tools, ob)
		}
	}
	r.setObservation(obs)
	return r, nil
}

// setObservation sets the observation and the server, with what only a live
// server shows: its instructions, and its prompts, resources and resource
// templates, pinned by digest (bundles sign tools only).
func (r *Report) setObservation(obs *pin.Observation) {
	obs.Served, obs.ServedAt, obs.ServedVerified = r.opts.Origin.Served(), r.opts.Origin.ServedAt(), r.opts.Origin.Verified()
	obs.OnUpdate, obs.InGate = string(r.opts.Policy.OnUpdate()), r.opts.InGate
	if err := r.opts.Origin.Unresolved(); err != nil {
		obs.Unresolved = err.Error()
	}
	if r.opts.Origin == nil && r.Listing != nil {
		// A saved listing says what served it (bound to its entries).
		obs.Served, obs.ServedAt = r.Listing.Served, r.Listing.ServedAt
	}
	if l := r.Listing; l != nil {
		if l.Live {
			obs.InstructionsKnown, obs.Instructions = true, l.Instructions
		}
		items := l.Items()
		for _, item := range l.Listed {
			obs.Listed = append(obs.Listed, item)
			for _, lt := range items[item] {
				obs.Tools = append(obs.Tools, pin.Observed{Item: item, Name: lt.Name, Digest: lt.Digest, Canonical: lt.Canonical, Signer: pin.Unsigned})
			}
		}
	}
	r.Observation, r.Server = obs, obs.Server
}

// unsigned establishes a server without a bundle, applying the policy's
// unsigned rule: block (a finding, nothing compared), or pin its tools by
// digest (with a warning for each under warn).
func (r *Report) unsigned(l *Listing, name string, rule trust.UnsignedRule) error {
	if err := pin.ValidateUnsignedName(name); err != nil {
		return &NameError{err}
	}
	server := pin.UnsignedServerKey(name)
	if rule == trust.Block {
		var names []string
		for _, t := range l.Tools {
			names = append(names, t.Name)
		}
		r.Findings = append(r.Findings, finding.Finding{Kind: finding.UnsignedTool, Severity: finding.Error, Server: server,
			Message: fmt.Sprintf("server %s has no bundle and the trust policy blocks unsigned tools (tools %s)", server, strings.Join(names, ", "))})
		return nil
	}
	obs := &pin.Observation{Server: server, Name: name}
	for _, lt := range l.Tools {
		obs.Tools = append(obs.Tools, pin.Observed{Name: lt.Name, Digest: lt.Digest, Canonical: lt.Canonical, Signer: pin.Unsigned})
		if rule == trust.Warn {
			r.Findings = append(r.Findings, finding.Finding{Kind: finding.UnsignedTool, Severity: finding.Warning, Server: server,
				Tool: lt.Name, Live: lt.Digest.String(), Message: fmt.Sprintf("tool %q of %s is not signed (policy: warn); pinned by digest", lt.Name, server)})
		}
	}
	r.setObservation(obs)
	return nil
}

// SignerOf is the pin identity of whoever vouched for a verified bundle:
// the key or the keyless signer's trust entry, the identity provider's
// issuer and subject, or both.
func SignerOf(r *verify.Result) pin.SignerID {
	switch {
	case r.Signer != nil && r.Signer.Sigstore != nil && r.Token != nil:
		return pin.SignerID{Kind: "sigstore+idp", ID: r.Signer.Trusted + " " + r.Token.Issuer + " " + r.Token.Subject}
	case r.Signer != nil && r.Signer.Sigstore != nil:
		// The trust entry, not the certificate's identity: an identity
		// pattern matches a new identity (a new tag) at every release,
		// and that is one signer, not a new one.
		return pin.SignerID{Kind: "sigstore", ID: r.Signer.Trusted}
	case r.Signer != nil && r.Token != nil:
		return pin.SignerID{Kind: "key+idp", ID: r.Signer.KeyID + " " + r.Token.Issuer + " " + r.Token.Subject}
	case r.Token != nil:
		return pin.SignerID{Kind: "idp", ID: r.Token.Issuer + " " + r.Token.Subject}
	}
	return pin.SignerID{Kind: "key", ID: r.Signer.KeyID}
}

// Check observes a listing ([Observe]) and compares what the server offers
// with the pins in opts.Pins, appending to the history every error and
// warning finding it does not already hold since the last decision about
// its tool. l may be nil to check a bundle alone.
//
// With opts.Spec, a command that runs a moving target (a package without
// a fixed version, an image by a moving tag) adds a moving_target
// warning at the end of the findings, whether or not the tools were
// compared; it is not recorded.
func Check(ctx context.Context, l *Listing, opts Options) (*Report, error) {
	r, err := Observe(ctx, l, opts)
	if err != nil {
		return r, err
	}
	if !r.Blocked() {
		if err := r.compare(ctx); err != nil {
			return r, err
		}
	}
	r.command = opts.Spec.MovingTarget(r.Server)
	r.Findings = append(r.Findings, r.command...)
	return r, nil
}

// compare compares the observation with the pins and records findings:
// read-only first, and only if there is something to record, again in a
// write transaction (which holds the database exclusively).
func (r *Report) compare(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.observed = len(r.Findings)
	var c *pin.Comparison
	var todo []finding.Finding
	err := r.opts.WithPins(true, func(s *pin.Store) error {
		var err error
		c, todo, err = s.Judge(r.Observation, r.Findings...)
		return err
	})
	if errors.Is(err, errNoPins) || (err == nil && len(todo) > 0 && !r.opts.NoRecord) {
		var recorded *pin.Comparison
		err = r.opts.WithPins(false, func(s *pin.Store) error {
			var err error
			recorded, err = s.Record(r.Observation, r.opts.By, r.Findings...)
			return err
		})
		switch {
		case err == nil:
			c = recorded
		case errors.Is(err, pin.ErrOffline) && c != nil:
			// An etcd store on its snapshot: the findings are reported,
			// and recorded by the next check that reaches etcd.
			err = nil
		}
	}
	if err != nil {
		return err
	}
	*r = *r.After(c)
	r.Recorded = c.Recorded
	return nil
}
