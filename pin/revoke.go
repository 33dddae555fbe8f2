package pin

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
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

// revokedBy returns the revocation that applies to tool t on server, or
// nil. A damaged or unjustified revocation is an error, never absent.
func revokedBy(tx *kvTx, server string, t *Observed) (*Revocation, error) {
	rb := tx.Bucket(bRevoked)
	keys := []string{server + "/" + t.Name}
	if t.Version != "" {
		keys = append(keys, server+"/"+t.Name+"@"+t.Version)
	}
	if id := SignerKeyID(t.Signer); id != "" {
		keys = append(keys, "key:"+id)
	}
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
// A tool or version revocation needs an existing pin.
func (s *Store) Revoke(r Revocation) error {
	if r.At.IsZero() {
		r.At = time.Now().UTC()
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
