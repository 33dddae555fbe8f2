package pin

import (
	"errors"
	"os"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// The checkpoint beside the store is trusted only under the audit key: one
// signed by another key is never replaced by a new signature, and a
// history rewritten at the checkpoint's own size is not signed either.
func TestAutoCheckpointOtherKeyAndSameSize(t *testing.T) {
	fileOnly(t)
	s := openTemp(t)
	a, warned := autoSign(t, s)
	fillServer(t, s, "acme:one", 2)
	mallory, _ := auditKeys(t)
	forged, _, err := s.SignCheckpoint(mallory)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.Path, forged, 0o644); err != nil {
		t.Fatal(err)
	}
	fillServer(t, s, "acme:two", 1)
	if len(*warned) != 1 || !strings.Contains((*warned)[0].Error(), "the last signed checkpoint") {
		t.Fatalf("a checkpoint of another key: %v", *warned)
	}
	if got, _ := os.ReadFile(a.Path); string(got) != string(forged) {
		t.Fatal("a checkpoint of another key was replaced by a new signature")
	}
	os.Remove(a.Path)
	*warned = nil
	fillServer(t, s, "acme:three", 1)
	signed := readAuto(t, a)
	s = edit(t, s, func(tx *bolt.Tx) {
		hashes := tx.Bucket(bLog).Bucket(bHashes)
		var keys [][]byte
		hashes.ForEach(func(k, _ []byte) error { keys = append(keys, append([]byte(nil), k...)); return nil })
		for _, k := range keys {
			hashes.Put(k, make([]byte, 32))
		}
	})
	s.SignEachWrite(a)
	if err := s.signAfterWrite(); !errors.Is(err, ErrCheckpointNotExtended) {
		t.Fatalf("rewritten at the same size: %v", err)
	}
	if c := readAuto(t, a); c.Hash != signed.Hash {
		t.Fatal("re-signed")
	}
}
