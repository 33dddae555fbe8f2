package pin

import (
	"encoding/json"
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestLaunchApproval(t *testing.T) {
	s := openTemp(t)
	if ok, err := s.LaunchApproved("d1"); ok || err != nil {
		t.Fatalf("an empty database approves a launch: %v %v", ok, err)
	}
	l := Launch{Digest: "d1", Server: "unsigned:weather", File: "/repo/.mcp.json", Entry: "weather", By: "alice"}
	if err := s.ApproveLaunch(l); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.LaunchApproved("d1"); !ok || err != nil {
		t.Fatalf("approved launch: %v %v", ok, err)
	}
	if ok, _ := s.LaunchApproved("d2"); ok {
		t.Fatal("another launch is approved")
	}
	size := logSizeOf(t, s)
	if err := s.ApproveLaunch(l); err != nil || logSizeOf(t, s) != size {
		t.Fatalf("approving again wrote a record: %v", err)
	}

	// A local attacker copies the approval to another digest, or writes one
	// with no record: refused, never a yes.
	for _, forge := range []func(v []byte) (string, []byte){
		func(v []byte) (string, []byte) { return "d-evil", v },
		func(v []byte) (string, []byte) {
			var f Launch
			json.Unmarshal(v, &f)
			f.Digest, f.Binding = "d-new", Binding{}
			b, _ := json.Marshal(f)
			return "d-new", b
		},
	} {
		var key string
		err := s.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bLaunches)
			k, v := forge(append([]byte(nil), b.Get([]byte("d1"))...))
			key = k
			return b.Put([]byte(k), v)
		})
		if err != nil {
			t.Fatal(err)
		}
		ok, err := s.LaunchApproved(key)
		var ue *UnjustifiedError
		if ok || !errors.As(err, &ue) {
			t.Fatalf("forged launch approval %s: %v %v", key, ok, err)
		}
	}
	// A damaged value is damaged, not absent.
	s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bLaunches).Put([]byte("d1"), []byte("{")) })
	if ok, err := s.LaunchApproved("d1"); ok || err == nil {
		t.Fatalf("damaged launch approval: %v %v", ok, err)
	}
}

func logSizeOf(t *testing.T, s *Store) int64 {
	var n int64
	s.db.View(func(tx *bolt.Tx) error { n = logSize(&kvTx{btx: tx}); return nil })
	return n
}
