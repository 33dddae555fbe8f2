package pin

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/termtext"
)

// ApproveOptions select what Approve approves.
type ApproveOptions struct {
	// Tools, if set, limits approval to these names (other items named as
	// ItemRef does: prompt:NAME, resource:URI); naming a tool is also
	// what allows approving a changed definition, a downgrade, a changed
	// signer, a shadowing or a look-alike name.
	Tools []string
	By    string
	Now   time.Time
	// AcceptInstructions approves changed server instructions.
	AcceptInstructions bool
	// Update approves the server's update (server_updated, unless the
	// trust policy blocks it) beside the tools named; with none named, the
	// update alone. Without it the update is approved only with the
	// server as a whole (Tools empty).
	Update bool
	// Replace makes the approval of a changed definition replace every
	// definition approved before, instead of adding it beside them as
	// another variant (docs/storage.md#approved-variants).
	Replace bool
	// Scopes gives permission scopes to the unsigned tools it names (by
	// name): each approval of such a tool records them in its pin and its
	// history record, and call-time policies see them as a signed tool's
	// permissions (docs/storage.md#scopes-of-unsigned-tools). A tool named here that is approved and
	// unchanged is approved again when its scopes differ. Naming a tool
	// the server does not offer, or a signed tool, is an error.
	Scopes map[string][]string
	// ScopesAll gives scopes to every tool this approval approves, as
	// Scopes does; an error for a server with signed tools.
	ScopesAll []string
}

// MaxScopes bounds the scopes given to one tool at approval.
const MaxScopes = 64

// ScopesChanged is the [Approval.Kind] (and the approval record's kind) of
// an approved, unchanged tool approved again for its scopes.
const ScopesChanged = "scopes_changed"

