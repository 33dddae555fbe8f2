package etcdtest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func ctx(t *testing.T, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

func put(t *testing.T, cli *clientv3.Client, key, val string) {
	t.Helper()
	// On a loaded machine a leader can be lost (and a request time out)
	// without anything being wrong: a put is tried three times.
	var err error
	for range 3 {
		if _, err = cli.Put(ctx(t, 10*time.Second), key, val); err == nil {
			return
		}
	}
	t.Fatalf("put %s: %v", key, err)
}

func get(t *testing.T, cli *clientv3.Client, key string) string {
	t.Helper()
	resp, err := cli.Get(ctx(t, 10*time.Second), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("get %s: %d keys", key, len(resp.Kvs))
	}
	return string(resp.Kvs[0].Value)
}

// memberClient talks to member i alone.
func memberClient(t *testing.T, c *Cluster, i int) *clientv3.Client {
	cfg := c.ClientConfig(RootUser)
	cfg.Endpoints = []string{c.Endpoint(i)}
	return c.NewClient(t, cfg)
}

// concurrently runs the calls at once (each waits out its deadline when
// refused) and returns their errors in order.
func concurrently(calls ...func() error) []error {
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, f := range calls {
		wg.Go(func() { errs[i] = f() })
	}
	wg.Wait()
	return errs
}

func isDeadline(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
}

func TestOneMemberWritesAndKeepsDataOverRestart(t *testing.T) {
	t.Parallel()
	c := Start(t, Options{})
	if got := len(c.Endpoints()); got != 1 {
		t.Fatalf("%d endpoints, want 1", got)
	}
	if !strings.HasPrefix(c.URL("/etdi"), "etcd://127.0.0.1:") || !strings.HasSuffix(c.URL("/etdi"), "/etdi") {
		t.Errorf("URL = %q", c.URL("/etdi"))
	}
	cli := c.Client(t)
	put(t, cli, "etdi/a", "1")

	// One transaction of many keys, as an etdi approval writes, passes the
	// raised default limits; etcd's own (128 operations, 1.5 MiB) refuse it.
	var ops []clientv3.Op
	value := strings.Repeat("v", 1000)
	for i := range 5000 {
		ops = append(ops, clientv3.OpPut(fmt.Sprintf("etdi/bulk/%05d", i), value))
	}
	if _, err := cli.Txn(ctx(t, 30*time.Second)).Then(ops...).Commit(); err != nil {
		t.Fatalf("transaction of 5000 puts (5 MB): %v", err)
	}
	// etcd's client alone refuses to send it: ClientConfig raises its limit.
	cfg := c.ClientConfig(RootUser)
	cfg.MaxCallSendMsgSize = 0
	if _, err := c.NewClient(t, cfg).Txn(ctx(t, 30*time.Second)).Then(ops...).Commit(); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("5 MB transaction with the client's default send limit: err = %v, want ResourceExhausted", err)
	}

	c.Stop()
	if c.Running(0) {
		t.Fatal("member 0 runs after Stop")
	}
	if _, err := cli.Get(ctx(t, time.Second), "etdi/a"); err == nil {
		t.Fatal("get succeeded on a stopped cluster")
	}
	c.RestartAll()
	if got := get(t, cli, "etdi/a"); got != "1" {
		t.Errorf("after restart etdi/a = %q, want 1", got)
	}
	resp, err := cli.Get(ctx(t, 10*time.Second), "etdi/bulk/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 5000 {
		t.Errorf("after restart %d bulk keys, want 5000", resp.Count)
	}
}

func TestLimitsAreThoseOfOptions(t *testing.T) {
	t.Parallel()
	c := Start(t, Options{MaxTxnOps: 10, MaxRequestBytes: 4096})
	cli := c.Client(t)
	txn := func(n, size int) error {
		var ops []clientv3.Op
		for i := range n {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("k%d", i), strings.Repeat("x", size)))
		}
		_, err := cli.Txn(ctx(t, 10*time.Second)).Then(ops...).Commit()
		return err
	}
	if err := txn(10, 1); err != nil {
		t.Fatalf("10 operations with MaxTxnOps 10: %v", err)
	}
	if err := txn(11, 1); !errors.Is(err, rpctypes.ErrTooManyOps) {
		t.Errorf("11 operations with MaxTxnOps 10: err = %v, want %v", err, rpctypes.ErrTooManyOps)
	}
	if err := txn(1, 8192); !errors.Is(err, rpctypes.ErrRequestTooLarge) {
		t.Errorf("8 KiB request with MaxRequestBytes 4096: err = %v, want %v", err, rpctypes.ErrRequestTooLarge)
	}
}

func TestOptionsRefused(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{{Members: 2}, {Members: 5}, {Members: -1}, {MaxTxnOps: -1}, {TLS: true, Users: []string{"../x"}}, {TLS: true, Users: []string{"server"}}} {
		if _, err := start(t, o); err == nil {
			t.Errorf("start(%+v) succeeded", o)
		}
	}
}

