package pin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"golang.org/x/mod/sumdb/tlog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// An etcd store keeps the buckets of a pin database as keys of one etcd
// prefix, "<PREFIX>/<bucket path>/<key>" (docs/fleets.md#shared-store-in-etcd), so that many
// machines share one set of approvals, revocations and one history.
//
// Each machine keeps a snapshot of the prefix in a local bbolt file with
// the etcd revision it reflects. Every transaction runs on the snapshot,
// as it runs on a pin database file, with its writes recorded; a write
// transaction is rolled back locally and its writes committed to etcd in
// one etcd transaction that compares the modification revision of the
// history size (meta/logSize), which every etdi transaction writes. Two
// writers that read the same state cannot both commit: the second one
// brings its snapshot up to date and runs again. So the history never
// forks and no record is lost, and every etdi transaction is serializable.
//
// The snapshot follows etcd by watching the prefix from its revision up
// to the last write of meta/logSize; when the revision was compacted it
// is read again in full.

// DefaultMaxStale is how old a snapshot may be when etcd cannot be
// reached before an etcd store refuses to open.
const DefaultMaxStale = time.Hour

// DefaultEtcdTimeout bounds each request to etcd.
const DefaultEtcdTimeout = 3 * time.Second

// EtcdOptions configure a store in etcd.
type EtcdOptions struct {
	// CertFile and KeyFile are a TLS client certificate and its key;
	// CAFile the CA that signed etcd's server certificates. Any of them
	// turns TLS on.
	CertFile, KeyFile, CAFile string
	// Username and Password authenticate to etcd (etcd's RBAC).
	Username, Password string
	// Timeout bounds each request (DefaultEtcdTimeout if zero).
	Timeout time.Duration
	// MaxStale is how old the local snapshot may be when etcd cannot be
	// reached (DefaultMaxStale if zero; negative: never): up to that age
	// the store opens on the snapshot, read-only; past it, Open fails.
	MaxStale time.Duration
	// SnapshotDir holds the local snapshots (default: etdi/etcd under
	// the user's cache directory).
	SnapshotDir string
	// Machine and User name the writer in the history records it appends
	// (default: the host name and the login name).
	Machine, User string
}

// ErrOffline is returned for a write to an etcd store opened on its
// snapshot because etcd could not be reached: nothing is approved,
// revoked or recorded offline.
var ErrOffline = errors.New("etcd cannot be reached: the pin store is open on its local snapshot, read-only (nothing is approved, revoked or recorded offline)")

// OfflineError reports an etcd store that could not be reached and whose
// snapshot is too old, or missing, to be used in its place.
type OfflineError struct {
	Location string
	// Synced is when the snapshot was last brought up to date (zero if
	// there is none).
	Synced   time.Time
	MaxStale time.Duration
	Err      error
}

func (e *OfflineError) Error() string {
	if e.Synced.IsZero() {
		return fmt.Sprintf("pin store %s: etcd cannot be reached (%v) and there is no local snapshot of it", e.Location, e.Err)
	}
	return fmt.Sprintf("pin store %s: etcd cannot be reached (%v) and the local snapshot was last updated %s ago, more than --max-stale %s: failing closed",
		e.Location, e.Err, time.Since(e.Synced).Round(time.Second), e.MaxStale)
}

func (e *OfflineError) Unwrap() error { return e.Err }

// ErrPermission is wrapped by the error of a write that etcd refused for
// the user's role (a client role cannot approve or revoke).
var ErrPermission = errors.New("etcd refused the write for this user's role")

// IsEtcd says whether a pin store location names an etcd store.
func IsEtcd(loc string) bool { return strings.HasPrefix(loc, "etcd://") }

// EtcdLocation is a parsed etcd:// location.
type EtcdLocation struct {
	Endpoints []string
	// Prefix is the key prefix without its final '/'.
	Prefix string
}

// String returns the location in its canonical form.
func (l EtcdLocation) String() string {
	return "etcd://" + strings.Join(l.Endpoints, ",") + "/" + l.Prefix
}

// ParseEtcd parses etcd://HOST:PORT[,HOST:PORT...]/PREFIX. The prefix is
// one or more segments of letters, digits, '.', '_' and '-' separated by
// '/'.
func ParseEtcd(loc string) (EtcdLocation, error) {
	rest, ok := strings.CutPrefix(loc, "etcd://")
	if !ok {
		return EtcdLocation{}, fmt.Errorf("%q is not an etcd:// location", loc)
	}
	hosts, prefix, ok := strings.Cut(rest, "/")
	if !ok || prefix == "" {
		return EtcdLocation{}, fmt.Errorf("%q: want etcd://HOST:PORT[,HOST:PORT...]/PREFIX (the prefix is required)", loc)
	}
	var l EtcdLocation
	for _, h := range strings.Split(hosts, ",") {
		host, port, err := net.SplitHostPort(h)
		if err != nil || host == "" {
			return EtcdLocation{}, fmt.Errorf("%q: endpoint %q is not HOST:PORT", loc, h)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return EtcdLocation{}, fmt.Errorf("%q: endpoint %q has no valid port", loc, h)
		}
		l.Endpoints = append(l.Endpoints, h)
	}
	for _, seg := range strings.Split(prefix, "/") {
		if err := checkPrefixSegment(loc, prefix, seg); err != nil {
			return EtcdLocation{}, err
		}
	}
	l.Prefix = prefix
	return l, nil
}

