// Package etcdtest runs a real etcd v3 cluster inside the test process for
// the tests of etdi's etcd pin store: one or more embedded members
// (go.etcd.io/etcd/server/v3/embed) on 127.0.0.1, with optional TLS for
// clients and peers (a test CA, server certificates and one client
// certificate per user) and optional etcd authentication.
//
// A test starts a cluster with Start, talks to it through Endpoints, URL
// or Client, and takes members down and up again with Kill, Restart,
// Stop and RestartAll to see how its code behaves when a member or the
// whole cluster is gone. Everything is torn down by t.Cleanup.
//
// The methods that fail the test (Kill, Restart, AddRole...) call
// t.Fatal of the test that started the cluster: call them from its
// goroutine.
//
// Only tests import this package: it links the etcd server, which no
// library package nor the etdi command may depend on.
package etcdtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Defaults of Options.MaxTxnOps and Options.MaxRequestBytes. etdi writes
// one approval (pins, history records and tree hashes, name indexes) as
// one transaction, a few thousand keys for a server of a few hundred
// tools, so the limits are far above etcd's own defaults (128 operations,
// 1.5 MiB), as docs/etcd.md tells operators to set them.
const (
	DefaultMaxTxnOps       = 100000
	DefaultMaxRequestBytes = 64 << 20
)

// RootUser is the name of etcd's superuser. With Options.Auth the cluster
// is started with auth enabled and this user holding the root role; its
// password is Cluster.RootPassword, and with Options.TLS its client
// certificate (common name "root") authenticates it too.
const RootUser = "root"

// DefaultUsers are the client certificates made for a TLS cluster when
// Options.Users is empty: etcd's superuser and the two roles of
// deploy/etcd/roles.sh.
var DefaultUsers = []string{RootUser, "etdi-client", "etdi-approver"}

// Options says what cluster Start runs.
type Options struct {
	// Members is the number of members: 1 (the default when 0) or 3.
	Members int
	// TLS serves clients and peers over TLS with certificates of a test CA
	// and requires client certificates (etcd's --client-cert-auth and
	// --peer-client-cert-auth). CA and ClientCert give the PEM files.
	TLS bool
	// Users names the client certificates made when TLS is set, one per
	// name, the name as the certificate's common name (which etcd takes as
	// the user name when auth is enabled). Empty means DefaultUsers.
	// RootUser is always added.
	Users []string
	// Auth enables etcd authentication with RootUser as superuser.
	Auth bool
	// MaxTxnOps is etcd's --max-txn-ops; 0 means DefaultMaxTxnOps.
	MaxTxnOps int
	// MaxRequestBytes is etcd's --max-request-bytes; 0 means
	// DefaultMaxRequestBytes.
	MaxRequestBytes int
}

// Timing of the embedded members: a heartbeat every 50 ms and an election
// after 500 ms without one, ten times faster than etcd's defaults so that
// a test losing its leader goes on within a second, and still far above
// the scheduling delays of a loaded two-core machine.
const (
	tickMs     = 50
	electionMs = 500
)

// readyTimeout bounds every wait of this package: a member starting, a
// leader being elected, an auth call. Past it the test fails.
const readyTimeout = 30 * time.Second

// Cluster is a running (or stopped) embedded etcd cluster.
type Cluster struct {
	t       testing.TB
	opts    Options
	token   string // initial cluster token, unique per cluster
	scheme  string // "http" or "https"
	logs    *logBuffer
	logger  *zap.Logger
	certs   *certs // nil without TLS
	rootPwd string

	mu      sync.Mutex
	members []*member
	root    *clientv3.Client // lazily dialled, for the auth helpers
}

type member struct {
	name   string
	dir    string
	client url.URL
	peer   url.URL
	etcd   *embed.Etcd // nil while down
}

var userName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Start runs a new cluster for the test and waits until it has a leader
// and every member serves clients. It fails the test when the cluster
// cannot start. The cluster, and every client made by Client or ClientAs,
// is closed when the test ends.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c, err := start(t, opts)
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	return c
}

