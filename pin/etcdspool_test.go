package pin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/etcdtest"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/mod/sumdb/tlog"
)

// addRoles gives c etdi's roles on prefix as deploy/etcd/roles.sh makes
// them: etdi-client reads the store and writes spools only;
// etdi-client-g1 writes the spool of machine g1 only; etdi-approver
// writes the whole store.
func addRoles(c *etcdtest.Cluster, prefix string) {
	p := prefix + "/"
	c.Grant("etdi-client", etcdtest.Prefix(p, etcdtest.Read), etcdtest.Prefix(p+"spools/", etcdtest.ReadWrite))
	c.Grant("etdi-client-g1", etcdtest.Prefix(p, etcdtest.Read), etcdtest.Prefix(p+"spools/g1/", etcdtest.ReadWrite))
	c.Grant("etdi-approver", etcdtest.Prefix(p, etcdtest.ReadWrite))
}

func ctx5(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// spoolKeys returns the spool entries waiting under prefix.
func spoolKeys(t *testing.T, cli *clientv3.Client, prefix string) []string {
	t.Helper()
	resp, err := cli.Get(ctx5(t), prefix+"/spools/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		if k := strings.TrimPrefix(string(kv.Key), prefix+"/spools/"); strings.Contains(k, "/") {
			out = append(out, k)
		}
	}
	return out
}

func historySize(t *testing.T, s *Store) int64 {
	t.Helper()
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	tr, err := s.VerifyLog()
	if err != nil {
		t.Fatal(err)
	}
	return tr.Size
}

