package pin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/internal/etcdtest"
	"github.com/etdi-dev/etdi/verify"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/mod/sumdb/tlog"
)

// redRoles starts an etcd with auth and etdi's two roles on prefix
// (as deploy/etcd/roles.sh makes them): carol is a client, alice an
// approver.
func redRoles(t *testing.T, prefix string) (*etcdtest.Cluster, string) {
	c := etcdtest.Start(t, etcdtest.Options{Auth: true})
	p := prefix + "/"
	c.AddRole("etdi-client", etcdtest.Prefix(p, etcdtest.Read), etcdtest.Prefix(p+"log/", etcdtest.ReadWrite),
		etcdtest.Key(p+"meta/logSize", etcdtest.ReadWrite), etcdtest.Prefix(p+"spools/", etcdtest.ReadWrite))
	c.AddRole("etdi-approver", etcdtest.Prefix(p, etcdtest.ReadWrite))
	c.AddUser("carol", "client-pw", "etdi-client")
	c.AddUser("alice", "approver-pw", "etdi-approver")
	c.AddUser("bob", "client-pw2", "etdi-client")
	return c, c.URL(prefix)
}

func as(user, pw string) Options { return Options{Etcd: EtcdOptions{Username: user, Password: pw}} }

// A client-role machine writes one key under PREFIX/log/ longer than
// bbolt's 32 KiB key limit. etcd takes it; every other machine's catch-up
// then fails in apply, and OpenEtcd treats that like etcd being out of
// reach: it opens on the stale snapshot without an error. A revocation
// the approver commits afterwards is not seen by bob (a gate machine),
// and nothing tells the caller except Offline().
func TestRedClientKeyFreezesRevocation(t *testing.T) {
	c, loc := redRoles(t, "etdi/red1")
	alice := openOn(t, loc, "a", "", as("alice", "approver-pw"))
	o := obs("acme:weather", 1, tool(t, "get_weather", "1.0.0", weatherDef, keyA, "net"))
	if _, _, err := alice.Approve(o, ApproveOptions{By: "alice"}); err != nil {
		t.Fatal(err)
	}
	bobSnap := t.TempDir()
	bob := openOn(t, loc, "b", bobSnap, as("bob", "client-pw2"))
	if still, err := bob.StillApproved(o); err != nil || still[StillApprovedKey("", "get_weather")] != "" {
		t.Fatalf("bob before: %v %v", still, err)
	}
	bob.Close()

	carol := c.ClientAs(t, "carol", "client-pw")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := carol.Put(ctx, "etdi/red1/log/records/"+strings.Repeat("x", 40<<10), "x"); err != nil {
		t.Fatalf("the client role could not write under log/: %v", err)
	}

	if err := alice.Revoke(Revocation{Server: "acme:weather", Tool: "get_weather", By: "alice"}); err != nil {
		t.Fatal(err)
	}
	// bob's next decision: etcd is up and answers; the store must either
	// show the revocation or refuse to open. It does neither.
	s, err := Open(loc, Options{ReadOnly: true, Etcd: EtcdOptions{Username: "bob", Password: "client-pw2", SnapshotDir: bobSnap, Machine: "b", Timeout: time.Second}})
	if err != nil {
		t.Logf("open failed closed: %v", err)
		return
	}
	defer s.Close()
	still, err := s.StillApproved(o)
	if err == nil && still[StillApprovedKey("", "get_weather")] != verify.Revoked {
		t.Fatalf("etcd reachable, revocation committed, but bob's store opened (offline=%v) and still approves get_weather: %v", s.Offline(), still)
	}
}

// A client-role machine can write the history's keys, so etcd lets it
// delete the last record (another machine's finding) with its tree hashes
// and lower meta/logSize. Every machine whose snapshot held the record
// refuses the store from then on; a new machine cannot tell without a
// checkpoint (SPEC §29.5).
func TestRedClientTruncatesHistory(t *testing.T) {
	c, loc := redRoles(t, "etdi/red2")
	alice := openOn(t, loc, "a", "", as("alice", "approver-pw"))
	if _, _, err := alice.Approve(unsignedObs(t, "files", "read_file"), ApproveOptions{By: "alice"}); err != nil {
		t.Fatal(err)
	}
	var before int64
	if err := alice.Refresh(); err != nil {
		t.Fatal(err)
	}
	bob := openOn(t, loc, "b", "", as("bob", "client-pw2"))
	if cmp, err := bob.Check(unsignedObs(t, "shell", "run_command"), "bob"); err != nil || cmp.Recorded != 1 {
		t.Fatalf("bob's finding: %+v %v", cmp, err)
	}
	tr, err := bob.VerifyLog()
	if err != nil {
		t.Fatal(err)
	}
	before = tr.Size
	m := before - 1 // drop bob's finding

	carol := c.ClientAs(t, "carol", "client-pw")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	root := "etdi/red2/"
	_, err = carol.Txn(ctx).Then(
		clientv3.OpDelete(root+"log/records/"+string(u64(uint64(m))), clientv3.WithRange(root+"log/records0")),
		clientv3.OpDelete(root+"log/hashes/"+string(u64(uint64(tlog.StoredHashIndex(0, m)))), clientv3.WithRange(root+"log/hashes0")),
		clientv3.OpPut(root+"meta/logSize", string(u64(uint64(m)))),
	).Commit()
	if err != nil {
		t.Fatalf("the client role could not rewrite the history: %v", err)
	}
	// Every machine that had seen the record refuses the store: bob's
	// and alice's snapshots hold it.
	for _, s := range []*Store{bob, alice} {
		err := s.Refresh()
		var hr *historyRewritten
		if !errors.As(err, &hr) {
			t.Fatalf("%s after record %d was deleted: %v", s.remote.opts.Machine, m, err)
		}
	}
	// A machine that never saw it cannot tell from the history alone,
	// as with a file whose tail is cut: a checkpoint signed before does.
	auditor := openOn(t, loc, "x", "", as("alice", "approver-pw"))
	if after, err := auditor.VerifyLog(); err != nil || after.Size != m {
		t.Fatalf("a new machine: %v %v", after, err)
	}
}