func start(t testing.TB, opts Options) (*Cluster, error) {
	if opts.Members == 0 {
		opts.Members = 1
	}
	if opts.Members != 1 && opts.Members != 3 {
		return nil, fmt.Errorf("Options.Members is %d: a test cluster has 1 or 3 members", opts.Members)
	}
	if opts.MaxTxnOps == 0 {
		opts.MaxTxnOps = DefaultMaxTxnOps
	}
	if opts.MaxRequestBytes == 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.MaxTxnOps < 0 || opts.MaxRequestBytes < 0 {
		return nil, fmt.Errorf("Options.MaxTxnOps (%d) and Options.MaxRequestBytes (%d) must not be negative", opts.MaxTxnOps, opts.MaxRequestBytes)
	}
	users := opts.Users
	if len(users) == 0 {
		users = DefaultUsers
	}
	seen := map[string]bool{}
	var names []string
	for _, u := range append([]string{RootUser}, users...) {
		if !userName.MatchString(u) {
			return nil, fmt.Errorf("user name %q: want letters, digits, '.', '_' or '-'", u)
		}
		if !seen[u] {
			seen[u] = true
			names = append(names, u)
		}
	}
	opts.Users = names

	c := &Cluster{
		t:       t,
		opts:    opts,
		token:   "etcdtest-" + randomHex(8),
		scheme:  "http",
		logs:    newLogBuffer(256 << 10),
		rootPwd: randomHex(16),
	}
	c.logger = c.logs.logger()
	if opts.TLS {
		c.scheme = "https"
		var err error
		if c.certs, err = makeCerts(t.TempDir(), names); err != nil {
			return nil, err
		}
	}
	// Cleanups run last-in first-out: the log dump is registered first
	// so that it sees the messages of the shutdown too.
	t.Cleanup(func() {
		if t.Failed() {
			if s := c.logs.String(); s != "" {
				t.Logf("etcd log (warnings and errors):\n%s", s)
			}
		}
	})
	t.Cleanup(c.close)

	base := t.TempDir()
	for i := range opts.Members {
		c.members = append(c.members, &member{
			name: fmt.Sprintf("m%d", i),
			dir:  filepath.Join(base, fmt.Sprintf("m%d", i)),
		})
	}
	// Ports are found free and released just before etcd binds them, so
	// another process can take one in between: then the whole cluster is
	// started again on other ports.
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = c.startFresh(); err == nil {
			break
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, err
		}
	}
	if err != nil {
		return nil, fmt.Errorf("no free ports after 5 attempts: %v", err)
	}
	if err := c.waitReady(allIndexes(opts.Members)); err != nil {
		return nil, err
	}
	if opts.Auth {
		if err := c.enableAuth(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// startFresh picks ports for every member and starts them as a new
// cluster. On failure it stops what it started.
func (c *Cluster) startFresh() error {
	ports, err := freePorts(2 * len(c.members))
	if err != nil {
		return err
	}
	for i, m := range c.members {
		m.client = url.URL{Scheme: c.scheme, Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i])}
		m.peer = url.URL{Scheme: c.scheme, Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])}
	}
	for i := range c.members {
		if err := c.startMember(i); err != nil {
			for j := range i {
				c.closeMember(j)
			}
			return err
		}
	}
	return nil
}

func (c *Cluster) config(m *member) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenClientUrls = []url.URL{m.client}
	cfg.AdvertiseClientUrls = []url.URL{m.client}
	cfg.ListenPeerUrls = []url.URL{m.peer}
	cfg.AdvertisePeerUrls = []url.URL{m.peer}
	var initial []string
	for _, o := range c.members {
		initial = append(initial, o.name+"="+o.peer.String())
	}
	cfg.InitialCluster = strings.Join(initial, ",")
	cfg.InitialClusterToken = c.token
	cfg.ClusterState = embed.ClusterStateFlagNew // ignored once the data dir holds a member
	cfg.TickMs = tickMs
	cfg.ElectionMs = electionMs
	cfg.MaxTxnOps = uint(c.opts.MaxTxnOps)
	cfg.MaxRequestBytes = uint(c.opts.MaxRequestBytes)
	// The data lives in the test's temporary directory; a crash here is a
	// Kill, which stops the member inside a live process whose page cache
	// keeps every write, so fsync buys nothing but time.
	cfg.UnsafeNoFsync = true
	cfg.BcryptCost = 4 // bcrypt.MinCost: users are added in every auth test
	cfg.EnableGRPCGateway = false
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(c.logger.With(zap.String("member", m.name)))
	if c.certs != nil {
		tlsInfo := c.certs.serverTLSInfo()
		cfg.ClientTLSInfo = tlsInfo
		cfg.PeerTLSInfo = tlsInfo
	}
	return cfg
}

func (c *Cluster) startMember(i int) error {
	m := c.members[i]
	e, err := embed.StartEtcd(c.config(m))
	if err != nil {
		return fmt.Errorf("start member %s: %w", m.name, err)
	}
	c.mu.Lock()
	m.etcd = e
	c.mu.Unlock()
	return nil
}

// waitReady waits until the members with the given indexes serve clients
// (they have joined the cluster and published themselves, which needs a
// quorum).
func (c *Cluster) waitReady(idx []int) error {
	deadline := time.After(readyTimeout)
	for _, i := range idx {
		m := c.members[i]
		select {
		case <-m.etcd.Server.ReadyNotify():
		case err := <-m.etcd.Err():
			return fmt.Errorf("member %s: %v", m.name, err)
		case <-deadline:
			return fmt.Errorf("member %s not ready after %v", m.name, readyTimeout)
		}
	}
	return nil
}

