package pin

import (
	"errors"
	"strings"
	"time"
)

// ServedRecorded is the kind of the history record that adds what served
// an item to a pin approved without it (RecordServed).
const ServedRecorded = "served_recorded"

// RecordServed records what serves the items of o (o.Served) in their
// pins where those were approved without it (Comparison.Unserved), in one
// transaction with one history record per pin: from then on another
// implementation under the same definitions is a rug pull. Only an item
// that matches its pin in every other way is upgraded; the caller asks
// the person first, since it is an approval of what runs now.
func (s *Store) RecordServed(o *Observation, by string, now time.Time) ([]Approval, error) {
	if o.Served == "" {
		return nil, errors.New("nothing to record: what serves " + o.Server + " is not known")
	}
	if now.IsZero() {
		now = time.Now().UTC()
	}
	var out []Approval
	err := s.update(func(tx *kvTx) error {
		out = nil
		c, err := compare(tx, o)
		if err != nil {
			return err
		}
		if len(c.Unserved) == 0 {
			return nil
		}
		info, err := serverInfo(tx, o.Server)
		if err != nil {
			return err
		}
		unserved := map[string]bool{}
		for _, ref := range c.Unserved {
			unserved[ref] = true
		}
		for i := range o.Tools {
			t := &o.Tools[i]
			ref := ItemRef(t.Item, t.Name)
			if !unserved[ref] || info == nil {
				continue
			}
			delete(unserved, ref)
			old, err := getItem(tx, o.Server, t.Item, t.Name)
			if err != nil {
				return err
			}
			if old == nil {
				continue
			}
			// The approved definition it matches: with variants, that
			// one is recorded again as a variant, the others stay.
			m := matchingVariant(old, o, t)
			if m == nil || m.Served != "" || m.Digest != t.Digest.String() {
				continue
			}
			p := *m
			p.Served, p.ApprovedBy, p.ApprovedAt = o.Served, by, now
			rec := Record{Type: RecordReapprove, Time: now, Server: o.Server, Tool: p.Tool, Item: p.Item, Version: p.Version,
				Digest: p.Digest, Signer: &p.Signer, Kind: ServedRecorded, By: by, Permissions: p.Permissions, Served: p.Served,
				Replaced: strings.TrimSpace(m.Version + " " + m.Digest), Variant: len(old.Variants) > 0}
			if p.Binding, err = appendBound(tx, rec); err != nil {
				return err
			}
			if rec.Variant {
				for _, v := range old.All() {
					if v.Digest != p.Digest {
						p.Variants = append(p.Variants, variantOf(&v))
					}
				}
			}
			if err := putPin(tx, info, &p); err != nil {
				return err
			}
			shown := p
			shown.Variants = nil
			out = append(out, Approval{Pin: shown, Kind: ServedRecorded, Replaced: rec.Replaced, Variant: rec.Variant, Variants: len(p.Variants) + 1})
		}
		return nil
	})
	if err != nil {
		return nil, err // rolled back: nothing was recorded
	}
	return out, nil
}