// checkPrefixSegment refuses a segment seg of the prefix of etcd location
// loc that is empty, "." or "..", the name of a bucket of the store, or
// holds other than letters, digits, '.', '_' and '-'.
func checkPrefixSegment(loc, prefix, seg string) error {
	if seg == "" || seg == "." || seg == ".." {
		return fmt.Errorf("%q: prefix %q has an empty, '.' or '..' segment", loc, prefix)
	}
	// A store under another's prefix must not look like its
	// buckets: etcd://.../etdi/pins would be pins of etcd://.../etdi.
	for _, b := range etcdBuckets {
		if name, _, _ := strings.Cut(b, "/"); seg == name {
			return fmt.Errorf("%q: prefix segment %q is the name of a bucket of the store", loc, seg)
		}
	}
	for _, r := range seg {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%q: prefix %q: only letters, digits, '.', '_', '-' and '/'", loc, prefix)
		}
	}
	return nil
}

// SnapshotPath returns the local snapshot file of an etcd store.
func SnapshotPath(loc string, opts EtcdOptions) (string, error) {
	l, err := ParseEtcd(loc)
	if err != nil {
		return "", err
	}
	dir := opts.SnapshotDir
	if dir == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no directory for the etcd snapshot (set --etcd-snapshots): %w", err)
		}
		dir = filepath.Join(c, "etdi", "etcd")
	}
	eps := slices.Clone(l.Endpoints)
	slices.Sort(eps)
	h := sha256.Sum256([]byte(strings.Join(eps, ",") + "/" + l.Prefix))
	return filepath.Join(dir, hex.EncodeToString(h[:10])+".db"), nil
}

// LocalFile returns the file of the store at loc on this machine: the
// file itself, or an etcd store's snapshot. Files that belong to a store
// (spools of call records, pending listings) are kept beside it.
func LocalFile(loc string, opts Options) (string, error) {
	if IsEtcd(loc) {
		return SnapshotPath(loc, opts.Etcd)
	}
	return loc, nil
}

var (
	// bEtcd is the snapshot's own bucket: the revision it reflects,
	// the modification revision of meta/logSize, and when it was last
	// brought up to date. It is never in etcd.
	bEtcd    = []byte("etcd")
	kRev     = []byte("rev")
	kHead    = []byte("head")
	kSynced  = []byte("synced")
	kWhere   = []byte("location")
	etcdHead = "meta/logSize"
	// etcdBuckets are the bucket paths of the schema, each with its
	// key prefix in etcd; nested ones first.
	etcdBuckets = []string{"log/records", "log/hashes", "meta", "servers", "revoked", "names", "skeletons", "pins", "spools", "launches"}
)

// etcdBackend is an open etcd store.
type etcdBackend struct {
	loc      string
	root     string // key prefix, ending in '/'
	cli      *clientv3.Client
	db       *bolt.DB
	opts     EtcdOptions
	readOnly bool
	// offline is set when etcd could not be reached at Open.
	offline error
	// client is set once etcd refused this user a write of the history:
	// findings and call records go to the machine's spool.
	client bool
}

// errRollback ends the local transaction of an etcd write.
var errRollback = errors.New("rollback")

// clients are shared by the stores a process opens (a gate opens the
// store for each decision).
var (
	clientsMu sync.Mutex
	clients   = map[string]*clientv3.Client{}
)