// NormalizeScopes checks scopes given at approval ([etdi.ValidateScope],
// at most [MaxScopes]) and returns them sorted, each once.
func NormalizeScopes(scopes []string) ([]string, error) {
	out := slices.Clone(scopes)
	for _, sc := range out {
		if err := etdi.ValidateScope(sc); err != nil {
			return nil, err
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxScopes {
		return nil, fmt.Errorf("%d scopes for one tool; etdi takes at most %d", len(out), MaxScopes)
	}
	return out, nil
}

// Approval is one tool Approve pinned.
type Approval struct {
	Pin      Pin    `json:"pin"`
	Kind     string `json:"kind"` // the finding it resolved, e.g. "new_tool"
	Replaced string `json:"replaced,omitempty"`
	// Variant says the definition was approved beside the ones approved
	// before, which stay approved; Variants is how many definitions of
	// the item are approved now (docs/storage.md#approved-variants).
	Variant  bool `json:"variant,omitempty"`
	Variants int  `json:"variants,omitempty"`
	// ServedBefore is what served the tool at its previous approval, when
	// that differs from what serves it now (Pin.Served).
	ServedBefore string `json:"servedBefore,omitempty"`
	// ScopesKept says the approval of a changed definition kept the scopes
	// (Pin.Scopes) of the definition approved before, none being given.
	ScopesKept bool `json:"scopesKept,omitempty"`
	// ScopesBefore are the scopes a ScopesChanged approval replaced.
	ScopesBefore []string `json:"scopesBefore,omitempty"`
}

// Refusal is one tool Approve did not pin, and why.
type Refusal struct {
	// Tool names the tool, or another item as ItemRef does
	// (prompt:NAME); empty for the server's instructions or the whole
	// server.
	Tool   string `json:"tool"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

// MaxApprovalBytes bounds the canonical definitions one approval writes:
// an approval is one transaction, and bbolt holds everything it writes
// until the commit, so this bounds the memory of approving (docs/live.md#live-servers).
const MaxApprovalBytes = 32 << 20

// Approve pins the tools of o that need approval, in one transaction that
// also appends one history record per approval. New tools, new versions
// and newly signed tools are approved unless opts.Tools excludes them;
// changed definitions, downgrades, changed signers, shadowing and look-alike
// names only when named in opts.Tools; revoked tools and a replayed bundle
// never.
func (s *Store) Approve(o *Observation, opts ApproveOptions) ([]Approval, []Refusal, error) {
	now := opts.Now
	if now.IsZero() {
		now = time.Now().UTC()
	}
	named := map[string]bool{}
	for _, n := range opts.Tools {
		named[n] = true
	}
	for n := range named {
		if !slices.ContainsFunc(o.Tools, func(t Observed) bool { return ItemRef(t.Item, t.Name) == n }) {
			return nil, nil, fmt.Errorf("tool %q is not offered by %s", n, o.Server)
		}
	}
	given, all, serr := givenScopes(o, opts)
	if serr != nil {
		return nil, nil, serr
	}
	var approved []Approval
	var refused []Refusal
	err := s.update(func(tx *kvTx) error {
		a := &approving{tx: tx, o: o, opts: opts, named: named, given: given, all: all, now: now}
		err := a.run()
		approved, refused = a.approved, a.refused
		return err
	})
	if err != nil {
		return nil, nil, err // the transaction was rolled back: nothing was approved
	}
	return approved, refused, nil
}

// approving is one run of [Store.Approve] in its transaction: what it was
// asked, and what it approved and refused so far.
type approving struct {
	tx    *kvTx
	o     *Observation
	opts  ApproveOptions
	named map[string]bool     // the ItemRefs opts.Tools names
	given map[string][]string // scopes given by tool name
	all   []string            // scopes given to every tool
	now   time.Time

	info     *ServerInfo
	size     int // bytes of canonical definitions approved so far
	approved []Approval
	refused  []Refusal
}

// run approves what the comparison of a.o with the pins allows.
func (a *approving) run() error {
	tx, o, opts := a.tx, a.o, a.opts
	c, err := compare(tx, o)
	if err != nil {
		return err
	}
	update, instructionsChanged, instructionsKind, err := a.serverFindings(c)
	if err != nil {
		return err
	}
	byTool := errorsByItem(c)
	if a.info, err = serverInfo(tx, o.Server); err != nil {
		return err
	}
	// first: the server has no record of its own yet. Its items may
	// all be approved already under another name for the same artifact
	// (docs/storage.md#one-artifact-under-several-configuration-names): its approval is still its first, and shows its
	// instructions.
	first := a.info == nil
	if first {
		a.info = &ServerInfo{Key: o.Server, Provider: o.Provider, Name: o.Name}
	}
	done := map[string]bool{}
	for i := range o.Tools {
		if err := a.item(&o.Tools[i], byTool, done); err != nil {
			return err
		}
	}
	if update && !first {
		ups, err := approveUpdate(tx, o, c, a.info, opts.By, a.now)
		if err != nil {
			return err
		}
		a.approved = append(a.approved, ups...)
	}
	if len(a.approved) > 0 && o.Sequence > a.info.MaxSequence {
		a.info.MaxSequence = o.Sequence
	}
	if err := a.instructions(first, instructionsChanged, instructionsKind); err != nil {
		return err
	}
	return putInfo(tx, a.info)
}

// serverFindings reads the findings about the server as a whole: whether
// its update is approved with it, whether its instructions changed (and
// how), and an error when another finding about the whole server forbids
// approving anything. Refusals go to a.refused.
func (a *approving) serverFindings(c *Comparison) (update, instructionsChanged bool, instructionsKind finding.Kind, err error) {
	instructionsKind = finding.InstructionsChanged
	for _, f := range c.Findings {
		if f.Kind == finding.ServerUpdated {
			// Approved with the server as a whole, never by naming
			// tools; the trust policy may block it.
			switch {
			case !f.AsksApproval():
				a.refused = append(a.refused, Refusal{"", string(f.Kind), f.Message})
			case len(a.named) == 0 || a.opts.Update:
				update = true
			}
			continue
		}
		if f.Kind.AboutInstructions() {
			instructionsChanged, instructionsKind = true, f.Kind
			if !a.opts.AcceptInstructions {
				a.refused = append(a.refused, Refusal{"", string(f.Kind), f.Message + " (accept them with --accept-instructions)"})
			}
			continue
		}
		if f.Tool == "" && f.Severity == finding.Error {
			return false, false, "", errors.New(f.Message + "; not approving anything")
		}
	}
	return update, instructionsChanged, instructionsKind, nil
}

// errorsByItem returns the first error finding about each item of c, by
// ItemRef.
func errorsByItem(c *Comparison) map[string]finding.Finding {
	byTool := map[string]finding.Finding{}
	for _, f := range c.Findings {
		if f.Severity == finding.Error && f.Tool != "" {
			if _, seen := byTool[ItemRef(f.Item, f.Tool)]; !seen {
				byTool[ItemRef(f.Item, f.Tool)] = f
			}
		}
	}
	return byTool
}

// item approves, rescopes or refuses one item of the observation, as its
// error finding (byTool) and the options allow; done holds the items
// already handled.
func (a *approving) item(t *Observed, byTool map[string]finding.Finding, done map[string]bool) error {
	ref := ItemRef(t.Item, t.Name)
	f, needs := byTool[ref]
	if (len(a.named) > 0 && !a.named[ref]) || done[ref] {
		return nil
	}
	// Scopes go to tools alone: given is keyed by tool name, which
	// a tool named "prompt:x" shares with the ref of prompt x.
	ss, scoped := a.given[ref]
	scoped = scoped && t.Item == ItemTool
	if !needs {
		if scoped {
			done[ref] = true
			return a.rescope(t, ss)
		}
		return nil
	}
	if a.opts.Update && len(a.named) == 0 {
		return nil
	}
	done[ref] = true
	if a.size += len(t.Canonical); a.size > MaxApprovalBytes {
		return fmt.Errorf("server %s asks for more than %d MiB of tool definitions to be approved at once; "+
			"etdi approves at most that in one transaction (approve fewer tools at a time with --tool)", a.o.Server, MaxApprovalBytes>>20)
	}
	switch {
	case f.Kind.Approvability() == finding.Approvable:
	case f.Kind.Approvability() == finding.ApprovableByName && a.named[ref]:
	case f.Kind.Approvability() == finding.ApprovableByName:
		a.refused = append(a.refused, Refusal{ref, string(f.Kind), f.Message + " (name it with --tool to approve it anyway)"})
		return nil
	default:
		a.refused = append(a.refused, Refusal{ref, string(f.Kind), f.Message})
		return nil
	}
	if scoped {
		return a.pin(t, f, ss, true)
	}
	return a.pin(t, f, nil, false)
}

// rescope gives an approved tool the scopes ss (see rescope).
func (a *approving) rescope(t *Observed, ss []string) error {
	ap, r, err := rescope(a.tx, a.info, a.o, t, ss, a.opts.By, a.now)
	if err != nil {
		return err
	}
	if ap != nil {
		a.approved = append(a.approved, *ap)
	}
	if r != nil {
		a.refused = append(a.refused, *r)
	}
	return nil
}

// pin approves item t, whose error finding f is approvable: it writes
// its pin and the history record of the approval. ss are the scopes given
// to it when scoped.
func (a *approving) pin(t *Observed, f finding.Finding, ss []string, scoped bool) error {
	tx, o, opts, now := a.tx, a.o, a.opts, a.now
	ref := ItemRef(t.Item, t.Name)
	old, err := getItem(tx, o.Server, t.Item, t.Name)
	if err != nil {
		return err
	}
	// The definition is shared with o, not copied: a listing may
	// hold 64 MiB of them.
	p := Pin{Server: o.Server, Item: t.Item, Tool: t.Name, Version: t.Version, Digest: t.Digest.String(), Signer: t.Signer,
		Provider: o.Provider, Permissions: t.Permissions, Definition: json.RawMessage(t.Canonical),
		ApprovedBy: opts.By, ApprovedAt: now, Sequence: o.Sequence, Served: o.Served, ServedAt: o.ServedAt}
	if p.Permissions == nil {
		p.Permissions = []etdi.Permission{}
	}
	kept := false
	if scoped {
		p.Scopes = ss
	} else if a.all != nil && t.Item == ItemTool {
		p.Scopes = a.all
	} else if old != nil && t.Item == ItemTool && t.Signer == Unsigned {
		// A changed definition keeps the scopes its approver gave
		// the one approved before (of the same digest, else the
		// latest): dropping them would lift every rule they meet.
		p.Scopes = closestVariant(old, t).Scopes
		kept = len(p.Scopes) > 0
	}
	rec := Record{Type: RecordApprove, Time: now, Server: o.Server, Tool: t.Name, Item: t.Item, Version: t.Version, Digest: p.Digest,
		Signer: &p.Signer, Kind: string(f.Kind), By: opts.By, Permissions: p.Permissions, Scopes: p.Scopes, Served: p.Served, ServedAt: p.ServedAt}
	ap := Approval{Pin: p, Kind: string(f.Kind), Variants: 1, ScopesKept: kept}
	if old != nil && f.Kind == finding.RugPull && !opts.Replace {
		if !a.variant(t, ref, f, old, &p, &rec, &ap) {
			return nil
		}
	} else if old != nil {
		rec.Type = RecordReapprove
		rec.Replaced = strings.TrimSpace(old.Version + " " + old.Digest)
		for _, v := range old.Variants {
			rec.Replaced += ", " + strings.TrimSpace(v.Version+" "+v.Digest)
		}
		ap.Replaced = rec.Replaced
		if old.Served != p.Served {
			ap.ServedBefore = old.Served
		}
	}
	if p.Binding, err = appendBound(tx, rec); err != nil {
		return err
	}
	if err := putPin(tx, a.info, &p); err != nil {
		return err
	}
	ap.Pin = p
	ap.Pin.Variants = nil // the approval, not what it kept
	a.approved = append(a.approved, ap)
	return nil
}

// variant makes p another variant of the approved item old: beside the
// approved definitions, in place of the one of the same digest (whose
// permissions or server changed). It reports false, with a refusal, when
// old already holds the most variants etdi keeps.
func (a *approving) variant(t *Observed, ref string, f finding.Finding, old, p *Pin, rec *Record, ap *Approval) bool {
	rec.Type, rec.Variant, ap.Variant = RecordReapprove, true, true
	for _, v := range old.All() {
		if v.Digest == p.Digest {
			rec.Replaced = strings.TrimSpace(v.Version + " " + v.Digest)
			if v.Served != p.Served {
				ap.ServedBefore = v.Served
			}
			continue
		}
		p.Variants = append(p.Variants, variantOf(&v))
	}
	if len(p.Variants)+1 > MaxVariants {
		o := a.o
		a.refused = append(a.refused, Refusal{ref, string(f.Kind), fmt.Sprintf("%s %s/%s has %d approved definitions, the most etdi keeps; "+
			"revoke one it no longer needs first (etdi pin list shows them; etdi pin revoke %s --digest DIGEST), or replace them all (etdi pin approve --replace --tool %s)",
			ItemWord(t.Item), o.Server, ref, len(p.Variants), termtext.ShellQuote(o.Server+"/"+ref), termtext.ShellQuote(ref))})
		return false
	}
	ap.Replaced, ap.Variants = rec.Replaced, len(p.Variants)+1
	return true
}

// instructions records the server's instructions with an approval that
// saw them and found nothing to accept (a first approval shows them), or
// when new or changed ones were accepted.
func (a *approving) instructions(first, changed bool, kind finding.Kind) error {
	o, info := a.o, a.info
	if !o.InstructionsKnown || !((!info.InstructionsKnown && !changed && (len(a.approved) > 0 || first)) || (changed && a.opts.AcceptInstructions)) {
		return nil
	}
	info.InstructionsKnown, info.Instructions = true, o.Instructions
	if !changed {
		return nil
	}
	sum := etdi.DigestString(strOr(o.Instructions, ""))
	_, err := appendRecord(a.tx, Record{Type: RecordReapprove, Time: a.now, Server: o.Server, Kind: string(kind),
		Digest: sum.String(), By: a.opts.By, Message: "instructions accepted"})
	return err
}

// givenScopes checks the scopes opts gives (Scopes, ScopesAll) against
// what o offers: only unsigned tools the server offers take scopes.
func givenScopes(o *Observation, opts ApproveOptions) (map[string][]string, []string, error) {
	given := map[string][]string{}
	for name, ss := range opts.Scopes {
		i := slices.IndexFunc(o.Tools, func(t Observed) bool { return t.Item == ItemTool && t.Name == name })
		if i < 0 {
			return nil, nil, fmt.Errorf("scopes are given to tool %q, which %s does not offer (etdi check lists its tools)", name, o.Server)
		}
		if t := &o.Tools[i]; t.Signer != Unsigned {
			return nil, nil, fmt.Errorf("tool %q of %s is signed by %s: its scopes are the permissions its provider signed, and cannot be given at approval", name, o.Server, t.Signer)
		}
		n, err := NormalizeScopes(ss)
		if err != nil {
			return nil, nil, fmt.Errorf("scopes of tool %q: %w", name, err)
		}
		given[name] = n
	}
	if len(opts.ScopesAll) == 0 {
		return given, nil, nil
	}
	for i := range o.Tools {
		if t := &o.Tools[i]; t.Item == ItemTool && t.Signer != Unsigned {
			return nil, nil, fmt.Errorf("server %s is signed (tool %q by %s): its tools' scopes are the permissions its provider signed, and cannot be given at approval", o.Server, t.Name, t.Signer)
		}
	}
	all, err := NormalizeScopes(opts.ScopesAll)
	if err != nil {
		return nil, nil, err
	}
	return given, all, nil
}

// rescope approves again, with scopes ss, an unsigned tool t that matches
// its pin, when its scopes differ: the pin's latest definition alone (an
// earlier variant, or a tool approved under another server's name, is
// refused: approving it under its own name first makes it the latest).
func rescope(tx *kvTx, info *ServerInfo, o *Observation, t *Observed, ss []string, by string, now time.Time) (*Approval, *Refusal, error) {
	old, err := getItem(tx, o.Server, t.Item, t.Name)
	if err != nil {
		return nil, nil, err
	}
	if old == nil || old.Digest != t.Digest.String() || old.Signer != Unsigned {
		return nil, &Refusal{t.Name, ScopesChanged, fmt.Sprintf("tool %s/%s matches an earlier approved definition (a variant) or another server's approval, "+
			"not its latest approved definition here; scopes are given to that one alone (revoke the variant, etdi pin revoke %s --digest %s, then approve it again with the scopes)",
			o.Server, t.Name, termtext.ShellQuote(o.Server+"/"+t.Name), t.Digest)}, nil
	}
	if slices.Equal(old.Scopes, ss) {
		return nil, nil, nil
	}
	p := *old
	p.Scopes, p.ApprovedBy, p.ApprovedAt = ss, by, now
	rec := Record{Type: RecordReapprove, Time: now, Server: o.Server, Tool: t.Name, Version: p.Version, Digest: p.Digest,
		Signer: &p.Signer, Kind: ScopesChanged, By: by, Permissions: p.Permissions, Scopes: ss, Served: p.Served, ServedAt: p.ServedAt, Replaced: p.Digest,
		// The variants approved beside it stay (docs/storage.md#approved-variants).
		Variant: len(p.Variants) > 0}
	if p.Binding, err = appendBound(tx, rec); err != nil {
		return nil, nil, err
	}
	if err := putPin(tx, info, &p); err != nil {
		return nil, nil, err
	}
	a := &Approval{Pin: p, Kind: ScopesChanged, Replaced: p.Digest, Variants: len(p.Variants) + 1, ScopesBefore: old.Scopes}
	a.Pin.Variants = nil
	return a, nil, nil
}

func putInfo(tx *kvTx, info *ServerInfo) error {
	v, err := json.Marshal(info)
	if err != nil {
		return err
	}
	return tx.Bucket(bServers).Put([]byte(info.Key), v)
}

func putPin(tx *kvTx, info *ServerInfo, p *Pin) error {
	if err := putInfo(tx, info); err != nil {
		return err
	}
	v, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := tx.Bucket(bPins).Put(p.key(), v); err != nil {
		return err
	}
	return indexPin(tx, p)
}
