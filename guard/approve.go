package guard

import (
	"context"
	"errors"
	"time"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/pin"
)

// ApproveOptions select what [Approve] approves.
type ApproveOptions struct {
	// Tools, if set, limits approval to these names; naming a tool is also
	// what allows approving a changed definition, a downgrade, a changed
	// signer, a shadowing or a look-alike name.
	Tools []string
	// AcceptInstructions accepts changed server instructions.
	AcceptInstructions bool
	// Update approves the server's update (pin.ApproveOptions.Update).
	Update bool
	// Replace makes a changed definition replace the approved ones
	// instead of being approved beside them (pin.ApproveOptions.Replace).
	Replace bool
	// Review, if set, sees the comparison as it stands once the database
	// is open for approving, before anything is approved; if it returns
	// false nothing is approved (ApproveResult.Withdrawn). A person who
	// decided on an earlier comparison withdraws when anything to decide
	// differs now (another process approved or revoked meanwhile).
	Review func(now *pin.Comparison) bool
	// Scopes and ScopesAll give unsigned tools permission scopes
	// (pin.ApproveOptions; policy.ApprovalScopes makes them).
	Scopes    map[string][]string
	ScopesAll []string
}

// ApproveResult is what [Approve] did.
type ApproveResult struct {
	// Approved lists what was pinned; Refused what was asked for and not
	// approved, and why.
	Approved []pin.Approval
	Refused  []pin.Refusal
	// Withdrawn says that Review withdrew: nothing was approved.
	Withdrawn bool
	// Comparison is the comparison after approving.
	Comparison *pin.Comparison
	// InstructionsRecorded says that the server's instructions (the
	// report's Observation.Instructions) were recorded as approved: with
	// a first approval, or accepted (AcceptInstructions). A person is
	// shown what was recorded.
	InstructionsRecorded bool
}

// ExitCode is 0 when everything asked for was approved, else the most
// severe code of the refused findings (docs/check.md#check-against-pins); a refusal of a kind
// without a code is 13, approval required.
func (a *ApproveResult) ExitCode() int {
	code := finding.ExitOK
	for _, r := range a.Refused {
		k := finding.Kind(r.Kind)
		c := k.ExitCode()
		if !k.Known() || c == finding.ExitOK {
			c = finding.ExitApproval
		}
		code = finding.Worse(code, c)
	}
	return code
}

// ErrBlocked is returned by [Approve] for a report whose verification
// failed: nothing was established that could be approved.
var ErrBlocked = errors.New("approval: the server's tools were not established (verification failed); nothing can be approved")