// TestThreeMembersQuorum kills the leader and another member of three: one
// member down changes nothing for clients, two down refuse writes.
func TestThreeMembersQuorum(t *testing.T) {
	t.Parallel()
	c := Start(t, Options{Members: 3})
	cli := c.Client(t)
	put(t, cli, "k", "before")

	leader := c.WaitLeader()
	c.Kill(leader)
	if c.Running(leader) {
		t.Fatal("killed member still running")
	}
	newLeader := c.WaitLeader()
	if newLeader == leader {
		t.Fatalf("leader %d still leads after Kill", leader)
	}
	// Writes go on through the client of all three endpoints.
	for i := range 20 {
		put(t, cli, fmt.Sprintf("during/%d", i), "x")
	}
	if got := get(t, cli, "k"); got != "before" {
		t.Errorf("k = %q", got)
	}

	other := 3 - leader - newLeader // the third index
	c.Kill(newLeader)
	survivor := memberClient(t, c, other)
	errs := concurrently(
		func() error { _, err := survivor.Put(ctx(t, time.Second), "k", "without quorum"); return err },
		// A linearizable read needs the quorum too.
		func() error { _, err := survivor.Get(ctx(t, time.Second), "k"); return err },
	)
	for i, what := range []string{"put", "get"} {
		if !isDeadline(errs[i]) {
			t.Errorf("%s with 2 of 3 members down: err = %v, want a deadline error", what, errs[i])
		}
	}

	c.Restart(leader) // quorum again: waits until the member is ready
	c.WaitLeader()
	put(t, cli, "k", "after")
	if got := get(t, memberClient(t, c, leader), "during/19"); got != "x" {
		t.Errorf("restarted member reads during/19 = %q", got)
	}
	c.Restart(newLeader)
	if got := get(t, memberClient(t, c, newLeader), "k"); got != "after" {
		t.Errorf("restarted member reads k = %q, want after", got)
	}
}

// TestRestartWithoutQuorumReturns restarts one member of three while the
// other two are down: it cannot become ready alone, so Restart returns once
// it listens, and the cluster is back when a second member comes.
func TestRestartWithoutQuorumReturns(t *testing.T) {
	t.Parallel()
	c := Start(t, Options{Members: 3})
	cli := c.Client(t)
	put(t, cli, "k", "v")
	c.Stop()
	c.Restart(2)
	c.Restart(0)
	c.WaitLeader()
	if got := get(t, cli, "k"); got != "v" {
		t.Errorf("k = %q, want v", got)
	}
	c.RestartAll()
	if got := get(t, memberClient(t, c, 1), "k"); got != "v" {
		t.Errorf("member 1 reads k = %q, want v", got)
	}
}

func TestTLSRequiresClientCertificate(t *testing.T) {
	t.Parallel()
	c := Start(t, Options{TLS: true, Users: []string{"etdi-client"}})
	cli := c.ClientAs(t, "etdi-client", "")
	put(t, cli, "k", "v")
	for _, f := range []string{c.CA(), c.CertDir()} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	cert, key := c.ClientCert("etdi-client")
	if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
		t.Errorf("ClientCert: %v", err)
	}

	// "nobody" has no certificate: the client trusts the CA but presents none.
	anon := c.ClientAs(t, "nobody", "")
	// A client that does not trust the test CA.
	cfg := c.ClientConfig("etdi-client")
	cfg.TLS.RootCAs = nil
	untrusting := c.NewClient(t, cfg)
	// Plain HTTP to a TLS member.
	plain := c.NewClient(t, clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: time.Second})
	clients := []*clientv3.Client{anon, untrusting, plain}
	var calls []func() error
	for _, cli := range clients {
		calls = append(calls, func() error { _, err := cli.Get(ctx(t, time.Second), "k"); return err })
	}
	for i, err := range concurrently(calls...) {
		if err == nil {
			t.Errorf("%s: get succeeded", []string{"without a client certificate", "not trusting the CA", "plain HTTP"}[i])
		}
	}
}

func TestTLSClusterOfThree(t *testing.T) {
	t.Parallel()
	c := Start(t, Options{Members: 3, TLS: true})
	cli := c.Client(t)
	put(t, cli, "k", "v")
	c.Kill(1)
	c.WaitLeader() // member 1 may have led
	put(t, cli, "k", "w")
	c.Restart(1)
	if got := get(t, memberClient(t, c, 1), "k"); got != "w" {
		t.Errorf("k = %q, want w", got)
	}
}

