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
			if old == nil || old.Served != "" || old.Digest != t.Digest.String() {
				continue
			}
			p := *old
			p.Served, p.ApprovedBy, p.ApprovedAt = o.Served, by, now
			rec := Record{Type: RecordReapprove, Time: now, Server: o.Server, Tool: p.Tool, Item: p.Item, Version: p.Version,
				Digest: p.Digest, Signer: &p.Signer, Kind: ServedRecorded, By: by, Permissions: p.Permissions, Served: p.Served,
				Replaced: strings.TrimSpace(old.Version + " " + old.Digest)}
			if p.Binding, err = appendBound(tx, rec); err != nil {
				return err
			}
			if err := putPin(tx, info, &p); err != nil {
				return err
			}
			out = append(out, Approval{Pin: p, Kind: ServedRecorded, Replaced: rec.Replaced})
		}
		return nil
	})
	if err != nil {
		return nil, err // rolled back: nothing was recorded
	}
	return out, nil
}