func etcdClient(l EtcdLocation, o EtcdOptions) (*clientv3.Client, error) {
	// One connection per configuration and machine name: a process is one
	// machine, except in tests that play many.
	key := strings.Join([]string{strings.Join(l.Endpoints, ","), o.CertFile, o.KeyFile, o.CAFile, o.Username, o.Password, o.Machine}, "\x00")
	clientsMu.Lock()
	defer clientsMu.Unlock()
	if c := clients[key]; c != nil {
		return c, nil
	}
	cfg := clientv3.Config{
		Endpoints:            l.Endpoints,
		DialTimeout:          o.Timeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: o.Timeout,
		Username:             o.Username,
		Password:             o.Password,
		Logger:               zap.NewNop(),
		// An approval is one request: up to MaxApprovalBytes of
		// definitions, in pins and in records.
		MaxCallSendMsgSize: 4*MaxApprovalBytes + 1<<20,
	}
	if o.CertFile != "" || o.KeyFile != "" || o.CAFile != "" {
		if (o.CertFile == "") != (o.KeyFile == "") {
			return nil, errors.New("etcd: --etcd-cert and --etcd-key go together")
		}
		tlsInfo := transport.TLSInfo{CertFile: o.CertFile, KeyFile: o.KeyFile, TrustedCAFile: o.CAFile}
		tc, err := tlsInfo.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("etcd TLS: %w", err)
		}
		tc.MinVersion = tls.VersionTLS12
		cfg.TLS = tc
	} else if o.Username != "" {
		// A password on a connection without TLS goes to etcd in the
		// clear: only to a loopback endpoint.
		for _, ep := range l.Endpoints {
			host, _, _ := net.SplitHostPort(ep)
			if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
				return nil, fmt.Errorf("etcd: a user and password are sent only over TLS (give --etcd-ca) or to a loopback endpoint, not to %s", ep)
			}
		}
	}
	c, err := clientv3.New(cfg)
	if err != nil {
		if pe := (&etcdBackend{loc: l.String()}).permission(err); pe != nil {
			return nil, pe
		}
		return nil, fmt.Errorf("etcd: %w", err)
	}
	clients[key] = c
	return c, nil
}

func (o EtcdOptions) withDefaults() EtcdOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultEtcdTimeout
	}
	if o.MaxStale == 0 {
		o.MaxStale = DefaultMaxStale
	}
	if o.MaxStale < 0 {
		o.MaxStale = 0 // never open on the snapshot alone
	}
	if o.Machine == "" {
		o.Machine, _ = os.Hostname()
	}
	if o.User == "" {
		if u, err := user.Current(); err == nil {
			o.User = u.Username
		}
	}
	return o
}

