package pin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/mod/sumdb/tlog"
)

// redRoles starts an etcd with auth and etdi's two roles on prefix
// (as deploy/etcd/roles.sh makes them): carol is a client, alice an
// approver.
func redRoles(t *testing.T, prefix string) (*etcdtest.Cluster, string) {
	c := etcdtest.Start(t, etcdtest.Options{Auth: true})
	addRoles(c, prefix)
	c.AddUser("carol", "client-pw", "etdi-client")
	c.AddUser("alice", "approver-pw", "etdi-approver")
	c.AddUser("bob", "client-pw2", "etdi-client")
	return c, c.URL(prefix)
}

func as(user, pw string) Options { return Options{Etcd: EtcdOptions{Username: user, Password: pw}} }

// A client-role machine writes one key under PREFIX/spools/ (all it may
// write) longer than bbolt's 32 KiB key limit. No machine's snapshot
// takes it, none fails on it, and a revocation the approver commits
// afterwards reaches bob, a gate machine.
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
	if _, err := carol.Put(ctx, "etdi/red1/log/records/"+strings.Repeat("x", 40<<10), "x"); err == nil {
		t.Fatal("the client role wrote under log/")
	}
	for _, k := range []string{"spools/" + strings.Repeat("x", 40<<10), "spools/c/" + strings.Repeat("x", 40<<10)} {
		if _, err := carol.Put(ctx, "etdi/red1/"+k, "x"); err != nil {
			t.Fatalf("the client role could not write under spools/: %v", err)
		}
	}
	if err := alice.Revoke(Revocation{Server: "acme:weather", Tool: "get_weather", By: "alice"}); err != nil {
		t.Fatal(err)
	}
	s, err := Open(loc, Options{ReadOnly: true, Etcd: EtcdOptions{Username: "bob", Password: "client-pw2", SnapshotDir: bobSnap, Machine: "b", Timeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Offline() != nil {
		t.Fatalf("etcd answers, yet the store opened offline: %v", s.Offline())
	}
	still, err := s.StillApproved(o)
	if err != nil || still[StillApprovedKey("", "get_weather")] != finding.Revoked {
		t.Fatalf("the revocation did not reach bob: %v %v", still, err)
	}
}

// Someone who may write the history (the approver role, root) deletes
// the last record with its tree hashes and lowers meta/logSize. Every
// machine whose snapshot held the record refuses the store from then on;
// a new machine cannot tell without a checkpoint (docs/fleets.md#roles). The client
// role cannot even try.
func TestRedClientTruncatesHistory(t *testing.T) {
	c, loc := redRoles(t, "etdi/red2")
	alice := openOn(t, loc, "a", "", as("alice", "approver-pw"))
	for _, srv := range []string{"files", "shell"} {
		if _, _, err := alice.Approve(unsignedObs(t, srv, "read_file"), ApproveOptions{By: "alice"}); err != nil {
			t.Fatal(err)
		}
	}
	bob := openOn(t, loc, "b", "", as("bob", "client-pw2"))
	tr, err := bob.VerifyLog()
	if err != nil {
		t.Fatal(err)
	}
	m := tr.Size - 1 // drop the last approval
	root := "etdi/red2/"
	cut := func(cli *clientv3.Client) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := cli.Txn(ctx).Then(
			clientv3.OpDelete(root+"log/records/"+string(u64(uint64(m))), clientv3.WithRange(root+"log/records0")),
			clientv3.OpDelete(root+"log/hashes/"+string(u64(uint64(tlog.StoredHashIndex(0, m)))), clientv3.WithRange(root+"log/hashes0")),
			clientv3.OpPut(root+"meta/logSize", string(u64(uint64(m)))),
		).Commit()
		return err
	}
	if err := cut(c.ClientAs(t, "carol", "client-pw")); err == nil {
		t.Fatal("the client role cut the history")
	}
	if err := cut(c.ClientAs(t, "alice", "approver-pw")); err != nil {
		t.Fatal(err)
	}
	// Every machine that had seen the record refuses the store.
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