// Kill takes member i down abruptly: its raft loop stops at once without
// handing its leadership over (as a crashed process would), then its
// listeners and connections are closed and its data directory is left as
// it was. The member stays down until Restart or RestartAll.
//
// Killing the leader loses what was in flight: a write sent before the
// others elect a new leader (about a second) can fail after etcd's
// request timeout (6 s here) with "etcdserver: request timed out", and may
// or may not have been applied. A test whose next write must succeed calls
// WaitLeader first.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	c.checkIndex(i)
	if c.member(i) == nil {
		c.t.Fatalf("etcdtest: Kill(%d): member is not running", i)
	}
	c.closeMember(i)
}

// Stop takes every running member down at once, each as Kill does (no
// leadership is handed over: there is nobody left to take it). The
// cluster stays down until RestartAll or enough Restarts.
func (c *Cluster) Stop() {
	var wg sync.WaitGroup
	for i := range c.members {
		wg.Go(func() { c.closeMember(i) })
	}
	wg.Wait()
}

func (c *Cluster) member(i int) *embed.Etcd {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[i].etcd
}

func (c *Cluster) closeMember(i int) {
	c.mu.Lock()
	e := c.members[i].etcd
	c.members[i].etcd = nil
	c.mu.Unlock()
	if e == nil {
		return
	}
	if e.Server != nil {
		e.Server.HardStop()
	}
	e.Close()
	// Close waits for the handlers; drain the error channel it closes.
	for range e.Err() {
	}
}

// Restart starts member i again on its ports and data directory. When the
// members then running make a quorum, it waits until member i serves
// clients; otherwise it returns once the member listens, since a member
// alone cannot become ready.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	c.checkIndex(i)
	if c.member(i) != nil {
		c.t.Fatalf("etcdtest: Restart(%d): member is running", i)
	}
	if err := c.restart(i); err != nil {
		c.t.Fatalf("etcdtest: %v", err)
	}
	if c.running() > len(c.members)/2 {
		if err := c.waitReady([]int{i}); err != nil {
			c.t.Fatalf("etcdtest: %v", err)
		}
	}
}

// RestartAll starts every member that is down and waits until all of
// them serve clients.
func (c *Cluster) RestartAll() {
	c.t.Helper()
	var idx []int
	for i := range c.members {
		if c.member(i) == nil {
			if err := c.restart(i); err != nil {
				c.t.Fatalf("etcdtest: %v", err)
			}
		}
		idx = append(idx, i)
	}
	if err := c.waitReady(idx); err != nil {
		c.t.Fatalf("etcdtest: %v", err)
	}
}

// restart starts a member on its old ports, retrying for a few seconds
// when a port is briefly taken by another process.
func (c *Cluster) restart(i int) error {
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if err = c.startMember(i); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
	return err
}

func (c *Cluster) running() int {
	n := 0
	for i := range c.members {
		if c.member(i) != nil {
			n++
		}
	}
	return n
}

// Running reports whether member i is up.
func (c *Cluster) Running(i int) bool {
	c.checkIndex(i)
	return c.member(i) != nil
}

// Members is the number of members, running or not.
func (c *Cluster) Members() int { return len(c.members) }

// WaitLeader waits until a running member knows itself as leader and
// every running member follows it, and returns the leader's index. It
// fails the test when no leader is elected within 30 s (as without a
// quorum).
func (c *Cluster) WaitLeader() int {
	c.t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for {
		if i, ok := c.leader(); ok {
			return i
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("etcdtest: no leader after %v (%d of %d members running)", readyTimeout, c.running(), len(c.members))
		}
		time.Sleep(tickMs * time.Millisecond)
	}
}

func (c *Cluster) leader() (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	leader, lead := -1, uint64(0)
	for i, m := range c.members {
		if m.etcd == nil {
			continue
		}
		s := m.etcd.Server
		l := uint64(s.Leader())
		if l == 0 || (lead != 0 && l != lead) {
			return -1, false
		}
		lead = l
		if uint64(s.MemberID()) == l {
			leader = i
		}
	}
	return leader, leader >= 0
}

// Endpoints are the members' client addresses as host:port, in member
// order, running or not.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.client.Host)
	}
	return eps
}

// Endpoint is member i's client address as host:port.
func (c *Cluster) Endpoint(i int) string {
	c.checkIndex(i)
	return c.members[i].client.Host
}

// URL is the etdi pin store address of the cluster:
// etcd://HOST:PORT[,HOST:PORT...]/PREFIX.
func (c *Cluster) URL(prefix string) string {
	return "etcd://" + strings.Join(c.Endpoints(), ",") + "/" + strings.TrimPrefix(prefix, "/")
}

