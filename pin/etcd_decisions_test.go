package pin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A password goes only to loopback endpoints without TLS. The refusal is
// etdi's own, before any client exists (the endpoints below are never
// dialled): a loopback address is any of 127.0.0.0/8 and ::1, or
// "localhost"; one endpoint that is not makes the whole location refused.
func TestEtcdPasswordOnlyToLoopback(t *testing.T) {
	opts := EtcdOptions{Username: "u", Password: "p", Timeout: time.Second}.withDefaults()
	for _, tc := range []struct {
		endpoints string
		refused   bool
	}{
		{"127.0.0.1:1", false},
		{"127.0.0.2:1", false},
		{"127.255.0.9:1", false},
		{"[::1]:1", false},
		{"localhost:1", false},
		{"10.0.0.5:2379", true},
		{"192.168.1.2:2379", true},
		{"0.0.0.0:2379", true},
		{"[::]:2379", true},
		{"[::ffff:10.0.0.5]:2379", true},
		{"etcd.example:2379", true},
		{"localhost.example:2379", true},
		{"127.0.0.1:1,10.0.0.5:2379", true},
	} {
		l, err := ParseEtcd("etcd://" + tc.endpoints + "/etdi")
		if err != nil {
			t.Fatal(err)
		}
		_, err = etcdClient(l, opts)
		refused := err != nil && strings.Contains(err.Error(), "only over TLS")
		if refused != tc.refused {
			t.Errorf("%s: err = %v, want refused %v", tc.endpoints, err, tc.refused)
		}
	}
	// With TLS the password may go anywhere: the error is the CA's.
	tlsOpts := opts
	tlsOpts.CAFile = filepath.Join(t.TempDir(), "missing-ca.pem")
	l, _ := ParseEtcd("etcd://10.0.0.5:2379/etdi")
	if _, err := etcdClient(l, tlsOpts); err == nil || strings.Contains(err.Error(), "only over TLS") {
		t.Fatalf("TLS to 10.0.0.5: %v", err)
	}
	// Without a user nothing is sent: no refusal.
	noUser := opts
	noUser.Username, noUser.Password = "", ""
	l, _ = ParseEtcd("etcd://10.0.0.6:2379/etdi")
	if _, err := etcdClient(l, noUser); err != nil {
		t.Fatalf("no password: %v", err)
	}
}

// A machine whose snapshot's revision was compacted reads the store again
// in full: it opens online and sees what changed meanwhile.
func TestEtcdCompactedSnapshotReadAgain(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	loc := c.URL("etdi/compact")
	alice := openOn(t, loc, "a", "", Options{})
	o := obs("acme:weather", 1, tool(t, "get_weather", "1.0.0", weatherDef, keyA, "net"))
	if _, _, err := alice.Approve(o, ApproveOptions{By: "alice"}); err != nil {
		t.Fatal(err)
	}
	snap := t.TempDir()
	bob := openOn(t, loc, "b", snap, Options{})
	old, _ := bob.Revision()
	bob.Close()
	if err := alice.Revoke(Revocation{Server: "acme:weather", Tool: "get_weather", By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := alice.Approve(unsignedObs(t, "files", "read_file"), ApproveOptions{By: "alice"}); err != nil {
		t.Fatal(err)
	}
	rev, _ := alice.Revision()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Client(t).Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	bob = openOn(t, loc, "b", snap, Options{})
	if bob.Offline() != nil {
		t.Fatalf("a compacted snapshot opened offline: %v", bob.Offline())
	}
	if now, _ := bob.Revision(); now < rev || now <= old {
		t.Fatalf("revision %d, want at least %d", now, rev)
	}
	if still, err := bob.StillApproved(o); err != nil || still[StillApprovedKey("", "get_weather")] != finding.Revoked {
		t.Fatalf("after the full read: %v %v", still, err)
	}
	if _, err := bob.VerifyLog(); err != nil {
		t.Fatal(err)
	}
}

// While etcd is down, opening on the snapshot does not make it current:
// its age keeps counting from the last time etcd answered, so a later
// open past --max-stale fails closed, and the snapshot file is unchanged.
func TestEtcdStaleSnapshotRecheckedWhileDown(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	loc := c.URL("etdi/stale")
	snap := t.TempDir()
	s := openOn(t, loc, "a", snap, Options{})
	if _, _, err := s.Approve(unsignedObs(t, "files", "read_file"), ApproveOptions{By: "x"}); err != nil {
		t.Fatal(err)
	}
	_, synced := s.Revision()
	s.Close()
	c.Stop()
	fast := EtcdOptions{Timeout: 200 * time.Millisecond, SnapshotDir: snap, Machine: "a"}
	for range 2 {
		s, err := Open(loc, Options{Etcd: fast})
		if err != nil || s.Offline() == nil {
			t.Fatalf("offline open: %v", err)
		}
		if _, at := s.Revision(); !at.Equal(synced) {
			t.Fatalf("an offline open moved the snapshot's time from %v to %v", synced, at)
		}
		s.Close()
	}
	age := time.Since(synced)
	stale := fast
	stale.MaxStale = age / 2
	var oe *OfflineError
	if _, err := Open(loc, Options{Etcd: stale}); !errors.As(err, &oe) || !oe.Synced.Equal(synced) {
		t.Fatalf("past --max-stale while etcd is down: %v", err)
	}
	never := fast
	never.MaxStale = -1
	if _, err := Open(loc, Options{Etcd: never}); !errors.As(err, &oe) {
		t.Fatalf("--max-stale 0 while etcd is down: %v", err)
	}
	if _, err := os.Stat(snap); err != nil {
		t.Fatal(err)
	}
}
