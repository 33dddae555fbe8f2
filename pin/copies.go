package pin

import bolt "go.etcd.io/bbolt"

// copyCache answers, once per server, whether the observation is a copy
// of another server's approvals: every tool it offers is approved there
// with the same version, digest and signer (the other server may offer
// more). Only then is a tool approved there "the same server under another
// name" (SPEC.md §15); a server that copies an approved tool and adds one
// of its own, or changes another, shadows it.
type copyCache struct {
	tx   *bolt.Tx
	o    *Observation
	seen map[string]bool
}

func newCopyCache(tx *bolt.Tx, o *Observation) *copyCache {
	return &copyCache{tx: tx, o: o, seen: map[string]bool{}}
}

func (c *copyCache) wholeCopyOf(server string) (bool, error) {
	if v, ok := c.seen[server]; ok {
		return v, nil
	}
	same := true
	for i := range c.o.Tools {
		t := &c.o.Tools[i]
		p, err := getPin(c.tx, server, t.Name)
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