// OpenEtcd opens the store at loc, etcd://HOST:PORT[,...]/PREFIX, through
// its local snapshot (opened with opts.LockTimeout). It brings the
// snapshot up to date; when etcd cannot be reached it opens on the
// snapshot, read-only, if the snapshot is at most opts.Etcd.MaxStale old,
// and fails with an [*OfflineError] otherwise. A store that holds nothing
// yet is created, unless opts.ReadOnly, where [Open] fails with an error
// that wraps [os.ErrNotExist].
func OpenEtcd(loc string, opts Options) (*Store, error) {
	l, err := ParseEtcd(loc)
	if err != nil {
		return nil, err
	}
	eo := opts.Etcd.withDefaults()
	snap, err := SnapshotPath(loc, eo)
	if err != nil {
		return nil, err
	}
	cli, err := etcdClient(l, eo)
	if err != nil {
		return nil, err
	}
	s, err := openFile(snap, Options{LockTimeout: opts.LockTimeout, noMigration: true})
	if err != nil {
		return nil, fmt.Errorf("snapshot of %s: %w", loc, err)
	}
	e := &etcdBackend{loc: l.String(), root: l.Prefix + "/", cli: cli, db: s.db, opts: eo, readOnly: opts.ReadOnly}
	s.be, s.path, s.remote = e, e.loc, e
	if err := e.prepare(); err != nil {
		s.Close()
		return nil, err
	}
	if err := e.sync(context.Background()); err != nil {
		var pe *permissionError
		var se *snapshotError
		if errors.As(err, &pe) || errors.As(err, &se) {
			// Not an outage: what etcd holds cannot be read as a store,
			// and the snapshot is no stand-in for it.
			s.Close()
			return nil, err
		}
		synced := e.synced()
		if synced.IsZero() || time.Since(synced) > eo.MaxStale || !e.initialized() {
			s.Close()
			return nil, &OfflineError{Location: e.loc, Synced: synced, MaxStale: eo.MaxStale, Err: err}
		}
		e.offline = err
	}
	if !e.initialized() {
		if opts.ReadOnly {
			s.Close()
			return nil, fmt.Errorf("pin store %s holds no pins yet: %w", e.loc, os.ErrNotExist)
		}
		if err := s.update(func(tx *kvTx) error {
			if tx.Bucket(bMeta).Get(kSchema) != nil {
				return nil // another machine created it meanwhile
			}
			if err := migrate1(tx); err != nil {
				return err
			}
			return tx.Bucket(bMeta).Put(kSchema, u64(SchemaVersion))
		}); err != nil {
			s.Close()
			return nil, fmt.Errorf("creating the pin store %s: %w", e.loc, err)
		}
	}
	if err := s.migrate(true); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Offline returns why an etcd store was opened on its snapshot alone, nil
// if etcd answered (and for a file).
func (s *Store) Offline() error {
	if s.remote == nil {
		return nil
	}
	return s.remote.offline
}

// Revision returns the etcd revision an etcd store's snapshot reflects,
// and when it was last confirmed current; zero for a file.
func (s *Store) Revision() (int64, time.Time) {
	if s.remote == nil {
		return 0, time.Time{}
	}
	return s.remote.rev(), s.remote.synced()
}

// Refresh brings an etcd store's snapshot up to date with etcd: a [Store]
// reads etcd as it was at [Open], at its own last write and at its last
// Refresh. It does nothing for a file.
func (s *Store) Refresh() error {
	if s.remote == nil {
		return nil
	}
	return s.remote.sync(context.Background())
}

// prepare creates the snapshot's buckets.
func (e *etcdBackend) prepare() error {
	return e.db.Update(func(btx *bolt.Tx) error {
		for _, p := range append([]string{"etcd"}, etcdBuckets...) {
			var b *bolt.Bucket
			var err error
			for i, name := range strings.Split(p, "/") {
				if i == 0 {
					b, err = btx.CreateBucketIfNotExists([]byte(name))
				} else {
					b, err = b.CreateBucketIfNotExists([]byte(name))
				}
				if err != nil {
					return err
				}
			}
		}
		eb := btx.Bucket(bEtcd)
		if w := eb.Get(kWhere); w != nil && string(w) != e.loc {
			// Another location with the same hash would be a collision
			// of SHA-256; a renamed location is read again.
			return clearSnapshot(btx)
		}
		return eb.Put(kWhere, []byte(e.loc))
	})
}

func (e *etcdBackend) metaU64(k []byte) uint64 {
	var v uint64
	e.db.View(func(btx *bolt.Tx) error {
		if b := btx.Bucket(bEtcd).Get(k); len(b) == 8 {
			v = binary.BigEndian.Uint64(b)
		}
		return nil
	})
	return v
}

func (e *etcdBackend) rev() int64  { return int64(e.metaU64(kRev)) }
func (e *etcdBackend) head() int64 { return int64(e.metaU64(kHead)) }

func (e *etcdBackend) synced() time.Time {
	if n := e.metaU64(kSynced); n != 0 && e.rev() != 0 {
		return time.Unix(0, int64(n))
	}
	return time.Time{}
}

func (e *etcdBackend) initialized() bool {
	ok := false
	e.db.View(func(btx *bolt.Tx) error {
		ok = btx.Bucket(bMeta).Get(kSchema) != nil
		return nil
	})
	return ok
}

func (e *etcdBackend) view(fn func(tx *kvTx) error) error {
	return e.db.View(func(btx *bolt.Tx) error { return fn(&kvTx{btx: btx}) })
}

func (e *etcdBackend) close() error { return e.db.Close() }

// maxAttempts bounds how often a write transaction runs again after
// another writer committed first.
const maxAttempts = 100

// update runs fn on the snapshot, rolls it back, and commits its writes
// to etcd if meta/logSize was not written since the snapshot's state;
// otherwise it brings the snapshot up to date and runs fn again.
func (e *etcdBackend) update(fn func(tx *kvTx) error) (uint64, error) {
	if e.readOnly {
		return 0, fmt.Errorf("pin store %s is open read-only", e.loc)
	}
	if e.offline != nil {
		return 0, fmt.Errorf("pin store %s: %w (%v)", e.loc, ErrOffline, e.offline)
	}
	for attempt := 0; ; attempt++ {
		ws := &writeSet{machine: e.opts.Machine, user: e.opts.User}
		// What clients spooled goes into the history first, in the
		// same transaction (etcdspool.go); a client cannot write it.
		var pending []pendingEntry
		if !e.client {
			var err error
			if pending, err = e.pendingSpools(context.Background()); err != nil {
				return 0, e.writeError(err)
			}
		}
		var head int64
		var size []byte
		err := e.db.Update(func(btx *bolt.Tx) error {
			if b := btx.Bucket(bEtcd).Get(kHead); len(b) == 8 {
				head = int64(binary.BigEndian.Uint64(b))
			}
			tx := &kvTx{btx: btx, w: ws}
			if err := fold(tx, pending); err != nil {
				return err
			}
			if err := fn(tx); err != nil {
				return err
			}
			size = bytes.Clone(btx.Bucket(bMeta).Get(kLogSize))
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			return 0, err
		}
		if len(ws.ops) == 0 {
			return uint64(e.rev()), nil
		}
		ops := e.ops(ws, size)
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(e.root+etcdHead), "=", head)}
		for _, p := range pending {
			// Folded as read: not rewritten, nor folded by another.
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(e.root+p.key), "=", p.mod))
		}
		ctx, cancel := context.WithTimeout(context.Background(), e.opts.Timeout)
		resp, err := e.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
		cancel()
		if err != nil {
			err = e.writeError(err)
			if errors.Is(err, ErrPermission) {
				e.client = true
			}
			return 0, err
		}
		if resp.Succeeded {
			// Nothing of etdi's was committed between the snapshot's
			// state and this transaction: the snapshot with its writes
			// is etcd's state at the transaction's revision.
			rev := resp.Header.Revision
			err := e.db.Update(func(btx *bolt.Tx) error {
				for _, op := range ws.ops {
					if err := e.apply(btx, []byte(e.root+string(op.key)), op.val); err != nil {
						return err
					}
				}
				if err := e.apply(btx, []byte(e.root+etcdHead), size); err != nil {
					return err
				}
				return putMeta(btx, rev, rev, time.Now())
			})
			if err != nil {
				// Committed all the same; a snapshot that could not
				// follow is read again.
				e.db.Update(clearSnapshot)
			}
			return uint64(rev), nil
		}
		serr := e.sync(context.Background())
		if serr != nil {
			return 0, fmt.Errorf("pin store %s: %w", e.loc, serr)
		}
		if attempt == maxAttempts {
			return 0, fmt.Errorf("pin store %s: %d other writers committed first; try again", e.loc, attempt)
		}
		time.Sleep(time.Duration(rand.IntN(1+min(attempt, 20))) * time.Millisecond)
	}
}

