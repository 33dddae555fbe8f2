package pin

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/verify"
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
	// another variant (SPEC.md §14.1).
	Replace bool
}

// Approval is one tool Approve pinned.
type Approval struct {
	Pin      Pin    `json:"pin"`
	Kind     string `json:"kind"` // the finding it resolved, e.g. "new_tool"
	Replaced string `json:"replaced,omitempty"`
	// Variant says the definition was approved beside the ones approved
	// before, which stay approved; Variants is how many definitions of
	// the item are approved now (SPEC.md §14.1).
	Variant  bool `json:"variant,omitempty"`
	Variants int  `json:"variants,omitempty"`
	// ServedBefore is what served the tool at its previous approval, when
	// that differs from what serves it now (Pin.Served).
	ServedBefore string `json:"servedBefore,omitempty"`
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
// until the commit, so this bounds the memory of approving (SPEC.md §17).
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
	var approved []Approval
	var refused []Refusal
	err := s.update(func(tx *kvTx) error {
		approved, refused = nil, nil
		c, err := compare(tx, o)
		if err != nil {
			return err
		}
		instructionsChanged, instructionsKind := false, verify.InstructionsChanged
		update := false
		for _, f := range c.Findings {
			if f.Kind == verify.ServerUpdated {
				// Approved with the server as a whole, never by naming
				// tools; the trust policy may block it.
				switch {
				case !f.AsksApproval():
					refused = append(refused, Refusal{"", string(f.Kind), f.Message})
				case len(named) == 0 || opts.Update:
					update = true
				}
				continue
			}
			if f.Kind.AboutInstructions() {
				instructionsChanged, instructionsKind = true, f.Kind
				if !opts.AcceptInstructions {
					refused = append(refused, Refusal{"", string(f.Kind), f.Message + " (accept them with --accept-instructions)"})
				}
				continue
			}
			if f.Tool == "" && f.Severity == verify.Error {
				return errors.New(f.Message + "; not approving anything")
			}
		}
		byTool := map[string]verify.Finding{} // by ItemRef
		for _, f := range c.Findings {
			if f.Severity == verify.Error && f.Tool != "" {
				if _, seen := byTool[ItemRef(f.Item, f.Tool)]; !seen {
					byTool[ItemRef(f.Item, f.Tool)] = f
				}
			}
		}
		info, err := serverInfo(tx, o.Server)
		if err != nil {
			return err
		}
		// first: the server has no record of its own yet. Its items may
		// all be approved already under another name for the same artifact
		// (SPEC §14.2): its approval is still its first, and shows its
		// instructions.
		first := info == nil
		if first {
			info = &ServerInfo{Key: o.Server, Provider: o.Provider, Name: o.Name}
		}
		done := map[string]bool{}
		size := 0
		for i := range o.Tools {
			t := &o.Tools[i]
			ref := ItemRef(t.Item, t.Name)
			f, needs := byTool[ref]
			if !needs || (len(named) > 0 && !named[ref]) || done[ref] || (opts.Update && len(named) == 0) {
				continue
			}
			done[ref] = true
			if size += len(t.Canonical); size > MaxApprovalBytes {
				return fmt.Errorf("server %s asks for more than %d MiB of tool definitions to be approved at once; "+
					"etdi approves at most that in one transaction (approve fewer tools at a time with --tool)", o.Server, MaxApprovalBytes>>20)
			}
			switch {
			case f.Kind.Approval() == verify.Approvable:
			case f.Kind.Approval() == verify.ApprovableByName && named[ref]:
			case f.Kind.Approval() == verify.ApprovableByName:
				refused = append(refused, Refusal{ref, string(f.Kind), f.Message + " (name it with --tool to approve it anyway)"})
				continue
			default:
				refused = append(refused, Refusal{ref, string(f.Kind), f.Message})
				continue
			}
			old, err := getItem(tx, o.Server, t.Item, t.Name)
			if err != nil {
				return err
			}
			// The definition is shared with o, not copied: a listing may
			// hold 64 MiB of them.
			p := Pin{Server: o.Server, Item: t.Item, Tool: t.Name, Version: t.Version, Digest: t.Digest.String(), Signer: t.Signer,
				Provider: o.Provider, Permissions: t.Permissions, Definition: json.RawMessage(t.Canonical),
				ApprovedBy: opts.By, ApprovedAt: now, Sequence: o.Sequence, Served: o.Served}
			if p.Permissions == nil {
				p.Permissions = []etdi.Permission{}
			}
			rec := Record{Type: RecordApprove, Time: now, Server: o.Server, Tool: t.Name, Item: t.Item, Version: t.Version, Digest: p.Digest,
				Signer: &p.Signer, Kind: string(f.Kind), By: opts.By, Permissions: p.Permissions, Served: p.Served}
			a := Approval{Pin: p, Kind: string(f.Kind), Variants: 1}
			if old != nil && f.Kind == verify.RugPull && !opts.Replace {
				// Another variant: beside the approved definitions, in
				// place of the one of the same digest (whose permissions
				// or server changed).
				rec.Type, rec.Variant, a.Variant = RecordReapprove, true, true
				for _, v := range old.All() {
					if v.Digest == p.Digest {
						rec.Replaced = strings.TrimSpace(v.Version + " " + v.Digest)
						if v.Served != p.Served {
							a.ServedBefore = v.Served
						}
						continue
					}
					p.Variants = append(p.Variants, variantOf(&v))
				}
				if len(p.Variants)+1 > MaxVariants {
					refused = append(refused, Refusal{ref, string(f.Kind), fmt.Sprintf("%s %s/%s has %d approved definitions, the most etdi keeps; "+
						"revoke one it no longer needs first (etdi pin list shows them; etdi pin revoke %s --digest DIGEST), or replace them all (etdi pin approve --replace --tool %s)",
						ItemWord(t.Item), o.Server, ref, len(p.Variants), termtext.ShellQuote(o.Server+"/"+ref), termtext.ShellQuote(ref))})
					continue
				}
				a.Replaced, a.Variants = rec.Replaced, len(p.Variants)+1
			} else if old != nil {
				rec.Type = RecordReapprove
				rec.Replaced = strings.TrimSpace(old.Version + " " + old.Digest)
				for _, v := range old.Variants {
					rec.Replaced += ", " + strings.TrimSpace(v.Version+" "+v.Digest)
				}
				a.Replaced = rec.Replaced
				if old.Served != p.Served {
					a.ServedBefore = old.Served
				}
			}
			if p.Binding, err = appendBound(tx, rec); err != nil {
				return err
			}
			if err := putPin(tx, info, &p); err != nil {
				return err
			}
			a.Pin = p
			a.Pin.Variants = nil // the approval, not what it kept
			approved = append(approved, a)
		}
		if update && !first {
			ups, err := approveUpdate(tx, o, c, info, opts.By, now)
			if err != nil {
				return err
			}
			approved = append(approved, ups...)
		}
		if len(approved) > 0 && o.Sequence > info.MaxSequence {
			info.MaxSequence = o.Sequence
		}
		// Record the instructions with an approval that saw them and found
		// nothing to accept (a first approval shows them), or when new or
		// changed ones were accepted.
		if o.InstructionsKnown && ((!info.InstructionsKnown && !instructionsChanged && (len(approved) > 0 || first)) || (instructionsChanged && opts.AcceptInstructions)) {
			info.InstructionsKnown, info.Instructions = true, o.Instructions
			if instructionsChanged {
				sum := etdi.DigestString(strOr(o.Instructions, ""))
				if _, err := appendRecord(tx, Record{Type: RecordReapprove, Time: now, Server: o.Server, Kind: string(instructionsKind),
					Digest: sum.String(), By: opts.By, Message: "instructions accepted"}); err != nil {
					return err
				}
			}
		}
		return putInfo(tx, info)
	})
	if err != nil {
		return nil, nil, err // the transaction was rolled back: nothing was approved
	}
	return approved, refused, nil
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
