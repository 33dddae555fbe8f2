package pin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/etdi-dev/etdi/internal/etcdtest"
	bolt "go.etcd.io/bbolt"
)

// testEtcd is the etcd endpoint the suite runs against ($ETDI_TEST_ETCD),
// empty to run it against bbolt files.
var testEtcd = os.Getenv("ETDI_TEST_ETCD")

var prefixes atomic.Int64

// openTestStore opens an empty store: a file, or a new prefix of the
// test etcd with a snapshot of its own.
func openTestStore(t testing.TB, opts Options) *Store {
	t.Helper()
	loc := filepath.Join(t.TempDir(), "pins.db")
	if testEtcd != "" {
		loc = fmt.Sprintf("etcd://%s/t%d/%d", testEtcd, os.Getpid(), prefixes.Add(1))
		opts.Etcd.SnapshotDir = t.TempDir()
	}
	s, err := Open(loc, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fileOnly skips a test of the bbolt file itself when the suite runs
// against etcd.
func fileOnly(t testing.TB) {
	if testEtcd != "" {
		t.Skip("a test of the bbolt file")
	}
}

// TestSuiteOnEtcd runs this package's tests again with their stores in
// an etcd (one member, embedded), as child processes of the test binary:
// the tests are dealt to suiteShards children that run side by side, each
// on prefixes of its own (openTestStore names them by process).
func TestSuiteOnEtcd(t *testing.T) {
	if testEtcd != "" {
		t.Skip("already on etcd")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	ep := etcdtest.Start(t, etcdtest.Options{}).Endpoint(0)
	const skip = "^TestSuiteOnEtcd$|^TestEtcd|^TestParseEtcd$"
	listed, err := exec.Command(os.Args[0], "-test.list", "^Test", "-test.skip", skip).Output()
	if err != nil {
		t.Fatalf("listing the tests: %v", err)
	}
	skipRE := regexp.MustCompile(skip)
	shards := make([][]string, suiteShards)
	n := 0
	for _, name := range strings.Fields(string(listed)) {
		if !strings.HasPrefix(name, "Test") || skipRE.MatchString(name) {
			continue
		}
		shards[n%suiteShards] = append(shards[n%suiteShards], name)
		n++
	}
	if n < 100 {
		t.Fatalf("only %d tests listed to run on etcd:\n%s", n, listed)
	}
	var wg sync.WaitGroup
	outs := make([][]byte, suiteShards)
	errs := make([]error, suiteShards)
	for i, names := range shards {
		args := []string{"-test.run", "^(" + strings.Join(names, "|") + ")$", "-test.skip", skip}
		if testing.Verbose() {
			args = append(args, "-test.v")
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "ETDI_TEST_ETCD="+ep)
		wg.Go(func() { outs[i], errs[i] = cmd.CombinedOutput() })
	}
	wg.Wait()
	for i := range shards {
		if errs[i] != nil {
			t.Errorf("the suite on etcd failed (%d of its tests): %v\n%s", len(shards[i]), errs[i], outs[i])
			continue
		}
		t.Logf("%d tests: %s", len(shards[i]), lastLines(outs[i], 3))
	}
}

// suiteShards is how many child processes run the suite on etcd.
const suiteShards = 2

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// editEtcd is edit for a store in etcd: fn runs on a copy of the
// snapshot, and what it changed is written to etcd directly, as someone
// with write access to etcd would, outside any etdi transaction. The
// store is then opened by a machine without a snapshot, which reads the
// prefix as it now is.
func editEtcd(t *testing.T, s *Store, fn func(tx *bolt.Tx)) *Store {
	t.Helper()
	e := s.remote
	loc, snap, opts := s.path, s.db.Path(), Options{Etcd: e.opts}
	s.Close()
	db, err := bolt.Open(snap, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := dumpBuckets(t, db)
	if err := db.Update(func(tx *bolt.Tx) error { fn(tx); return nil }); err != nil {
		t.Fatal(err)
	}
	after := dumpBuckets(t, db)
	db.Close()
	ctx := context.Background()
	for k, v := range after {
		if !bytes.Equal(before[k], v) {
			if _, err := e.cli.Put(ctx, e.root+k, string(v)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			if _, err := e.cli.Delete(ctx, e.root+k); err != nil {
				t.Fatal(err)
			}
		}
	}
	opts.Etcd.SnapshotDir = t.TempDir()
	s, err = Open(loc, opts)
	var he *HistoryError
	if errors.As(err, &he) {
		// Stronger than what the test checks next: on etcd the store
		// does not open at all, naming the record (docs/fleets.md#snapshots-and-etcd-out-of-reach).
		t.Skipf("an etcd store with this history fails closed at open: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// dumpBuckets returns every key of the schema's buckets of a snapshot as
// "<bucket path>/<key>".
func dumpBuckets(t *testing.T, db *bolt.DB) map[string][]byte {
	out := map[string][]byte{}
	err := db.View(func(tx *bolt.Tx) error {
		for _, p := range etcdBuckets {
			b := bucketAt(tx, p)
			if b == nil {
				continue
			}
			b.ForEach(func(k, v []byte) error {
				if v != nil {
					out[p+"/"+string(k)] = bytes.Clone(v)
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