// ops turns a write set into etcd operations, the last write of each key
// only, with meta/logSize always written (size is its value after fn).
func (e *etcdBackend) ops(ws *writeSet, size []byte) []clientv3.Op {
	last := map[string]int{}
	for i, op := range ws.ops {
		last[string(op.key)] = i
	}
	var ops []clientv3.Op
	wroteHead := false
	for i, op := range ws.ops {
		k := string(op.key)
		if last[k] != i {
			continue
		}
		if k == etcdHead {
			wroteHead = true
		}
		if op.val == nil {
			ops = append(ops, clientv3.OpDelete(e.root+k))
		} else {
			ops = append(ops, clientv3.OpPut(e.root+k, string(op.val)))
		}
	}
	if !wroteHead {
		ops = append(ops, clientv3.OpPut(e.root+etcdHead, string(size)))
	}
	return ops
}

// permissionError is etcd's refusal of a request for the user's role.
type permissionError struct {
	loc string
	err error
}

func (p *permissionError) Error() string {
	return fmt.Sprintf("pin store %s: %v: %v (approving and revoking need the etdi-approver role; see docs/fleets.md#roles)", p.loc, ErrPermission, p.err)
}

func (p *permissionError) Unwrap() []error { return []error{ErrPermission, p.err} }

// writeError explains an error etcd returned for a write.
func (e *etcdBackend) writeError(err error) error {
	if pe := e.permission(err); pe != nil {
		return pe
	}
	if errors.Is(err, rpctypes.ErrTooManyOps) || errors.Is(err, rpctypes.ErrGRPCTooManyOps) {
		return fmt.Errorf("pin store %s: %w (start etcd with a higher --max-txn-ops: etdi writes an approval as one transaction; see docs/etcd.md)", e.loc, err)
	}
	if errors.Is(err, rpctypes.ErrRequestTooLarge) || errors.Is(err, rpctypes.ErrGRPCRequestTooLarge) || status.Code(err) == codes.ResourceExhausted {
		return fmt.Errorf("pin store %s: %w (start etcd with a higher --max-request-bytes; see docs/etcd.md)", e.loc, err)
	}
	return fmt.Errorf("pin store %s: %w", e.loc, err)
}

func (e *etcdBackend) permission(err error) *permissionError {
	if errors.Is(err, rpctypes.ErrPermissionDenied) || errors.Is(err, rpctypes.ErrGRPCPermissionDenied) ||
		errors.Is(err, rpctypes.ErrAuthFailed) || errors.Is(err, rpctypes.ErrGRPCAuthFailed) ||
		status.Code(err) == codes.PermissionDenied {
		return &permissionError{e.loc, err}
	}
	return nil
}