// The client role never writes the history: its findings and call
// records wait in its spool until an approver's transaction appends them.
// One etcd with auth serves every case.
func TestEtcdSpools(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{Auth: true})
	addRoles(c, "etdi/sp0")
	c.AddUser("alice", "approver-pw", "etdi-approver")
	c.AddUser("carol", "client-pw", "etdi-client")
	c.AddUser("gina", "gate-pw", "etdi-client-g1")
	n := 0
	store := func(t *testing.T) (string, string) {
		n++
		prefix := fmt.Sprintf("etdi/sp%d", n)
		addRoles(c, prefix)
		return prefix, c.URL(prefix)
	}

	t.Run("ClientCannotWriteHistory", func(t *testing.T) {
		prefix, loc := store(t)
		alice := openOn(t, loc, "a", "", as("alice", "approver-pw"))
		if _, _, err := alice.Approve(unsignedObs(t, "files", "read_file"), ApproveOptions{By: "alice"}); err != nil {
			t.Fatal(err)
		}
		carol := c.ClientAs(t, "carol", "client-pw")
		p := prefix + "/"
		for _, k := range []string{"log/records/" + string(u64(1)), "log/hashes/" + string(u64(1)), "log/x", "meta/logSize", "meta/schema", "meta/id", "pins/x", "revoked/x", "servers/x"} {
			if _, err := carol.Put(ctx5(t), p+k, "x"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
				t.Errorf("client put %q: %v, want permission denied", k, err)
			}
			if _, err := carol.Delete(ctx5(t), p+k); !errors.Is(err, rpctypes.ErrPermissionDenied) {
				t.Errorf("client delete %q: %v, want permission denied", k, err)
			}
		}
		if _, err := carol.Put(ctx5(t), p+"spools/c/x", "x"); err != nil {
			t.Errorf("client put its spool: %v", err)
		}
		gina := c.ClientAs(t, "gina", "gate-pw")
		if _, err := gina.Put(ctx5(t), p+"spools/g2/x", "x"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Errorf("machine g1 wrote the spool of g2: %v", err)
		}
		if _, err := gina.Put(ctx5(t), p+"spools/x", "x"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Errorf("machine g1 wrote a spool mark: %v", err)
		}
		if _, err := gina.Put(ctx5(t), p+"spools/g1/x", "x"); err != nil {
			t.Errorf("machine g1 put its spool: %v", err)
		}
	})

	t.Run("FindingsAndCallsFolded", func(t *testing.T) {
		prefix, loc := store(t)
		alice := openOn(t, loc, "a", "", as("alice", "approver-pw"))
		if _, _, err := alice.Approve(unsignedObs(t, "files", "read_file"), ApproveOptions{By: "alice"}); err != nil {
			t.Fatal(err)
		}
		before := historySize(t, alice)
		gate := openOn(t, loc, "g1", "", as("gina", "gate-pw"))
		shell := unsignedObs(t, "shell", "run_command")
		if cmp, err := gate.Check(shell, "gina"); err != nil || cmp.Recorded != 1 {
			t.Fatalf("the gate's finding: %+v %v", cmp, err)
		}
		// Spooled, not appended; a second check spools nothing more.
		if cmp, err := gate.Check(shell, "gina"); err != nil || cmp.Recorded != 0 {
			t.Fatalf("the same finding again: %+v %v", cmp, err)
		}
		calls := []Record{{Type: RecordCall, Server: "unsigned:files", Tool: "read_file", Outcome: "forwarded", Arguments: "sha256:00"}}
		if _, err := gate.AppendCalls("spool-1", 3, calls); err != nil {
			t.Fatalf("the gate's calls: %v", err)
		}
		if m, err := gate.SpoolMark("spool-1"); err != nil || m != 3 {
			t.Fatalf("mark of a spooled batch: %d %v", m, err)
		}
		root := c.Client(t)
		if got := spoolKeys(t, root, prefix); len(got) != 2 {
			t.Fatalf("spool entries %q, want 2", got)
		}
		if got := historySize(t, alice); got != before {
			t.Fatalf("a client's write reached the history: %d records, had %d", got, before)
		}
		// Any approver transaction folds them, before its own records.
		if err := alice.Revoke(Revocation{Server: "unsigned:files", Tool: "read_file", By: "alice"}); err != nil {
			t.Fatal(err)
		}
		if got := spoolKeys(t, root, prefix); len(got) != 0 {
			t.Fatalf("spool entries left: %q", got)
		}
		var types []string
		alice.Records(func(_ []byte, r *Record) error {
			if r.Index >= before {
				types = append(types, r.Type+"@"+r.Machine)
			}
			return nil
		})
		if strings.Join(types, " ") != "finding@g1 call@g1 revoke@a" {
			t.Fatalf("appended %q", types)
		}
		if m, err := alice.SpoolMark("spool-1"); err != nil || m != 3 {
			t.Fatalf("mark after the fold: %d %v", m, err)
		}
		if err := gate.EndSpool("spool-1"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := alice.Approve(unsignedObs(t, "notes", "list"), ApproveOptions{By: "alice"}); err != nil {
			t.Fatal(err)
		}
		if m, err := alice.SpoolMark("spool-1"); err != nil || m != 0 {
			t.Fatalf("mark after the end: %d %v", m, err)
		}
		// The gate reads the folded history like any machine.
		if err := gate.Refresh(); err != nil {
			t.Fatal(err)
		}
		if cmp, err := gate.Check(shell, "gina"); err != nil || cmp.Recorded != 0 {
			t.Fatalf("the folded finding again: %+v %v", cmp, err)
		}
	})

	t.Run("InvalidEntriesDropped", func(t *testing.T) {
		prefix, loc := store(t)
		alice := openOn(t, loc, "a", "", as("alice", "approver-pw"))
		if _, _, err := alice.Approve(unsignedObs(t, "files", "read_file"), ApproveOptions{By: "alice"}); err != nil {
			t.Fatal(err)
		}
		before := historySize(t, alice)
		carol := c.ClientAs(t, "carol", "client-pw")
		p := prefix + "/spools/"
		good := `{"v":1,"records":[{"time":"2026-01-01T00:00:00Z","type":"finding","server":"unsigned:x","kind":"new_tool","severity":"error","message":"m"}]}`
		bad := map[string]string{
			"c/1-garbage":   "not json",
			"c/2-approve":   `{"v":1,"records":[{"time":"2026-01-01T00:00:00Z","type":"approve","server":"unsigned:x","tool":"t","digest":"sha256:00"}]}`,
			"c/3-dup":       `{"v":1,"v":1,"records":[]}`,
			"c/4-unknown":   `{"v":1,"records":[],"pin":{}}`,
			"c/5-index":     `{"v":1,"records":[{"index":7,"time":"2026-01-01T00:00:00Z","type":"finding","severity":"error"}]}`,
			"c/6-big":       `{"v":1,"user":"` + strings.Repeat("x", MaxSpoolEntry) + `","records":[]}`,
			"c/7-machine":   `{"v":1,"records":[{"machine":"a","time":"2026-01-01T00:00:00Z","type":"finding","severity":"error"}]}`,
			"c/8-info":      `{"v":1,"records":[{"time":"2026-01-01T00:00:00Z","type":"finding","severity":"info"}]}`,
			"bad name!/x":   good,
			"c/9-permsCall": `{"v":1,"spool":"s","seq":1,"records":[{"time":"2026-01-01T00:00:00Z","type":"finding","severity":"error"}]}`,
		}
		for k, v := range bad {
			if _, err := carol.Put(ctx5(t), p+k, v); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := carol.Put(ctx5(t), p+"c/5-good", good); err != nil {
			t.Fatal(err)
		}
		// A key longer than bbolt takes, too.
		if _, err := carol.Put(ctx5(t), p+"c/"+strings.Repeat("k", 40<<10), good); err != nil {
			t.Fatal(err)
		}
		for range 3 { // at most foldPerMachine of c per transaction
			if _, _, err := alice.Approve(unsignedObs(t, fmt.Sprintf("s%d", n), "t"), ApproveOptions{By: "alice"}); err != nil {
				t.Fatalf("an approval with invalid spool entries waiting: %v", err)
			}
			n++
		}
		if got := spoolKeys(t, c.Client(t), prefix); len(got) != 0 {
			t.Fatalf("spool entries left: %q", got)
		}
		var good1 int
		var dropped []string
		alice.Records(func(_ []byte, r *Record) error {
			if r.Index < before {
				return nil
			}
			if r.Kind == "spool_dropped" {
				dropped = append(dropped, r.Message)
			}
			if r.Kind == "new_tool" && r.Server == "unsigned:x" && r.Machine == "c" {
				good1++
			}
			return nil
		})
		all := strings.Join(dropped, "\n")
		if good1 != 2 {
			t.Errorf("valid entries appended %d times, want 2", good1)
		}
		for k := range bad {
			if !strings.Contains(all, fmt.Sprintf("%q", "spools/"+k)) {
				t.Errorf("the drop of %q is not recorded:\n%s", k, all)
			}
		}
		if _, err := alice.VerifyLog(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("FloodBounded", func(t *testing.T) {
		prefix, loc := store(t)
		alice := openOn(t, loc, "a", "", as("alice", "approver-pw"))
		if _, _, err := alice.Approve(unsignedObs(t, "files", "read_file"), ApproveOptions{By: "alice"}); err != nil {
			t.Fatal(err)
		}
		// Through etdi: refused past MaxSpoolPending entries.
		carolStore := openOn(t, loc, "c", "", as("carol", "client-pw"))
		var err error
		i := 0
		for ; i <= MaxSpoolPending; i++ {
			if _, err = carolStore.AppendCalls("s", uint64(i+1), []Record{{Type: RecordCall, Server: "x", Tool: "t", Outcome: "forwarded"}}); err != nil {
				break
			}
		}
		if i != MaxSpoolPending || err == nil || !strings.Contains(err.Error(), "wait for an approver") {
			t.Fatalf("spooled %d entries, then %v", i, err)
		}
		// Around etdi: 300 more entries of machine c, and one of g1.
		carol := c.ClientAs(t, "carol", "client-pw")
		entry := `{"v":1,"records":[{"time":"2026-01-01T00:00:00Z","type":"finding","server":"unsigned:x","kind":"new_tool","severity":"error","message":"flood"}]}`
		ops := []clientv3.Op{}
		for j := range 300 {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("%s/spools/c/z%04d", prefix, j), entry))
		}
		if _, err := carol.Txn(ctx5(t)).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
		gate := openOn(t, loc, "g1", "", as("gina", "gate-pw"))
		if cmp, err := gate.Check(unsignedObs(t, "shell", "run_command"), "gina"); err != nil || cmp.Recorded != 1 {
			t.Fatalf("g1's finding: %+v %v", cmp, err)
		}
		before := historySize(t, alice)
		if _, _, err := alice.Approve(unsignedObs(t, "notes", "list"), ApproveOptions{By: "alice"}); err != nil {
			t.Fatalf("approval under a flood: %v", err)
		}
		after := historySize(t, alice)
		// foldPerMachine of c, one of g1, one drop report, the approval.
		if after-before > foldPerMachine+3 {
			t.Fatalf("one approval appended %d records", after-before)
		}
		var g1, drops int
		alice.Records(func(_ []byte, r *Record) error {
			if r.Index >= before && r.Machine == "g1" && r.Kind == string(finding.NewTool) {
				g1++
			}
			if r.Index >= before && r.Kind == "spool_dropped" && strings.Contains(r.Message, "more than 64 entries wait") {
				drops++
			}
			return nil
		})
		if g1 != 1 || drops != 1 {
			t.Fatalf("g1's finding folded %d times, drop reported %d times", g1, drops)
		}
		left := len(spoolKeys(t, c.Client(t), prefix))
		if left > MaxSpoolPending-foldPerMachine {
			t.Fatalf("%d entries left after the first fold", left)
		}
		for k := 0; left > 0 && k < 20; k++ {
			if _, _, err := alice.Approve(unsignedObs(t, fmt.Sprintf("more%d", k), "t"), ApproveOptions{By: "alice"}); err != nil {
				t.Fatal(err)
			}
			left = len(spoolKeys(t, c.Client(t), prefix))
		}
		if left != 0 {
			t.Fatalf("%d entries never folded", left)
		}
		if _, err := alice.VerifyLog(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("FreezeFailsClosedAndRepair", func(t *testing.T) {
		prefix, loc := store(t)
		alice := openOn(t, loc, "a", "", as("alice", "approver-pw"))
		o := obs("acme:weather", 1, tool(t, "get_weather", "1.0.0", weatherDef, keyA, "net"))
		if _, _, err := alice.Approve(o, ApproveOptions{By: "alice"}); err != nil {
			t.Fatal(err)
		}
		gateSnap := t.TempDir()
		gate := openOn(t, loc, "g1", gateSnap, as("gina", "gate-pw"))
		if still, err := gate.StillApproved(o); err != nil || still[StillApprovedKey("", "get_weather")] != "" {
			t.Fatalf("gate before: %v %v", still, err)
		}
		gate.Close()
		size := historySize(t, alice)

		// Someone who may write the history (an old client role, a
		// stolen approver password) appends a record without its tree
		// hashes and raises the size.
		root := c.Client(t)
		p := prefix + "/"
		rec, _ := json.Marshal(Record{Index: size, Prev: base64.StdEncoding.EncodeToString(make([]byte, 32)), Type: RecordFinding, Severity: "error"})
		if _, err := root.Txn(ctx5(t)).Then(
			clientv3.OpPut(p+"log/records/"+string(u64(uint64(size))), string(rec)),
			clientv3.OpPut(p+"meta/logSize", string(u64(uint64(size+1)))),
		).Commit(); err != nil {
			t.Fatal(err)
		}
		named := func(what string, err error) {
			t.Helper()
			var he *HistoryError
			if !errors.As(err, &he) || he.Record != size || !strings.Contains(err.Error(), fmt.Sprintf("invalid at record %d", size)) || !strings.Contains(err.Error(), "etdi audit repair") {
				t.Fatalf("%s: %v, want the history invalid at record %d", what, err, size)
			}
		}
		// The gate with its snapshot, a new machine, and the approver
		// all refuse the store, naming the record.
		_, err := Open(loc, Options{ReadOnly: true, Etcd: EtcdOptions{Username: "gina", Password: "gate-pw", SnapshotDir: gateSnap, Machine: "g1", Timeout: time.Second}})
		named("the gate", err)
		_, err = Open(loc, Options{ReadOnly: true, Etcd: EtcdOptions{Username: "gina", Password: "gate-pw", SnapshotDir: t.TempDir(), Machine: "g2", Timeout: time.Second}})
		named("a new machine", err)
		named("the approver's revocation", alice.Revoke(Revocation{Server: "acme:weather", Tool: "get_weather", By: "alice"}))
		// And stays refused: the snapshot did not take the record.
		_, err = Open(loc, Options{ReadOnly: true, Etcd: EtcdOptions{Username: "gina", Password: "gate-pw", SnapshotDir: gateSnap, Machine: "g1", Timeout: time.Second}})
		named("the gate again", err)

		// The repair of docs/etcd.md: look, then cut.
		opts := as("alice", "approver-pw")
		rep, err := RepairEtcdHistory(loc, opts, false)
		if err != nil || rep.Applied || rep.Valid != size || rep.Size != size+1 || rep.Records != 1 || !strings.Contains(rep.Problem, "tree hash") {
			t.Fatalf("repair report: %+v %v", rep, err)
		}
		if _, err := RepairEtcdHistory(loc, as("gina", "gate-pw"), true); !errors.Is(err, ErrPermission) {
			t.Fatalf("a client repaired: %v", err)
		}
		if rep, err = RepairEtcdHistory(loc, opts, true); err != nil || !rep.Applied {
			t.Fatalf("repair: %+v %v", rep, err)
		}
		if rep, err = RepairEtcdHistory(loc, opts, false); err != nil || rep.Valid != rep.Size || rep.Records != 0 {
			t.Fatalf("after the repair: %+v %v", rep, err)
		}
		if err := alice.Revoke(Revocation{Server: "acme:weather", Tool: "get_weather", By: "alice"}); err != nil {
			t.Fatalf("revocation after the repair: %v", err)
		}
		gate = openOn(t, loc, "g1", gateSnap, as("gina", "gate-pw"))
		if still, err := gate.StillApproved(o); err != nil || still[StillApprovedKey("", "get_weather")] != finding.Revoked {
			t.Fatalf("gate after the repair: %v %v", still, err)
		}
		if _, err := gate.VerifyLog(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("HeldHashRewritten", func(t *testing.T) {
		// The hashes alone rewritten, records and size untouched: a
		// machine that held them refuses the store, and so does one
		// reading it in full.
		prefix, loc := store(t)
		alice := openOn(t, loc, "a", "", as("alice", "approver-pw"))
		if _, _, err := alice.Approve(unsignedObs(t, "files", "read_file", "write_file"), ApproveOptions{By: "alice"}); err != nil {
			t.Fatal(err)
		}
		snap := t.TempDir()
		gate := openOn(t, loc, "g1", snap, as("gina", "gate-pw"))
		gate.Close()
		root := c.Client(t)
		if _, err := root.Txn(ctx5(t)).Then(
			clientv3.OpPut(prefix+"/log/hashes/"+string(u64(0)), strings.Repeat("h", 32)),
			clientv3.OpPut(prefix+"/meta/logSize", string(u64(uint64(historySize(t, alice))))),
		).Commit(); err != nil {
			t.Fatal(err)
		}
		_, err := Open(loc, Options{ReadOnly: true, Etcd: EtcdOptions{Username: "gina", Password: "gate-pw", SnapshotDir: snap, Machine: "g1", Timeout: time.Second}})
		var hr *historyRewritten
		if !errors.As(err, &hr) || !strings.Contains(err.Error(), "log/hashes") {
			t.Fatalf("a held hash rewritten: %v", err)
		}
		_, err = Open(loc, Options{ReadOnly: true, Etcd: EtcdOptions{Username: "gina", Password: "gate-pw", SnapshotDir: t.TempDir(), Machine: "g2", Timeout: time.Second}})
		var he *HistoryError
		if !errors.As(err, &he) || he.Record != 0 {
			t.Fatalf("a rewritten hash read in full: %v", err)
		}
	})

	t.Run("RewrittenHashesRefused", func(t *testing.T) {
		// A rewrite of the tree hashes alone, the records untouched:
		// caught by a machine catching up and by one reading all.
		prefix, loc := store(t)
		alice := openOn(t, loc, "a", "", as("alice", "approver-pw"))
		if _, _, err := alice.Approve(unsignedObs(t, "files", "read_file", "write_file"), ApproveOptions{By: "alice"}); err != nil {
			t.Fatal(err)
		}
		snap := t.TempDir()
		openOn(t, loc, "g1", snap, as("gina", "gate-pw")).Close()
		size := historySize(t, alice)
		root := c.Client(t)
		// Append a genuine-looking record whose hash is wrong.
		rec, _ := json.Marshal(Record{Index: size, Type: RecordFinding, Severity: "error"})
		var prev tlog.Hash
		alice.view(func(tx *kvTx) error {
			prev, _ = tlog.TreeHash(size, bucketHashes{tx.Bucket(bLog).Bucket(bHashes)})
			return nil
		})
		var r Record
		json.Unmarshal(rec, &r)
		r.Prev = base64.StdEncoding.EncodeToString(prev[:])
		rec, _ = json.Marshal(r)
		p := prefix + "/"
		ops := []clientv3.Op{
			clientv3.OpPut(p+"log/records/"+string(u64(uint64(size))), string(rec)),
			clientv3.OpPut(p+"meta/logSize", string(u64(uint64(size+1)))),
		}
		for k := tlog.StoredHashIndex(0, size); k < tlog.StoredHashCount(size+1); k++ {
			ops = append(ops, clientv3.OpPut(p+"log/hashes/"+string(u64(uint64(k))), strings.Repeat("h", 32)))
		}
		if _, err := root.Txn(ctx5(t)).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
		for _, dir := range []string{snap, t.TempDir()} {
			_, err := Open(loc, Options{ReadOnly: true, Etcd: EtcdOptions{Username: "gina", Password: "gate-pw", SnapshotDir: dir, Machine: "g1", Timeout: time.Second}})
			var he *HistoryError
			if !errors.As(err, &he) || he.Record != size || !strings.Contains(he.Msg, "does not match") {
				t.Fatalf("hashes rewritten: %v", err)
			}
		}
	})
}