// TestAuthReadOnlyRoleRefusedPut: with auth on, a read-only role reads its
// prefix and nothing else, and writes nothing.
func TestAuthReadOnlyRoleRefusedPut(t *testing.T) {
	t.Parallel()
	c := Start(t, Options{Auth: true})
	root := c.Client(t)
	put(t, root, "etdi/pins/a", "1")
	put(t, root, "other/x", "1")
	c.AddRole("reader", Prefix("etdi/", Read))
	c.AddUser("alice", "alice-pw", "reader")

	alice := c.ClientAs(t, "alice", "alice-pw")
	if got := get(t, alice, "etdi/pins/a"); got != "1" {
		t.Errorf("alice reads %q", got)
	}
	if _, err := alice.Put(ctx(t, 5*time.Second), "etdi/pins/a", "2"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("read-only put: err = %v, want %v", err, rpctypes.ErrPermissionDenied)
	}
	if _, err := alice.Get(ctx(t, 5*time.Second), "other/x"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("read outside the prefix: err = %v, want %v", err, rpctypes.ErrPermissionDenied)
	}
	// Without credentials nothing is allowed.
	anon := c.NewClient(t, c.ClientConfig(""))
	if _, err := anon.Get(ctx(t, 5*time.Second), "etdi/pins/a"); !errors.Is(err, rpctypes.ErrUserEmpty) {
		t.Errorf("anonymous get: err = %v, want %v", err, rpctypes.ErrUserEmpty)
	}
	if got := get(t, root, "etdi/pins/a"); got != "1" {
		t.Errorf("after refused put etdi/pins/a = %q", got)
	}
	// A wrong password fails at dial.
	cfg := c.ClientConfig("alice")
	cfg.Username, cfg.Password = "alice", "wrong"
	if cli, err := clientv3.New(cfg); err == nil {
		cli.Close()
		t.Error("client with a wrong password made")
	} else if !errors.Is(err, rpctypes.ErrAuthFailed) {
		t.Errorf("wrong password: err = %v, want %v", err, rpctypes.ErrAuthFailed)
	}
}

// TestAuthByCertificate: with TLS and auth, a client certificate's common
// name is the user, and roles limit it to the keys the perms name.
func TestAuthByCertificate(t *testing.T) {
	t.Parallel()
	c := Start(t, Options{TLS: true, Auth: true})
	c.AddRole("etdi-client", Prefix("etdi/", Read), Prefix("etdi/log/", Write), Key("etdi/meta/logSize", Write))
	c.AddUser("etdi-client", "", "etdi-client")

	cli := c.ClientAs(t, "etdi-client", "")
	put(t, cli, "etdi/log/records/1", "r")
	put(t, cli, "etdi/meta/logSize", "1")
	if got := get(t, cli, "etdi/log/records/1"); got != "r" {
		t.Errorf("read back %q", got)
	}
	for _, k := range []string{"etdi/pins/a", "etdi/meta/logSize2", "etdi/logx", "etdi/meta/other"} {
		if _, err := cli.Put(ctx(t, 5*time.Second), k, "x"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Errorf("put %s: err = %v, want %v", k, err, rpctypes.ErrPermissionDenied)
		}
	}
	// The approver certificate names no user yet: refused.
	appr := c.ClientAs(t, "etdi-approver", "")
	if _, err := appr.Get(ctx(t, 5*time.Second), "etdi/log/records/1"); err == nil {
		t.Error("certificate of an unknown user read a key")
	}
	// root by certificate reads everything.
	if got := get(t, c.Client(t), "etdi/meta/logSize"); got != "1" {
		t.Errorf("root reads %q", got)
	}
}

// TestNoLeaks starts and stops a cluster and its clients and checks that
// goroutines and open files come back to where they were. It does not run
// in parallel: the other tests' clusters would count.
func TestNoLeaks(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts open files in /proc/self/fd")
	}
	run := func() {
		t.Run("cluster", func(t *testing.T) {
			c := Start(t, Options{Members: 3, TLS: true, Auth: true})
			put(t, c.Client(t), "k", "v")
			c.Kill(0)
			c.Restart(0)
			c.AddRole("r")
		})
	}
	run() // warm up: package-level state of grpc, etcd and net/http
	g0, f0 := runtime.NumGoroutine(), openFiles(t)
	run()
	var g, f int
	// Exiting goroutines and closing sockets finish in their own time on a
	// loaded machine; what a cluster leaks never does.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		g, f = runtime.NumGoroutine(), openFiles(t)
		if g <= g0+2 && f <= f0+2 {
			return
		}
	}
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	t.Errorf("after one more cluster: %d goroutines (was %d), %d open files (was %d)\n%s", g, g0, f, f0, buf)
}

func openFiles(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func TestFreePorts(t *testing.T) {
	t.Parallel()
	ports := FreePorts(t, 20)
	seen := map[int]bool{}
	lo, hi, below := belowEphemeral()
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d twice", p)
		}
		seen[p] = true
		if below && (p < lo || p >= hi) {
			t.Errorf("port %d outside [%d, %d): may clash with outgoing connections", p, lo, hi)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Errorf("port %d not free: %v", p, err)
			continue
		}
		l.Close()
	}
	if runtime.GOOS == "linux" && !below {
		t.Log("no ephemeral port range known: ports chosen by the kernel")
	}
}
