package pin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/termtext"
)

// SignerKeyID returns the provider key id in a signer, or "": the ID of
// kind "key", the first field of kind "key+idp".
func SignerKeyID(s SignerID) string {
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
// variants and is refused from then on (docs/storage.md#approved-variants).
func (s *Store) Revoke(r Revocation) error {
	if err := checkReason(r.Reason); err != nil {
		return err
	}
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

// MaxReasonLen bounds the reason of a revocation or of lifting one, in
// bytes: it is shown with every finding of what was revoked.
const MaxReasonLen = 1024

func checkReason(reason string) error {
	if len(reason) > MaxReasonLen {
		return fmt.Errorf("the reason is %d bytes long; at most %d are kept", len(reason), MaxReasonLen)
	}
	if !utf8.ValidString(reason) {
		return errors.New("the reason is not valid UTF-8")
	}
	return nil
}

// revocationRef is how etdi pin revoke and etdi pin unrevoke name r:
// SERVER/TOOL[@VERSION], SERVER/ITEM (with r.Digest), or "" for a key.
func revocationRef(r *Revocation) string {
	switch {
	case r.KeyID != "":
		return ""
	case r.Digest != "":
		return r.Server + "/" + ItemRef(r.Item, r.Tool)
	case r.Version != "":
		return r.Server + "/" + r.Tool + "@" + r.Version
	}
	return r.Server + "/" + r.Tool
}

// UnrevokeCommand is the command that lifts r, for a person to paste.
func UnrevokeCommand(r *Revocation) string {
	switch {
	case r.KeyID != "":
		return "etdi pin unrevoke --key " + r.KeyID
	case r.Digest != "":
		return "etdi pin unrevoke " + termtext.ShellQuote(revocationRef(r)) + " --digest " + r.Digest
	}
	return "etdi pin unrevoke " + termtext.ShellQuote(revocationRef(r))
}

// revokedText says of a revocation when, by whom and why it was made
// and how it is lifted, after what it revoked: the text of the revoked
// finding (docs/storage.md#pin-database). The reason, bounded when it was recorded, is
// clipped again here (a database may hold any); like every name in a
// finding it is escaped where it is shown.
func revokedText(r *Revocation) string {
	s := fmt.Sprintf(" was revoked on %s by %s", r.At.Format(time.RFC3339), r.By)
	if r.Reason != "" {
		reason := r.Reason
		if len(reason) > MaxReasonLen {
			reason = strings.ToValidUTF8(reason[:MaxReasonLen], "") + "..."
		}
		s += fmt.Sprintf(" (reason: %s)", reason)
	}
	return s + "; an approver lifts the revocation with: " + UnrevokeCommand(r)
}

// Unrevoke lifts the revocation r names (by its server, tool, version,
// item and digest, or its key id) in one transaction with an unrevoke
// record of the history that says who lifted it (r.By) and why
// (r.Reason). What the revocation blocked is approved again as it was
// approved before: the pins were kept. A definition revoked on its own
// (r.Digest) had left its pin, so it needs approval again. Lifting a
// revocation the history does not justify is refused (docs/storage.md#one-artifact-under-several-configuration-names).
func (s *Store) Unrevoke(r Revocation) error {
	if r.By == "" {
		return errors.New("lifting a revocation records who lifts it: give who")
	}
	if err := checkReason(r.Reason); err != nil {
		return err
	}
	if r.At.IsZero() {
		r.At = time.Now().UTC()
	}
	if r.Digest != "" {
		d, err := etdi.ParseDigest(r.Digest)
		if err != nil {
			return fmt.Errorf("digest %q: want sha256:<64 hex digits>", r.Digest)
		}
		r.Digest = d.String()
	} else {
		r.Item = ""
	}
	return s.update(func(tx *kvTx) error {
		v := tx.Bucket(bRevoked).Get(r.key())
		if v == nil {
			return fmt.Errorf("%s is not revoked (etdi pin list shows what is)", r.Target())
		}
		var old Revocation
		if err := json.Unmarshal(v, &old); err != nil {
			return damagedError("revocation", r.key(), err)
		}
		if string(old.key()) != string(r.key()) {
			return &UnjustifiedError{"revocation", string(r.key()), old.Record, fmt.Sprintf("the value is the revocation of %q", old.key())}
		}
		if err := checkRevocation(tx, &old); err != nil {
			return err
		}
		if old.Server != "" {
			if err := checkLatest(tx, old.Server); err != nil {
				return err
			}
		}
		if _, err := appendBound(tx, Record{Type: RecordUnrevoke, Time: r.At, Server: old.Server, Item: old.Item, Tool: old.Tool,
			Version: old.Version, KeyID: old.KeyID, Digest: old.Digest, Message: r.Reason, By: r.By}); err != nil {
			return err
		}
		return tx.Bucket(bRevoked).Delete(r.key())
	})
}