// sync brings the snapshot up to the last etdi transaction committed to
// etcd: nothing to do when meta/logSize and meta/id are as the snapshot
// has them; the changes since the snapshot's revision otherwise; all of
// the prefix when the snapshot is empty, of another store, or its
// revision was compacted. Each request is bounded by the timeout; the
// changes since the snapshot by four times it.
func (e *etcdBackend) sync(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	resp, err := e.cli.Txn(rctx).Then(clientv3.OpGet(e.root+etcdHead), clientv3.OpGet(e.root+"meta/"+string(kID))).Commit()
	cancel()
	if err != nil {
		if pe := e.permission(err); pe != nil {
			return pe
		}
		return err
	}
	var headMod int64
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		headMod = kvs[0].ModRevision
	}
	var id []byte
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		id = kvs[0].Value
	}
	var myID []byte
	e.db.View(func(btx *bolt.Tx) error {
		myID = bytes.Clone(btx.Bucket(bMeta).Get(kID))
		return nil
	})
	have := e.head()
	switch {
	case headMod == have && bytes.Equal(id, myID):
		return e.markSynced()
	case e.rev() == 0 || headMod < have || !bytes.Equal(id, myID):
		return e.fullSync(ctx, resp.Header.Revision)
	}
	cctx, cancel := context.WithTimeout(ctx, 4*e.opts.Timeout)
	err = e.catchUp(cctx, headMod)
	cancel()
	if errors.Is(err, errCompacted) {
		return e.fullSync(ctx, resp.Header.Revision)
	}
	return err
}

var errCompacted = errors.New("etcd: the snapshot's revision was compacted")

// snapshotError is a failure to write what etcd holds into the snapshot:
// the store fails closed instead of opening on the old snapshot.
type snapshotError struct{ err error }

func (e *snapshotError) Error() string { return "etcd store snapshot: " + e.err.Error() }
func (e *snapshotError) Unwrap() error { return e.err }

func snapshotErr(err error) error {
	if err == nil {
		return nil
	}
	return &snapshotError{err}
}

// catchUp applies the changes from the snapshot's revision up to the
// write of meta/logSize at revision target.
func (e *etcdBackend) catchUp(ctx context.Context, target int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	from := e.rev()
	var evs []*clientv3.Event
	done := false
	for resp := range e.cli.Watch(wctx, e.root, clientv3.WithPrefix(), clientv3.WithRev(from+1)) {
		if resp.CompactRevision != 0 {
			return errCompacted
		}
		if err := resp.Err(); err != nil {
			if pe := e.permission(err); pe != nil {
				return pe
			}
			return err
		}
		for _, ev := range resp.Events {
			if ev.Kv.ModRevision > target {
				continue
			}
			evs = append(evs, ev)
			if string(ev.Kv.Key) == e.root+etcdHead && ev.Kv.ModRevision == target {
				done = true
			}
		}
		if done {
			break
		}
	}
	if !done {
		if err := ctx.Err(); err != nil {
			return err
		}
		return errors.New("etcd: the watch ended before the snapshot was up to date")
	}
	return snapshotErr(e.db.Update(func(btx *bolt.Tx) error {
		from := sizeIn(btx)
		for _, ev := range evs {
			var val []byte
			if ev.Type == clientv3.EventTypePut {
				val = ev.Kv.Value
			}
			if err := e.appendOnly(btx, from, ev.Kv.Key, val); err != nil {
				return err
			}
			if err := e.apply(btx, ev.Kv.Key, val); err != nil {
				return err
			}
		}
		// What was appended must be what an etdi transaction appends:
		// a record that breaks the tree would stop every approval and
		// revocation while gates go on reading the store.
		if err := checkAppended(btx, from, sizeIn(btx)); err != nil {
			return e.invalid(err)
		}
		return putMeta(btx, target, target, time.Now())
	}))
}