// RootPassword is the password of RootUser (meaningful with Options.Auth).
func (c *Cluster) RootPassword() string { return c.rootPwd }

// CA is the PEM file of the test CA that signed the servers' and clients'
// certificates. It fails the test on a cluster without TLS.
func (c *Cluster) CA() string {
	c.t.Helper()
	c.needTLS("CA")
	return c.certs.ca
}

// ClientCert is the PEM certificate and key files of user's client
// certificate (common name user). It fails the test on a cluster without
// TLS or for a user not in Options.Users.
func (c *Cluster) ClientCert(user string) (cert, key string) {
	c.t.Helper()
	c.needTLS("ClientCert")
	p, ok := c.certs.clients[user]
	if !ok {
		c.t.Fatalf("etcdtest: no client certificate for %q (Options.Users: %q)", user, c.opts.Users)
	}
	return p.cert, p.key
}

// CertDir is the directory holding the PEM files of a TLS cluster:
// ca.pem, server.pem, server-key.pem, and USER.pem, USER-key.pem for each
// user.
func (c *Cluster) CertDir() string {
	c.t.Helper()
	c.needTLS("CertDir")
	return c.certs.dir
}

func (c *Cluster) needTLS(what string) {
	c.t.Helper()
	if c.certs == nil {
		c.t.Fatalf("etcdtest: %s on a cluster started without Options.TLS", what)
	}
}

func (c *Cluster) checkIndex(i int) {
	c.t.Helper()
	if i < 0 || i >= len(c.members) {
		c.t.Fatalf("etcdtest: member %d of a %d-member cluster", i, len(c.members))
	}
}

// ClientConfig is a client configuration for the cluster: every
// endpoint, request sizes up to the server's limit (etcd's client sends
// at most 2 MiB unless MaxCallSendMsgSize says more), and with TLS the CA
// and, when user has one, user's client certificate. Username and
// Password are left empty.
func (c *Cluster) ClientConfig(user string) clientv3.Config {
	c.t.Helper()
	cfg := clientv3.Config{
		Endpoints:          c.Endpoints(),
		DialTimeout:        5 * time.Second,
		MaxCallSendMsgSize: c.opts.MaxRequestBytes + 1<<20,
		Logger:             c.logger.Named("client"),
	}
	if c.certs != nil {
		tc, err := c.certs.clientTLS(user)
		if err != nil {
			c.t.Fatalf("etcdtest: %v", err)
		}
		cfg.TLS = tc
	}
	return cfg
}

// Client is a client of the whole cluster as RootUser: by its client
// certificate with TLS, by password with Auth and no TLS. It is closed
// when the test ends.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cfg := c.ClientConfig(RootUser)
	if c.opts.Auth && c.certs == nil {
		cfg.Username, cfg.Password = RootUser, c.rootPwd
	}
	return c.NewClient(t, cfg)
}

// ClientAs is a client of the whole cluster as user: with TLS it presents
// user's client certificate when Options.Users made one (none otherwise);
// a non-empty password authenticates by password, which etcd prefers to
// the certificate's common name. It is closed when the test ends.
func (c *Cluster) ClientAs(t testing.TB, user, password string) *clientv3.Client {
	t.Helper()
	cfg := c.ClientConfig(user)
	if password != "" {
		cfg.Username, cfg.Password = user, password
	}
	return c.NewClient(t, cfg)
}

// NewClient dials cfg and closes the client when the test ends. It fails
// the test when the client cannot be made (with a password, that needs
// an authentication round trip). A cfg without Logger or LogConfig logs
// into the cluster's log, shown when the test fails.
func (c *Cluster) NewClient(t testing.TB, cfg clientv3.Config) *clientv3.Client {
	t.Helper()
	if cfg.Logger == nil && cfg.LogConfig == nil {
		cfg.Logger = c.logger.Named("client")
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatalf("etcdtest: client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// rootClient is the cluster's own client for the auth helpers.
func (c *Cluster) rootClient() (*clientv3.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.root != nil {
		return c.root, nil
	}
	cfg := clientv3.Config{
		Endpoints:   c.Endpoints(),
		DialTimeout: 5 * time.Second,
		Logger:      c.logger.Named("client"),
	}
	if c.certs != nil {
		tc, err := c.certs.clientTLS(RootUser)
		if err != nil {
			return nil, err
		}
		cfg.TLS = tc
	}
	if c.opts.Auth && c.certs == nil {
		cfg.Username, cfg.Password = RootUser, c.rootPwd
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, err
	}
	c.root = cli
	return cli, nil
}

func (c *Cluster) close() {
	c.mu.Lock()
	root := c.root
	c.root = nil
	c.mu.Unlock()
	if root != nil {
		root.Close()
	}
	c.Stop()
}

func ctxTimeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), readyTimeout)
}

func allIndexes(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