// Approve pins, in one transaction with their history records, what the
// report's server offers and needs approval: new tools, new versions and
// newly signed tools (all, or those named in opts.Tools); changed
// definitions, downgrades, changed signers, shadowing and look-alike
// names only when named. Revoked tools and a replayed older bundle are
// never approved: a finding about the whole server refuses everything.
// Every tool asked about that would still fail a check is listed as
// refused, so a zero [ApproveResult.ExitCode] means that a check would pass.
func Approve(ctx context.Context, r *Report, opts ApproveOptions) (*ApproveResult, error) {
	if r.Blocked() {
		return nil, ErrBlocked
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := &ApproveResult{}
	err := r.opts.WithPins(false, func(s *pin.Store) error {
		c, err := s.Compare(r.Observation)
		if err != nil {
			return err
		}
		if opts.Review != nil && !opts.Review(c) {
			res.Withdrawn, res.Comparison = true, c
			return nil
		}
		if res.Refused = serverRefusals(c); len(res.Refused) > 0 {
			res.Comparison = c
			return nil
		}
		before, err := s.Server(r.Observation.Server)
		if err != nil {
			return err
		}
		res.Approved, res.Refused, err = s.Approve(r.Observation, pin.ApproveOptions{Tools: opts.Tools, By: r.opts.By, AcceptInstructions: opts.AcceptInstructions, Replace: opts.Replace,
			Scopes: opts.Scopes, ScopesAll: opts.ScopesAll, Update: opts.Update})
		if err != nil {
			return err
		}
		after, err := s.Server(r.Observation.Server)
		if err != nil {
			return err
		}
		res.InstructionsRecorded = after != nil && after.InstructionsKnown &&
			(before == nil || !before.InstructionsKnown || !sameText(before.Instructions, after.Instructions))
		if res.Comparison, err = s.Compare(r.Observation); err != nil {
			return err
		}
		res.Refused = stillRefused(res.Comparison, opts.Tools, res.Refused)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func sameText(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// serverRefusals returns the error findings about the whole server (a
// replayed older bundle) as refusals: nothing is approved then. Changed
// instructions are not among them: they are refused alone.
func serverRefusals(c *pin.Comparison) []pin.Refusal {
	var out []pin.Refusal
	for _, f := range c.Findings {
		if f.Kind == finding.ServerUpdated && f.AsksApproval() {
			continue // approved with the server (pin.Store.Approve)
		}
		if f.Tool == "" && f.Severity == finding.Error && !f.Kind.AboutInstructions() {
			out = append(out, pin.Refusal{Kind: string(f.Kind), Reason: f.Message + "; not approving anything"})
		}
	}
	return out
}

// stillRefused adds to refused every tool asked about that still has an
// error finding after approving: a safety net, so that an approval never
// passes while a tool it was asked about would fail a check. Asked about
// are the tools named or, without names, every tool offered.
func stillRefused(c *pin.Comparison, named []string, refused []pin.Refusal) []pin.Refusal {
	asked := map[string]bool{}
	for _, n := range named {
		asked[n] = true
	}
	listed := map[string]bool{}
	for _, r := range refused {
		listed[r.Tool] = true
	}
	for _, f := range c.Findings {
		if f.Kind == finding.ServerUpdated && f.Severity == finding.Error {
			// Not approved by naming tools: the server's update stays to
			// approve.
			refused = append(refused, pin.Refusal{Kind: string(f.Kind), Reason: "still needs approval: " + f.Message})
			continue
		}
		ref := pin.ItemRef(f.Item, f.Tool)
		if f.Severity != finding.Error || f.Tool == "" || listed[ref] || (len(asked) > 0 && !asked[ref]) {
			continue
		}
		listed[ref] = true
		refused = append(refused, pin.Refusal{Tool: ref, Kind: string(f.Kind), Reason: "still needs approval: " + f.Message})
	}
	return refused
}

// Unserved lists the items of the report that match their pins, approved
// without recording what served them, while what serves them now is
// known ([pin.Comparison.Unserved]): nothing is weakened for them (another
// implementation is judged by the definitions alone, as before), and
// [RecordServed] records it once the person confirms.
func (r *Report) Unserved() []string {
	if r.Comparison == nil || r.Observation == nil || r.Observation.Served == "" {
		return nil
	}
	return r.Comparison.Unserved
}

// RecordServed records what serves the report's server now
// (Observation.Served) in the pins of its items that were approved
// without it, each with a history record ([pin.Store.RecordServed]). The
// caller asks the person first: it binds the approvals to what runs now.
func RecordServed(ctx context.Context, r *Report) ([]pin.Approval, *pin.Comparison, error) {
	if r.Blocked() {
		return nil, nil, ErrBlocked
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if r.opts.NoRecord {
		return nil, nil, errors.New("pin database: the pins are read-only; nothing is recorded")
	}
	var recorded []pin.Approval
	var c *pin.Comparison
	err := r.opts.WithPins(false, func(s *pin.Store) error {
		var err error
		if recorded, err = s.RecordServed(r.Observation, r.opts.By, time.Time{}); err != nil {
			return err
		}
		c, err = s.Compare(r.Observation)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return recorded, c, nil
}

// UnservedPins lists the pins of the server opts name (by its bundle's
// claimed identity, or opts.Name) with an approved definition (any
// variant) approved without recording what served it, when o resolves what serves it now: a gate reports
// them (it cannot ask the person) and judges them by their definitions
// alone, as before; etdi check records what serves them once the person
// confirms ([RecordServed]).
func UnservedPins(o *Origin, opts Options) ([]string, error) {
	if o.Served() == "" {
		return nil, nil
	}
	server := opts.ServerKey()
	if server == "" {
		return nil, nil
	}
	var out []string
	err := opts.WithPins(true, func(s *pin.Store) error {
		pins, err := s.ServerPins(server)
		for _, p := range pins {
			for _, v := range p.All() { // every approved variant (docs/storage.md#approved-variants)
				if v.Served == "" {
					out = append(out, p.Ref())
					break
				}
			}
		}
		return err
	})
	if errors.Is(err, errNoPins) {
		return nil, nil
	}
	return out, err
}
