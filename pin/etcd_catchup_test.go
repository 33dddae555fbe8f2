package pin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/mod/sumdb/tlog"
)

// Records written around etdi that a machine catching up must refuse,
// naming the record: one whose prev is right but whose tree hashes are
// missing, and one beyond the history's size.
func TestEtcdCatchUpRefusesRecords(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	for _, tc := range []struct {
		name, want string
		hashes     bool  // store the record's tree hashes
		raise      bool  // raise the size over it
		index      int64 // the index the record holds, beyond its place
		badPrev    bool  // its prev is not the tree before it
	}{
		{"hashes missing", "is missing", false, true, 0, false},
		{"beyond the size", "lies beyond", true, false, 0, false},
		{"another index", "holds index", true, true, 5, false},
		{"prev of another tree", "prev is not the tree hash", true, true, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := "etdi/cu-" + strings.ReplaceAll(tc.name, " ", "-")
			loc := c.URL(prefix)
			alice := openOn(t, loc, "a", "", Options{})
			if _, _, err := alice.Approve(unsignedObs(t, "files", "read_file"), ApproveOptions{By: "alice"}); err != nil {
				t.Fatal(err)
			}
			snap := t.TempDir()
			openOn(t, loc, "b", snap, Options{}).Close()
			size := historySize(t, alice)
			var prev tlog.Hash
			var hs []tlog.Hash
			rec := Record{Index: size + tc.index, Type: RecordFinding, Severity: "error", Message: "around etdi"}
			alice.view(func(tx *kvTx) error {
				hr := bucketHashes{tx.Bucket(bLog).Bucket(bHashes)}
				prev, _ = tlog.TreeHash(size, hr)
				rec.Prev = base64.StdEncoding.EncodeToString(prev[:])
				if tc.badPrev {
					rec.Prev = base64.StdEncoding.EncodeToString(make([]byte, 32))
				}
				data, _ := json.Marshal(rec)
				hs, _ = tlog.StoredHashes(size, data, hr)
				return nil
			})
			data, _ := json.Marshal(rec)
			p := prefix + "/"
			ops := []clientv3.Op{clientv3.OpPut(p+"log/records/"+string(u64(uint64(size))), string(data))}
			if tc.hashes {
				for k, h := range hs {
					ops = append(ops, clientv3.OpPut(p+"log/hashes/"+string(u64(uint64(tlog.StoredHashIndex(0, size)+int64(k)))), string(h[:])))
				}
			}
			newSize := size
			if tc.raise {
				newSize++
			}
			ops = append(ops, clientv3.OpPut(p+"meta/logSize", string(u64(uint64(newSize)))))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := c.Client(t).Txn(ctx).Then(ops...).Commit(); err != nil {
				t.Fatal(err)
			}
			_, err := Open(loc, Options{Etcd: EtcdOptions{SnapshotDir: snap, Machine: "b", Timeout: time.Second}})
			var he *HistoryError
			if !errors.As(err, &he) || he.Record != size || !strings.Contains(he.Msg, tc.want) {
				t.Fatalf("%s: %v", tc.name, err)
			}
		})
	}
}

// A history cut short and compacted: a machine that held the longer one
// reads the store in full and refuses the shorter history.
func TestEtcdCutThenCompacted(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	loc := c.URL("etdi/cutc")
	alice := openOn(t, loc, "a", "", Options{})
	for _, srv := range []string{"files", "shell"} {
		if _, _, err := alice.Approve(unsignedObs(t, srv, "tool_of_"+srv), ApproveOptions{By: "alice"}); err != nil {
			t.Fatal(err)
		}
	}
	snap := t.TempDir()
	openOn(t, loc, "b", snap, Options{}).Close()
	size := historySize(t, alice)
	p := "etdi/cutc/"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cli := c.Client(t)
	resp, err := cli.Txn(ctx).Then(
		clientv3.OpDelete(p+"log/records/"+string(u64(uint64(size-1)))),
		clientv3.OpDelete(p+"log/hashes/"+string(u64(uint64(tlog.StoredHashIndex(0, size-1)))), clientv3.WithRange(p+"log/hashes0")),
		clientv3.OpPut(p+"meta/logSize", string(u64(uint64(size-1)))),
	).Commit()
	if err != nil {
		t.Fatal(err)
	}
	// A later write outside the buckets, so that the cut itself is
	// compacted away.
	later, err := cli.Put(ctx, p+"elsewhere", "x")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp
	if _, err := cli.Compact(ctx, later.Header.Revision); err != nil {
		t.Fatal(err)
	}
	_, err = Open(loc, Options{Etcd: EtcdOptions{SnapshotDir: snap, Machine: "b", Timeout: time.Second}})
	var hr *historyRewritten
	if !errors.As(err, &hr) || !strings.Contains(err.Error(), "size went from") {
		t.Fatalf("a cut history read in full: %v", err)
	}
}

// A batch of call records whose spool is appended past its sequence
// number (sent again after a gate was killed) is not appended twice.
func TestEtcdFoldSkipsAppendedCalls(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	loc := c.URL("etdi/marks")
	alice := openOn(t, loc, "a", "", Options{})
	cli := c.Client(t)
	calls := 0
	for i, seq := range []int{3, 2, 3, 4} {
		entry := `{"v":1,"spool":"s1","seq":` + string(rune('0'+seq)) + `,"records":[{"time":"2026-01-01T00:00:00Z","type":"call","server":"x","tool":"t","outcome":"forwarded"}]}`
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := cli.Put(ctx, "etdi/marks/spools/g/"+string(rune('a'+i)), entry); err != nil {
			t.Fatal(err)
		}
		cancel()
		if _, _, err := alice.Approve(unsignedObs(t, "srv"+string(rune('a'+i)), "tool_"+string(rune('a'+i))), ApproveOptions{By: "alice"}); err != nil {
			t.Fatal(err)
		}
	}
	alice.Records(func(_ []byte, r *Record) error {
		if r.Type == RecordCall {
			calls++
		}
		return nil
	})
	if calls != 2 {
		t.Fatalf("%d call records appended, want 2 (seq 3 and 4)", calls)
	}
	if m, err := alice.SpoolMark("s1"); err != nil || m != 4 {
		t.Fatalf("mark %d %v", m, err)
	}
}
