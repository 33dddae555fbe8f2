package pin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/termtext"
)

// SignerKeyID returns the provider key id in a signer, or "": the ID of
// kind "key", the first field of kind "key+idp".
func SignerKeyID(s Signer) string {
	switch s.Kind {
	case "key":
		return s.ID
	case "key+idp":
		id, _, _ := strings.Cut(s.ID, " ")
		return id
	}
	return ""
}

// revokedBy returns the revocation that applies to item t on server, or
// nil: of the tool, its version or signing key, or of the approved
// definition t has (its digest). A damaged or unjustified revocation is
// an error, never absent.
func revokedBy(tx *kvTx, server string, t *Observed) (*Revocation, error) {
	rb := tx.Bucket(bRevoked)
	var keys []string
	if t.Item == ItemTool {
		keys = append(keys, server+"/"+t.Name)
		if t.Version != "" {
			keys = append(keys, server+"/"+t.Name+"@"+t.Version)
		}
		if id := SignerKeyID(t.Signer); id != "" {
			keys = append(keys, "key:"+id)
		}
	}
	digest := Revocation{Server: server, Item: t.Item, Tool: t.Name, Digest: t.Digest.String()}
	keys = append(keys, string(digest.key()))
	for _, k := range keys {
		if v := rb.Get([]byte(k)); v != nil {
			var r Revocation
			if err := json.Unmarshal(v, &r); err != nil {
				return nil, damagedError("revocation", []byte(k), err)
			}
			if string(r.key()) != k {
				return nil, &UnjustifiedError{"revocation", k, r.Record, fmt.Sprintf("the value is the revocation of %q", r.key())}
			}
			if err := checkRevocation(tx, &r); err != nil {
				return nil, err
			}
			return &r, nil
		}
	}
	return nil, nil
}

// Revoke records a revocation and its history record in one transaction.
// A tool or version revocation needs an existing pin. A revocation of
// one approved definition (Digest) needs a pin with another one beside
// it, which stays approved: the definition revoked leaves the pin's
// variants and is refused from then on (SPEC.md §14.1).
func (s *Store) Revoke(r Revocation) error {
	if r.At.IsZero() {
		r.At = time.Now().UTC()
	}
	if r.Digest != "" {
		return s.revokeVariant(r)
	}
	if r.Item != "" {
		return fmt.Errorf("only a tool, a version of a tool or one approved definition (a digest) can be revoked, not %s", ItemRef(r.Item, r.Tool))
	}
	return s.update(func(tx *kvTx) error {
		if r.KeyID == "" {
			// Revoking is always safe: an unjustified pin can be revoked.
			if tx.Bucket(bPins).Get(pinKey(r.Server, r.Tool)) == nil {
				return fmt.Errorf("no pin %s/%s to revoke", r.Server, r.Tool)
			}
		} else if _, err := etdi.ParseDigest(r.KeyID); err != nil {
			return fmt.Errorf("key id %q: want sha256:<64 hex digits>", r.KeyID)
		}
		var err error
		r.Binding, err = appendBound(tx, Record{Type: RecordRevoke, Time: r.At, Server: r.Server, Tool: r.Tool,
			Version: r.Version, KeyID: r.KeyID, Message: r.Reason, By: r.By})
		if err != nil {
			return err
		}
		v, err := json.Marshal(r)
		if err != nil {
			return err
		}
		return tx.Bucket(bRevoked).Put(r.key(), v)
	})
}

// Revocations returns every revocation.
func (s *Store) Revocations() ([]Revocation, error) {
	var out []Revocation
	err := s.view(func(tx *kvTx) error {
		return tx.Bucket(bRevoked).ForEach(func(_, v []byte) error {
			var r Revocation
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			out = append(out, r)
			return nil
		})
	})
	return out, err
}

// revokeVariant revokes one approved definition of an item and removes
// it from the item's pin, in one transaction with its history record.
func (s *Store) revokeVariant(r Revocation) error {
	if r.KeyID != "" || r.Version != "" {
		return errors.New("a revocation of one approved definition (--digest) names no key and no version")
	}
	d, err := etdi.ParseDigest(r.Digest)
	if err != nil {
		return fmt.Errorf("digest %q: want sha256:<64 hex digits>", r.Digest)
	}
	r.Digest = d.String()
	ref := r.Server + "/" + ItemRef(r.Item, r.Tool)
	return s.update(func(tx *kvTx) error {
		p, err := getItem(tx, r.Server, r.Item, r.Tool)
		if err != nil {
			return err
		}
		if p == nil {
			return fmt.Errorf("no pin %s to revoke", ref)
		}
		// Every variant against the history, as a comparison reads them.
		if err := checkLatest(tx, r.Server); err != nil {
			return err
		}
		var keep []Pin
		for _, v := range p.All() {
			if v.Digest != r.Digest {
				keep = append(keep, v)
			}
		}
		switch {
		case len(keep) == len(p.Variants)+1:
			return fmt.Errorf("%s has no approved definition %s (approved: %s)", ref, r.Digest, digestsOf(p))
		case len(keep) == 0:
			return fmt.Errorf("%s %s is the only approved definition of %s: revoke the whole item instead (etdi pin revoke %s)",
				ItemWord(r.Item), r.Digest, ref, termtext.ShellQuote(ref))
		}
		r.Binding, err = appendBound(tx, Record{Type: RecordRevoke, Time: r.At, Server: r.Server, Item: r.Item, Tool: r.Tool,
			Digest: r.Digest, Message: r.Reason, By: r.By})
		if err != nil {
			return err
		}
		np := keep[len(keep)-1]
		np.Variants = variantsOf(keep[:len(keep)-1])
		v, err := json.Marshal(np)
		if err != nil {
			return err
		}
		if err := tx.Bucket(bPins).Put(np.key(), v); err != nil {
			return err
		}
		v, err = json.Marshal(r)
		if err != nil {
			return err
		}
		return tx.Bucket(bRevoked).Put(r.key(), v)
	})
}
