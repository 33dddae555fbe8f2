package pin

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// autoSign makes every write of s sign a checkpoint into a file of its
// own; the warnings are collected.
func autoSign(t *testing.T, s *Store) (*AutoCheckpoint, *[]error) {
	signer, verifier := auditKeys(t)
	var warned []error
	a := &AutoCheckpoint{Signer: signer, Verifier: verifier, Path: filepath.Join(t.TempDir(), "audit.checkpoint"),
		Warn: func(err error) { warned = append(warned, err) }}
	s.SignEachWrite(a)
	return a, &warned
}

func readAuto(t *testing.T, a *AutoCheckpoint) *Checkpoint {
	t.Helper()
	msg, err := os.ReadFile(a.Path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := OpenCheckpoint(msg, a.Verifier)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Each write that grows the history signs a checkpoint of it; one that
// appends nothing signs nothing new.
func TestAutoCheckpointEachWrite(t *testing.T) {
	s := openTestStore(t, Options{})
	a, warned := autoSign(t, s)
	fillServer(t, s, "acme:one", 2)
	tree, err := s.VerifyLog()
	if err != nil {
		t.Fatal(err)
	}
	if c := readAuto(t, a); c.Size != tree.Size || c.Hash != tree.Hash {
		t.Fatalf("checkpoint of %d records, history of %d", c.Size, tree.Size)
	}
	o := unsignedObs(t, "shell", "run_command")
	if _, err := s.Check(o, "x"); err != nil {
		t.Fatal(err)
	}
	if c := readAuto(t, a); c.Size != tree.Size+1 {
		t.Fatalf("a recorded finding: checkpoint of %d records, want %d", c.Size, tree.Size+1)
	}
	before, _ := os.ReadFile(a.Path)
	if cmp, err := s.Check(o, "x"); err != nil || cmp.Recorded != 0 {
		t.Fatal(cmp, err)
	}
	if err := s.Revoke(Revocation{Server: "acme:one", Tool: "tool_aa", By: "x"}); err != nil {
		t.Fatal(err)
	}
	if c := readAuto(t, a); c.Size != tree.Size+2 {
		t.Fatalf("after a revocation: %d", c.Size)
	}
	if after, _ := os.ReadFile(a.Path); string(after) == string(before) {
		t.Fatal("the revocation signed nothing")
	}
	if len(*warned) != 0 {
		t.Fatal(*warned)
	}
}

// A history rewritten (records and every hash recomputed) after the last
// signed checkpoint is never signed: the next write warns, naming it, and
// the checkpoint stays the one signed before.
func TestAutoCheckpointRefusesRewrite(t *testing.T) {
	fileOnly(t)
	s := openTemp(t)
	a, warned := autoSign(t, s)
	fillServer(t, s, "acme:one", 4)
	signed := readAuto(t, a)
	s = edit(t, s, func(tx *bolt.Tx) {
		lb := tx.Bucket(bLog)
		var recs []Record
		lb.Bucket(bRecords).ForEach(func(k, v []byte) error {
			var r Record
			json.Unmarshal(v, &r)
			recs = append(recs, r)
			return nil
		})
		lb.DeleteBucket(bRecords)
		lb.DeleteBucket(bHashes)
		lb.CreateBucket(bRecords)
		lb.CreateBucket(bHashes)
		tx.Bucket(bMeta).Put(kLogSize, u64(0))
		for i, r := range recs {
			if i == 1 {
				r.By = "mallory"
			}
			if _, err := appendRecord(&kvTx{btx: tx}, r); err != nil {
				t.Fatal(err)
			}
		}
	})
	s.SignEachWrite(a)
	if _, err := s.Check(unsignedObs(t, "shell", "run_command"), "x"); err != nil {
		t.Fatal(err)
	}
	if len(*warned) != 1 || !errors.Is((*warned)[0], ErrCheckpointNotExtended) || !strings.Contains((*warned)[0].Error(), "rewritten") {
		t.Fatalf("warnings: %v", *warned)
	}
	if c := readAuto(t, a); c.Size != signed.Size || c.Hash != signed.Hash {
		t.Fatalf("a rewritten history was signed: %d records", c.Size)
	}
	// A cut history too.
	s = edit(t, s, func(tx *bolt.Tx) { tx.Bucket(bMeta).Put(kLogSize, u64(2)) })
	s.SignEachWrite(a)
	*warned = nil
	fillServer(t, s, "acme:two", 1)
	if len(*warned) != 1 || !errors.Is((*warned)[0], ErrCheckpointNotExtended) {
		t.Fatalf("warnings after a cut: %v", *warned)
	}
}

// A first checkpoint is signed only over a history that verifies; a key
// that is configured but cannot be opened warns at every write.
func TestAutoCheckpointFirstAndMissingKey(t *testing.T) {
	fileOnly(t)
	s := openTemp(t)
	fillServer(t, s, "acme:one", 1)
	if cmp, err := s.Check(unsignedObs(t, "shell", "run_command"), "tester"); err != nil || cmp.Recorded != 1 {
		t.Fatal(cmp, err)
	}
	s.Close()
	tamper(t, s.Path(), func(records, hashes *bolt.Bucket) {
		v := records.Get(u64(1)) // the finding
		records.Put(u64(1), []byte(strings.Replace(string(v), `"by":"tester"`, `"by":"mallory"`, 1)))
	})
	s2, err := Open(s.Path(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	a, warned := autoSign(t, s2)
	fillServer(t, s2, "acme:two", 1)
	if _, err := os.Stat(a.Path); !errors.Is(err, os.ErrNotExist) || len(*warned) != 1 {
		t.Fatalf("first checkpoint over an edited history: %v %v", err, *warned)
	}
	var le *LogError
	if !errors.As((*warned)[0], &le) {
		t.Fatalf("warning: %v", (*warned)[0])
	}
	s3 := openTemp(t)
	var got []error
	s3.SignEachWrite(&AutoCheckpoint{Missing: errors.New("ETDI_AUDIT_PASSWORD is not set"), Path: filepath.Join(t.TempDir(), "c"), Warn: func(err error) { got = append(got, err) }})
	fillServer(t, s3, "acme:one", 1)
	if len(got) != 1 || !strings.Contains(got[0].Error(), "ETDI_AUDIT_PASSWORD") {
		t.Fatalf("missing key: %v", got)
	}
}