// sizeIn returns the history's size in a snapshot (0 if unset).
func sizeIn(btx *bolt.Tx) int64 {
	if v := btx.Bucket(bMeta).Get(kLogSize); len(v) == 8 {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

// HistoryError reports a shared history that no etdi transaction could
// have written: a record, or its tree hashes, that do not verify. Every
// machine refuses the store until an operator repairs it (docs/etcd.md,
// etdi audit repair).
type HistoryError struct {
	Location string
	Record   int64
	Msg      string
}

func (h *HistoryError) Error() string {
	return fmt.Sprintf("pin store %s: the shared history is invalid at record %d: %s (etdi never writes that; nothing is read from the store until an operator repairs it: etdi audit repair --pins %s, see docs/etcd.md)",
		h.Location, h.Record, h.Msg, h.Location)
}

func (e *etcdBackend) invalid(err error) error {
	var le *LogError
	if errors.As(err, &le) {
		return &HistoryError{e.loc, le.Record, le.Msg}
	}
	return err
}

// checkAppended verifies records from..to-1 of a snapshot against the
// stored hashes of the records before them: each is present, holds its
// index and the tree hash before it, and its tree hashes are stored as
// tlog computes them; and no record lies at to.
func checkAppended(btx *bolt.Tx, from, to int64) error {
	records, hashes := bucketAt(btx, "log/records"), bucketAt(btx, "log/hashes")
	return checkRange(func(i int64) []byte { return records.Get(u64(uint64(i))) },
		func(i int64) []byte { return hashes.Get(u64(uint64(i))) }, from, to)
}

// checkRange is checkAppended over any store of records and hashes.
func checkRange(record, hash func(i int64) []byte, from, to int64) error {
	hr := funcHashes(hash)
	for i := from; i < to; i++ {
		data := record(i)
		if data == nil {
			return &LogError{i, "missing (deleted)"}
		}
		var rec Record
		if err := json.Unmarshal(data, &rec); err != nil {
			return &LogError{i, "unreadable: " + err.Error()}
		}
		if rec.Index != i {
			return &LogError{i, fmt.Sprintf("holds index %d", rec.Index)}
		}
		prev, err := tlog.TreeHash(i, hr)
		if err != nil {
			return &LogError{i, "the tree before it: " + err.Error()}
		}
		if rec.Prev != base64.StdEncoding.EncodeToString(prev[:]) {
			return &LogError{i, "its prev is not the tree hash of the records before it"}
		}
		hs, err := tlog.StoredHashes(i, data, hr)
		if err != nil {
			return &LogError{i, err.Error()}
		}
		base := tlog.StoredHashIndex(0, i)
		for k, h := range hs {
			switch v := hash(base + int64(k)); {
			case v == nil:
				return &LogError{i, fmt.Sprintf("its tree hash %d is missing", base+int64(k))}
			case !bytes.Equal(v, h[:]):
				return &LogError{i, fmt.Sprintf("its tree hash %d does not match it", base+int64(k))}
			}
		}
	}
	if record(to) != nil {
		return &LogError{to, "lies beyond the history's size"}
	}
	return nil
}

// funcHashes reads stored hashes through a function.
type funcHashes func(i int64) []byte

func (f funcHashes) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, idx := range indexes {
		v := f(idx)
		if len(v) != tlog.HashSize {
			return nil, fmt.Errorf("stored hash %d is missing", idx)
		}
		copy(out[i][:], v)
	}
	return out, nil
}

// appendOnly refuses a change to the history that no etdi transaction
// makes: a record or tree hash the snapshot holds rewritten or deleted,
// or the history's size lowered. A machine that has seen a record
// notices when it is taken back, whoever had the rights to write it.
func (e *etcdBackend) appendOnly(btx *bolt.Tx, from int64, key, val []byte) error {
	rel, _ := bytes.CutPrefix(key, []byte(e.root))
	if string(rel) == etcdHead {
		if len(val) != 8 || int64(binary.BigEndian.Uint64(val)) < from || binary.BigEndian.Uint64(val) > 1<<62 {
			return &historyRewritten{fmt.Sprintf("its size went from %d to %x", from, val)}
		}
		return nil
	}
	// The records the snapshot held before this catch-up, and their
	// hashes; what came after them is checked once applied.
	for _, p := range []struct {
		path string
		n    int64
	}{{"log/records", from}, {"log/hashes", tlog.StoredHashCount(from)}} {
		if k, ok := bytes.CutPrefix(rel, []byte(p.path+"/")); ok {
			if len(k) == 8 && int64(binary.BigEndian.Uint64(k)) >= p.n {
				return nil
			}
			if old := bucketAt(btx, p.path).Get(k); old != nil && !bytes.Equal(old, val) {
				return &historyRewritten{fmt.Sprintf("%s %x was rewritten or deleted", p.path, k)}
			}
		}
	}
	return nil
}

// historyRewritten reports a shared history that changed other than by
// appending, seen by a machine whose snapshot held what changed.
type historyRewritten struct{ what string }

func (h *historyRewritten) Error() string {
	return "the shared history in etcd was changed other than by appending: " + h.what +
		" (etdi never does that: audit the cluster; once it is restored, remove this machine's snapshot)"
}

// fullSync reads the whole prefix at revision rev, in pages, into an
// emptied snapshot. The snapshot's revision is zero until it is done, so
// that an interrupted read starts again.
func (e *etcdBackend) fullSync(ctx context.Context, rev int64) error {
	// The snapshot is not usable until the last page is in (its
	// revision is zero): the pages need not reach the disk one by one.
	e.db.NoSync = true
	defer func() { e.db.NoSync = false }()
	var had uint64 // the history's size the snapshot knew
	e.db.View(func(btx *bolt.Tx) error {
		if v := btx.Bucket(bMeta).Get(kLogSize); len(v) == 8 && e.rev() != 0 {
			had = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	if err := e.db.Update(clearSnapshot); err != nil {
		return err
	}
	end := clientv3.GetPrefixRangeEnd(e.root)
	key := e.root
	var headMod int64
	for {
		rctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
		resp, err := e.cli.Get(rctx, key, clientv3.WithRange(end), clientv3.WithRev(rev), clientv3.WithLimit(fullSyncPage))
		cancel()
		if err != nil {
			if pe := e.permission(err); pe != nil {
				return pe
			}
			return err
		}
		err = snapshotErr(e.db.Update(func(btx *bolt.Tx) error {
			for _, kv := range resp.Kvs {
				if string(kv.Key) == e.root+etcdHead {
					headMod = kv.ModRevision
				}
				if err := e.apply(btx, kv.Key, kv.Value); err != nil {
					return err
				}
			}
			return nil
		}))
		if err != nil {
			return err
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	if err := e.db.Sync(); err != nil {
		return err
	}
	e.db.NoSync = false
	var size uint64
	e.db.View(func(btx *bolt.Tx) error {
		if v := btx.Bucket(bMeta).Get(kLogSize); len(v) == 8 {
			size = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	if size < had {
		// The snapshot stays empty (revision zero): this machine does
		// not use the store until someone looks.
		return &snapshotError{&historyRewritten{fmt.Sprintf("its size went from %d to %d", had, size)}}
	}
	// Every record and tree hash, as audit verify does; the snapshot
	// stays empty when they do not verify.
	if err := e.db.View(func(btx *bolt.Tx) error {
		if size == 0 && btx.Bucket(bMeta).Get(kSchema) == nil {
			return nil // no store yet
		}
		if len(btx.Bucket(bMeta).Get(kLogSize)) != 8 {
			return &LogError{0, "the history's size (meta/logSize) is missing"}
		}
		if _, err := verifyLog(&kvTx{btx: btx}); err != nil {
			// The record to name: the first that does not verify.
			if err2 := checkAppended(btx, 0, sizeIn(btx)); err2 != nil {
				return err2
			}
			return err
		}
		return nil
	}); err != nil {
		return &snapshotError{e.invalid(err)}
	}
	return e.db.Update(func(btx *bolt.Tx) error { return putMeta(btx, rev, headMod, time.Now()) })
}

// fullSyncPage is how many keys one request of a full read returns.
const fullSyncPage = 5000

// apply writes one key of the prefix into the snapshot (val nil: delete).
// Keys outside the schema's buckets are ignored.
func (e *etcdBackend) apply(btx *bolt.Tx, key, val []byte) error {
	rel, ok := bytes.CutPrefix(key, []byte(e.root))
	if !ok || len(rel) > bolt.MaxKeySize || len(val) > bolt.MaxValueSize {
		// No etdi transaction writes such a key: every key comes
		// from a bbolt bucket.
		return nil
	}
	for _, p := range etcdBuckets {
		k, ok := bytes.CutPrefix(rel, []byte(p+"/"))
		if !ok || len(k) == 0 {
			continue
		}
		if p == string(bSpools) && bytes.IndexByte(k, '/') >= 0 {
			// A machine's spool entry: read from etcd by the fold,
			// never from a snapshot.
			return nil
		}
		b := bucketAt(btx, p)
		if val == nil {
			return b.Delete(k)
		}
		return b.Put(k, val)
	}
	return nil
}

// bucketAt returns the bucket at path ("log/records"), nil if it does not
// exist.
func bucketAt(btx *bolt.Tx, path string) *bolt.Bucket {
	top, sub, nested := strings.Cut(path, "/")
	b := btx.Bucket([]byte(top))
	if nested && b != nil {
		b = b.Bucket([]byte(sub))
	}
	return b
}

// clearSnapshot empties every bucket of the schema and forgets the
// revision and when it was current.
func clearSnapshot(btx *bolt.Tx) error {
	for _, p := range etcdBuckets {
		parent, name := (*bolt.Bucket)(nil), p
		if a, b, nested := strings.Cut(p, "/"); nested {
			parent, name = btx.Bucket([]byte(a)), b
		}
		del, create := btx.DeleteBucket, btx.CreateBucket
		if parent != nil {
			del, create = parent.DeleteBucket, parent.CreateBucket
		}
		if err := del([]byte(name)); err != nil {
			return err
		}
		if _, err := create([]byte(name)); err != nil {
			return err
		}
	}
	b := btx.Bucket(bEtcd)
	for _, k := range [][]byte{kRev, kHead, kSynced} {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func putMeta(btx *bolt.Tx, rev, head int64, at time.Time) error {
	b := btx.Bucket(bEtcd)
	if err := b.Put(kRev, u64(uint64(rev))); err != nil {
		return err
	}
	if err := b.Put(kHead, u64(uint64(head))); err != nil {
		return err
	}
	return b.Put(kSynced, u64(uint64(at.UnixNano())))
}

// markSynced records that the snapshot is current as of now.
func (e *etcdBackend) markSynced() error {
	return e.db.Update(func(btx *bolt.Tx) error {
		return btx.Bucket(bEtcd).Put(kSynced, u64(uint64(time.Now().UnixNano())))
	})
}
