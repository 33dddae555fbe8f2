package pin

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// history returns the records of s of type typ.
func recordsOf(t *testing.T, s *Store, typ string) []Record {
	t.Helper()
	var out []Record
	if err := s.Records(func(_ []byte, r *Record) error {
		if r.Type == typ {
			out = append(out, *r)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRevokedFindingSaysWhyWhoAndTheWayBack: the revoked finding names
// when and by whom, the reason quoted (what hides text escaped), and the
// exact command that lifts the revocation.
func TestRevokedFindingSaysWhyWhoAndTheWayBack(t *testing.T) {
	s := openTemp(t)
	srv := UnsignedServerKey("notes")
	add := tool(t, "add_note", "", `{"name":"add_note"}`, Unsigned)
	mustApprove(t, s, obs(srv, 0, add))
	if err := s.Revoke(Revocation{Server: srv, Tool: "add_note", By: "alice", Reason: "leaks notes\n[fake] line"}); err != nil {
		t.Fatal(err)
	}
	c := expect(t, s, obs(srv, 0, add), "revoked")
	msg := c.Findings[0].Message
	for _, want := range []string{" by alice", "(reason: leaks notes\n[fake] line)", "; an approver lifts the revocation with: etdi pin unrevoke unsigned:notes/add_note"} {
		if !strings.Contains(msg, want) {
			t.Errorf("finding %q lacks %q", msg, want)
		}
	}
	// A reason edited outside etdi (here beyond the bound, as well) is
	// refused: who, when and why are those of the history record.
	s = edit(t, s, func(tx *bolt.Tx) {
		k := []byte(srv + "/add_note")
		var r Revocation
		json.Unmarshal(tx.Bucket(bRevoked).Get(k), &r)
		r.Reason = strings.Repeat("y", 10*MaxReasonLen)
		v, _ := json.Marshal(r)
		tx.Bucket(bRevoked).Put(k, v)
	})
	refused(t, s, obs(srv, 0, add), "author, time or reason differ")
}

// TestUnrevokeLiftsARevocation: unrevoke removes the revocation, records
// who lifted it and why, and leaves the approval as it was; the history
// still justifies every pin and revocation.
func TestUnrevokeLiftsARevocation(t *testing.T) {
	srv := "acme:weather"
	v1 := tool(t, "get_weather", "1.0.0", weatherDef, keyA)
	for _, tc := range []struct {
		name string
		r    Revocation
	}{
		{"tool", Revocation{Server: srv, Tool: "get_weather"}},
		{"version", Revocation{Server: srv, Tool: "get_weather", Version: "1.0.0"}},
		{"key", Revocation{KeyID: "sha256:" + strings.Repeat("ab", 32)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			o := obs(srv, 1, v1)
			if tc.r.KeyID != "" {
				o = obs(srv, 1, tool(t, "get_weather", "1.0.0", weatherDef, SignerID{Kind: "key", ID: tc.r.KeyID}))
			}
			mustApprove(t, s, o)
			r := tc.r
			r.By, r.Reason = "sec", "advisory 7"
			if err := s.Revoke(r); err != nil {
				t.Fatal(err)
			}
			expect(t, s, o, "revoked")
			u := tc.r
			u.By, u.Reason = "lead", "advisory withdrawn"
			if err := s.Unrevoke(u); err != nil {
				t.Fatal(err)
			}
			expect(t, s, o)
			recs := recordsOf(t, s, RecordUnrevoke)
			if len(recs) != 1 || recs[0].By != "lead" || recs[0].Message != "advisory withdrawn" || recs[0].Tool != tc.r.Tool ||
				recs[0].Version != tc.r.Version || recs[0].KeyID != tc.r.KeyID {
				t.Fatalf("unrevoke records %+v", recs)
			}
			if d, err := auditPins(t, s); err != nil || len(d) != 0 {
				t.Fatalf("audit after unrevoke: %v %v", d, err)
			}
			if revs, err := s.Revocations(); err != nil || len(revs) != 0 {
				t.Fatalf("revocations left: %v %v", revs, err)
			}
			// Lifted once: a second time there is nothing to lift.
			if err := s.Unrevoke(u); err == nil || !strings.Contains(err.Error(), "is not revoked") {
				t.Fatalf("second unrevoke: %v", err)
			}
			// Revoked again after being lifted: blocked again.
			if err := s.Revoke(r); err != nil {
				t.Fatal(err)
			}
			expect(t, s, o, "revoked")
			if d, err := auditPins(t, s); err != nil || len(d) != 0 {
				t.Fatalf("audit after revoking again: %v %v", d, err)
			}
		})
	}
}

// TestUnrevokeDigestNeedsApprovalAgain: a definition revoked on its own
// left its pin; lifting the revocation does not approve it again.
func TestUnrevokeDigestNeedsApprovalAgain(t *testing.T) {
	s := openTemp(t)
	srv := UnsignedServerKey("time")
	a := tool(t, "now", "", `{"name":"now","description":"a"}`, Unsigned)
	b := tool(t, "now", "", `{"name":"now","description":"b"}`, Unsigned)
	mustApprove(t, s, obs(srv, 0, a))
	mustApprove(t, s, obs(srv, 0, b), "now")
	expect(t, s, obs(srv, 0, a))
	if err := s.Revoke(Revocation{Server: srv, Item: ItemTool, Tool: "now", Digest: a.Digest.String(), By: "sec"}); err != nil {
		t.Fatal(err)
	}
	c := expect(t, s, obs(srv, 0, a), "revoked")
	if !strings.Contains(c.Findings[0].Message, "etdi pin unrevoke unsigned:time/now --digest "+a.Digest.String()) {
		t.Errorf("finding %q", c.Findings[0].Message)
	}
	if err := s.Unrevoke(Revocation{Server: srv, Item: ItemTool, Tool: "now", Digest: a.Digest.String(), By: "lead"}); err != nil {
		t.Fatal(err)
	}
	expect(t, s, obs(srv, 0, a), "rug_pull")
	expect(t, s, obs(srv, 0, b))
	if d, err := auditPins(t, s); err != nil || len(d) != 0 {
		t.Fatalf("audit: %v %v", d, err)
	}
}

// TestUnrevokeRefusals: who is required, reasons are bounded, and a
// revocation the history does not justify is not lifted.
func TestUnrevokeRefusals(t *testing.T) {
	srv := "acme:weather"
	v1 := tool(t, "get_weather", "1.0.0", weatherDef, keyA)
	s := openTemp(t)
	mustApprove(t, s, obs(srv, 1, v1))
	long := strings.Repeat("x", MaxReasonLen+1)
	if err := s.Revoke(Revocation{Server: srv, Tool: "get_weather", By: "sec", Reason: long}); err == nil {
		t.Fatal("a reason beyond the bound was recorded")
	}
	if err := s.Revoke(Revocation{Server: srv, Tool: "get_weather", By: "sec", Reason: "bad\xffutf8"}); err == nil {
		t.Fatal("a reason of invalid UTF-8 was recorded")
	}
	if err := s.Revoke(Revocation{Server: srv, Tool: "get_weather", By: "sec", Reason: strings.Repeat("x", MaxReasonLen)}); err != nil {
		t.Fatal(err)
	}
	ref := Revocation{Server: srv, Tool: "get_weather"}
	for _, u := range []Revocation{
		{Server: srv, Tool: "get_weather", Reason: "no one"},
		{Server: srv, Tool: "get_weather", By: "lead", Reason: long},
	} {
		if err := s.Unrevoke(u); err == nil {
			t.Fatalf("unrevoke %+v accepted", u)
		}
	}
	expect(t, s, obs(srv, 1, v1), "revoked")
	if len(recordsOf(t, s, RecordUnrevoke)) != 0 {
		t.Fatal("a refused unrevoke was recorded")
	}
	// A revocation edited outside etdi (unbound) is not lifted: the
	// database is refused as it is by check.
	key := ref.key()
	s = edit(t, s, func(tx *bolt.Tx) {
		var r Revocation
		json.Unmarshal(tx.Bucket(bRevoked).Get(key), &r)
		r.Binding = Binding{}
		v, _ := json.Marshal(r)
		tx.Bucket(bRevoked).Put(key, v)
	})
	var ue *UnjustifiedError
	if err := s.Unrevoke(Revocation{Server: srv, Tool: "get_weather", By: "lead"}); !errors.As(err, &ue) {
		t.Fatalf("unrevoke of an unbound revocation: %v", err)
	}
}

// TestUnrevokeRefusesAnEditedKeyRevocation: a key revocation (about no
// server) whose who was edited outside etdi is not lifted, and check
// refuses it: the author shown must be the history's.
func TestUnrevokeRefusesAnEditedKeyRevocation(t *testing.T) {
	s := openTemp(t)
	id := "sha256:" + strings.Repeat("ef", 32)
	o := obs("acme:weather", 1, tool(t, "get_weather", "1.0.0", weatherDef, SignerID{Kind: "key", ID: id}))
	mustApprove(t, s, o)
	if err := s.Revoke(Revocation{KeyID: id, By: "sec", Reason: "leaked"}); err != nil {
		t.Fatal(err)
	}
	key := []byte("key:" + id)
	s = edit(t, s, func(tx *bolt.Tx) {
		var r Revocation
		json.Unmarshal(tx.Bucket(bRevoked).Get(key), &r)
		r.By = "the-ciso"
		v, _ := json.Marshal(r)
		tx.Bucket(bRevoked).Put(key, v)
	})
	refused(t, s, o, "author, time or reason differ")
	var ue *UnjustifiedError
	if err := s.Unrevoke(Revocation{KeyID: id, By: "lead"}); !errors.As(err, &ue) {
		t.Fatalf("unrevoke of an edited key revocation: %v", err)
	}
	if len(recordsOf(t, s, RecordUnrevoke)) != 0 {
		t.Fatal("a refused unrevoke was recorded")
	}
}

// TestUnrevokedRevocationRestoredIsRefused: after a revocation is lifted,
// putting its old value back (a rollback by someone who can write the
// database) is refused by check and named by audit, never a silent
// revocation; deleting a revocation without lifting it stays refused.
func TestUnrevokedRevocationRestoredIsRefused(t *testing.T) {
	srv := "acme:weather"
	v1 := tool(t, "get_weather", "1.0.0", weatherDef, keyA)
	s := openTemp(t)
	mustApprove(t, s, obs(srv, 1, v1))
	if err := s.Revoke(Revocation{Server: srv, Tool: "get_weather", By: "sec"}); err != nil {
		t.Fatal(err)
	}
	key := []byte(srv + "/get_weather")
	var old []byte
	s = edit(t, s, func(tx *bolt.Tx) { old = slices.Clone(tx.Bucket(bRevoked).Get(key)) })
	if err := s.Unrevoke(Revocation{Server: srv, Tool: "get_weather", By: "lead"}); err != nil {
		t.Fatal(err)
	}
	expect(t, s, obs(srv, 1, v1))
	s = edit(t, s, func(tx *bolt.Tx) { tx.Bucket(bRevoked).Put(key, old) })
	refused(t, s, obs(srv, 1, v1), "history holds no record of it")
	d, err := auditPins(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(d, func(d Disagreement) bool { return d.What == "revocation" && d.Ref == string(key) }) {
		t.Fatalf("audit does not name the restored revocation: %v", d)
	}
}

// TestUnrevokeRefusesARolledBackRevocation: a revocation value put back
// to an earlier revocation of the same tool (bound to its own, older
// record) is refused when lifted: the latest record must be the one.
func TestUnrevokeRefusesARolledBackRevocation(t *testing.T) {
	srv := "acme:weather"
	v1 := tool(t, "get_weather", "1.0.0", weatherDef, keyA)
	s := openTemp(t)
	mustApprove(t, s, obs(srv, 1, v1))
	if err := s.Revoke(Revocation{Server: srv, Tool: "get_weather", By: "sec", Reason: "first"}); err != nil {
		t.Fatal(err)
	}
	key := []byte(srv + "/get_weather")
	var first []byte
	s = edit(t, s, func(tx *bolt.Tx) { first = slices.Clone(tx.Bucket(bRevoked).Get(key)) })
	if err := s.Unrevoke(Revocation{Server: srv, Tool: "get_weather", By: "lead"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Revoke(Revocation{Server: srv, Tool: "get_weather", By: "sec", Reason: "second"}); err != nil {
		t.Fatal(err)
	}
	s = edit(t, s, func(tx *bolt.Tx) { tx.Bucket(bRevoked).Put(key, first) })
	var ue *UnjustifiedError
	if err := s.Unrevoke(Revocation{Server: srv, Tool: "get_weather", By: "lead"}); !errors.As(err, &ue) {
		t.Fatalf("unrevoke of a rolled-back revocation: %v", err)
	}
}

// TestStillApprovedFailsClosedOnAnEditedRevocation: the gate's recheck
// reads revocations without replaying the history; a damaged, unbound or
// misplaced revocation value is an error there, never "still approved".
func TestStillApprovedFailsClosedOnAnEditedRevocation(t *testing.T) {
	srv := "acme:weather"
	v1 := tool(t, "get_weather", "1.0.0", weatherDef, keyA)
	key := []byte(srv + "/get_weather")
	for _, tc := range []struct {
		name string
		fn   func(tx *bolt.Tx)
	}{
		{"damaged", func(tx *bolt.Tx) { tx.Bucket(bRevoked).Put(key, []byte("{garbage")) }},
		{"unbound", func(tx *bolt.Tx) {
			var r Revocation
			json.Unmarshal(tx.Bucket(bRevoked).Get(key), &r)
			r.Binding = Binding{}
			v, _ := json.Marshal(r)
			tx.Bucket(bRevoked).Put(key, v)
		}},
		{"moved from another tool", func(tx *bolt.Tx) {
			v := slices.Clone(tx.Bucket(bRevoked).Get([]byte(srv + "/get_forecast")))
			tx.Bucket(bRevoked).Put(key, v)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			f := tool(t, "get_forecast", "1.0.0", `{"name":"get_forecast"}`, keyA)
			mustApprove(t, s, obs(srv, 1, v1, f))
			if err := s.Revoke(Revocation{Server: srv, Tool: "get_weather", By: "sec"}); err != nil {
				t.Fatal(err)
			}
			if err := s.Revoke(Revocation{Server: srv, Tool: "get_forecast", By: "sec"}); err != nil {
				t.Fatal(err)
			}
			s = edit(t, s, tc.fn)
			if still, err := s.StillApproved(obs(srv, 1, v1)); err == nil {
				t.Fatalf("StillApproved read an edited revocation: %v", still)
			}
		})
	}
}
