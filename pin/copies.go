package pin

import (
	"bytes"
	"errors"
	"strings"
)

// copyCache answers, once per server, whether the observation is a copy
// of another server's approvals: every tool it offers is approved there
// with the same version, digest and signer (the other server may offer
// more). Only then is a tool approved there "the same server under another
// name" (SPEC.md §15); a server that copies an approved tool and adds one
// of its own, or changes another, shadows it.
type copyCache struct {
	tx   *kvTx
	o    *Observation
	seen map[string]bool
	pins *pinScan
	// share is what sharedApproval checked during the comparison.
	share shareCache
}

func newCopyCache(tx *kvTx, o *Observation) *copyCache {
	return &copyCache{tx: tx, o: o, seen: map[string]bool{}}
}

func (c *copyCache) wholeCopyOf(server string) (bool, error) {
	if v, ok := c.seen[server]; ok {
		return v, nil
	}
	same := true
	for i := range c.o.Tools {
		t := &c.o.Tools[i]
		p, err := getItem(c.tx, server, t.Item, t.Name)
		if err != nil {
			return false, err
		}
		if p == nil || p.Digest != t.Digest.String() || p.Signer != t.Signer || p.Version != t.Version {
			same = false
			break
		}
	}
	c.seen[server] = same
	return same, nil
}

// pinScan is the names and look-alike skeletons of every pin, read from
// the pins bucket itself. Shadowing and look-alike checks of a tool never
// approved on this server consult it, not the names and skeletons
// indexes: those are derived data a local attacker could edit without
// touching a pin, and a deleted index entry must not turn impersonation
// into a new tool. It is built at most once per comparison, and only when
// a tool is new, so checking an approved server costs nothing extra.
type pinScan struct {
	servers   map[string][]string // tool name -> servers that pin it
	skeletons map[string][]string // skeleton -> distinct pinned names
}

func (c *copyCache) scan() (*pinScan, error) {
	if c.pins != nil {
		return c.pins, nil
	}
	ps := &pinScan{servers: map[string][]string{}, skeletons: map[string][]string{}}
	cur := c.tx.Bucket(bPins).Cursor()
	for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			return nil, damagedError("pin key", k, errors.New("no server/tool separator"))
		}
		server, name := string(k[:i]), string(k[i+1:])
		if strings.HasPrefix(name, "\x01") {
			continue // a prompt, resource or resource template: not a tool name
		}
		if _, seen := ps.servers[name]; !seen {
			sk := skeletonOf(name)
			ps.skeletons[sk] = append(ps.skeletons[sk], name)
		}
		ps.servers[name] = append(ps.servers[name], server)
	}
	c.pins = ps
	return ps, nil
}
