package pin

import (
	"errors"
	"strings"
	"time"

	"github.com/etdi-dev/etdi/finding"
)

// ServedRecorded is the kind of the history record that adds what served
// an item to a pin approved without it ([Store.RecordServed]).
const ServedRecorded = "served_recorded"

// RecordServed records what serves the items of o (o.Served) in their
// pins where those were approved without it ([Comparison.Unserved]), in one
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
			p.Served, p.ServedAt, p.ApprovedBy, p.ApprovedAt = o.Served, o.ServedAt, by, now
			rec := Record{Type: RecordReapprove, Time: now, Server: o.Server, Tool: p.Tool, Item: p.Item, Version: p.Version,
				Digest: p.Digest, Signer: &p.Signer, Kind: ServedRecorded, By: by, Permissions: p.Permissions, Scopes: p.Scopes, Served: p.Served, ServedAt: p.ServedAt,
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

// approveUpdate records that what serves o now (o.Served) serves the
// server's approved definitions, in place of the earlier version of the
// same artifact (IsUpdate): for each item c found updated, the definition
// it matches; for each item not offered now, its latest definition. Each
// pin is bound to its own history record of kind server_updated, all in
// the caller's transaction.
func approveUpdate(tx *kvTx, o *Observation, c *Comparison, info *ServerInfo, by string, now time.Time) ([]Approval, error) {
	updated := map[string]bool{}
	for _, ref := range c.Updated {
		updated[ref] = true
	}
	offered := map[string]*Observed{}
	for i := range o.Tools {
		offered[ItemRef(o.Tools[i].Item, o.Tools[i].Name)] = &o.Tools[i]
	}
	var pins []Pin
	server := o.Server
	if err := forEachPin(tx, &server, func(p *Pin) error { pins = append(pins, *p); return nil }); err != nil {
		return nil, err
	}
	var out []Approval
	for i := range pins {
		old := &pins[i]
		ref := ItemRef(old.Item, old.Tool)
		var m *Pin
		if t := offered[ref]; t != nil {
			if !updated[ref] {
				continue // new, changed or refused: judged on its own
			}
			if m = updatedVariant(old, o, t); m == nil {
				continue
			}
		} else if old.Served != "" && IsUpdate(o.Server, old.Served, old.ServedAt, o.Served, o.ServedAt) {
			latest := *old
			latest.Variants = nil
			m = &latest
		} else {
			continue
		}
		p := *m
		p.Variants = nil
		p.Served, p.ServedAt, p.ApprovedBy, p.ApprovedAt = o.Served, o.ServedAt, by, now
		rec := Record{Type: RecordReapprove, Time: now, Server: o.Server, Tool: p.Tool, Item: p.Item, Version: p.Version,
			Digest: p.Digest, Signer: &p.Signer, Kind: string(finding.ServerUpdated), By: by, Permissions: p.Permissions, Scopes: p.Scopes, Served: p.Served, ServedAt: p.ServedAt,
			Replaced: strings.TrimSpace(m.Version + " " + m.Digest), Variant: len(old.Variants) > 0}
		var err error
		if p.Binding, err = appendBound(tx, rec); err != nil {
			return nil, err
		}
		if rec.Variant {
			for _, v := range old.All() {
				if v.Digest != p.Digest {
					p.Variants = append(p.Variants, variantOf(&v))
				}
			}
		}
		if err := putPin(tx, info, &p); err != nil {
			return nil, err
		}
		shown := p
		shown.Variants = nil
		out = append(out, Approval{Pin: shown, Kind: string(finding.ServerUpdated), Replaced: rec.Replaced, Variant: rec.Variant,
			Variants: len(p.Variants) + 1, ServedBefore: m.Served})
	}
	return out, nil
}
