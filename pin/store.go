package pin

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the schema this package writes. Older databases are
// migrated on open; newer ones are refused.
const SchemaVersion = 5

// initialMmapSize is the address space mapped for a writable database up
// front. Each time bbolt maps a bigger file inside a write transaction it
// copies every value written so far in it to the heap (an approval of a
// 60 MB listing grew the heap by 1.4 GB of copies). Mapping 1 GiB at once,
// which costs address space, not memory, leaves one copy. On Windows the
// file would be grown to the mapped size, so it is not done there.
var initialMmapSize = func() int {
	if runtime.GOOS == "windows" || strconv.IntSize < 64 {
		return 0
	}
	return 1 << 30
}()

// allocSize is how far past its needs the file grows at a time.
const allocSize = 32 << 10

// DefaultLockTimeout is how long [Open] waits for another process's lock.
const DefaultLockTimeout = 5 * time.Second

var (
	bMeta      = []byte("meta")
	bServers   = []byte("servers")
	bRevoked   = []byte("revoked")
	bNames     = []byte("names")
	bSkeletons = []byte("skeletons")
	bLog       = []byte("log")
	bRecords   = []byte("records")
	bHashes    = []byte("hashes")
	bPins      = []byte("pins")

	kSchema  = []byte("schema")
	kID      = []byte("id")
	kLogSize = []byte("logSize")
)

// ErrLocked is returned when another process holds the database lock for
// longer than the lock timeout.
var ErrLocked = errors.New("pin database is locked by another etdi process")

// CorruptError reports a database file that cannot be read safely.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("pin database %s is damaged: %v (restore it from a backup; etdi will not trust it)", e.Path, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Options tune [Open].
type Options struct {
	// LockTimeout bounds the wait for another process's lock; zero means
	// DefaultLockTimeout.
	LockTimeout time.Duration
	// ReadOnly opens with a shared lock and never writes. A database that
	// needs a migration cannot be opened read-only.
	ReadOnly bool
	// Etcd configures a store at an etcd:// location.
	Etcd EtcdOptions
	// noMigration skips the schema check (CheckFileAt only).
	noMigration bool
}

// Store is an open pin database: a bbolt file, or a prefix of an etcd
// cluster that many machines share (etcd.go). Both keep the same buckets
// and run the same code; they differ in where a transaction commits.
type Store struct {
	be backend
	// db is the bbolt file: the database, or an etcd store's snapshot.
	db *bolt.DB
	// path names the database in messages: the file, or the etcd://
	// location.
	path string
	// remote is the etcd store, nil for a file.
	remote *etcdBackend
	// auto signs a checkpoint after each write (SignEachWrite).
	auto *AutoCheckpoint
}

// backend is where a Store's transactions run and commit.
type backend interface {
	// view runs fn in a read transaction.
	view(fn func(tx *kvTx) error) error
	// update runs fn in a write transaction and commits it, returning an
	// id that grows with each commit (bbolt's transaction id, etcd's
	// revision).
	update(fn func(tx *kvTx) error) (uint64, error)
	close() error
}

// fileBackend is a bbolt file.
type fileBackend struct{ db *bolt.DB }

func (f fileBackend) view(fn func(tx *kvTx) error) error {
	return f.db.View(func(btx *bolt.Tx) error { return fn(&kvTx{btx: btx}) })
}

func (f fileBackend) update(fn func(tx *kvTx) error) (uint64, error) {
	var id uint64
	err := f.db.Update(func(btx *bolt.Tx) error {
		id = uint64(btx.ID())
		return fn(&kvTx{btx: btx})
	})
	return id, err
}

func (f fileBackend) close() error { return f.db.Close() }

// Open opens or creates the database at path (and its directory, 0700).
// A path of the form etcd://HOST:PORT[,HOST:PORT...]/PREFIX opens a shared
// store in etcd instead ([OpenEtcd]).
func Open(path string, opts Options) (s *Store, err error) {
	if IsEtcd(path) {
		s, err = OpenEtcd(path, opts)
	} else {
		s, err = openFile(path, opts)
	}
	if err == nil && !opts.ReadOnly {
		s.auto = signerFor(s.db.Path())
	}
	return s, err
}

// awaitCreated waits, up to timeout, for a database file that another
// process has just created to be written: bbolt creates the file before
// it takes its lock and writes the first pages, so a reader that opens it
// in between would find it empty (and bbolt, opened read-only, fails
// trying to initialize it). A file still empty after timeout is
// ErrLocked, as a database held longer than that is.
func awaitCreated(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		if fi.Size() > 0 || !fi.Mode().IsRegular() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w (%s is empty: another etdi process is creating it; waited %s)", ErrLocked, path, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func openFile(path string, opts Options) (s *Store, err error) {
	timeout := opts.LockTimeout
	if timeout == 0 {
		timeout = DefaultLockTimeout
	}
	if !opts.ReadOnly {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
	} else if err := awaitCreated(path, timeout); err != nil {
		return nil, err
	}
	if err := checkFile(path); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, &CorruptError{path, fmt.Errorf("%v", r)}
		}
	}()
	bo := &bolt.Options{Timeout: timeout, ReadOnly: opts.ReadOnly, PreLoadFreelist: true}
	if !opts.ReadOnly {
		bo.InitialMmapSize = initialMmapSize
	}
	db, err := bolt.Open(path, 0o600, bo)
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("%w (%s, waited %s)", ErrLocked, path, timeout)
		}
		return nil, &CorruptError{path, err}
	}
	if bo.InitialMmapSize > 0 {
		// With the file mapped beyond its end, bbolt grows it by
		// AllocSize past what it needs: keep that small.
		db.AllocSize = allocSize
	}
	s = &Store{be: fileBackend{db}, db: db, path: path}
	if !opts.ReadOnly {
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(path, 0o600); err != nil {
				db.Close()
				return nil, err
			}
		}
	}
	if opts.noMigration {
		return s, nil
	}
	if err := s.migrate(opts.ReadOnly); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// CheckFileAt runs CheckFile on the database at path, opened read-only
// and without reading its schema, so a database of any schema can be
// checked page by page.
func CheckFileAt(path string, lockTimeout time.Duration) error {
	s, err := Open(path, Options{ReadOnly: true, LockTimeout: lockTimeout, noMigration: true})
	if err != nil {
		return err
	}
	defer s.Close()
	return s.CheckFile()
}

// checkFile refuses files that bbolt would map beyond their end: a
// truncated file whose meta page still promises more pages would make the
// process fault on access instead of returning an error.
func checkFile(path string) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return nil // bbolt initializes an empty file
	}
	// bbolt meta page layout: page header (16 bytes: id 8, flags 2,
	// count 2, overflow 4), then meta: magic 4, version 4, pageSize 4,
	// flags 4, root bucket 16, freelist 8, pgid 8, txid 8, checksum 8.
	var hdr [16 + 64]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return &CorruptError{path, fmt.Errorf("file of %d bytes is too short for a database", fi.Size())}
	}
	magic := binary.LittleEndian.Uint32(hdr[16:])
	if magic != 0xED0CDAED {
		return &CorruptError{path, errors.New("not a bbolt database (bad magic)")}
	}
	pageSize := int64(binary.LittleEndian.Uint32(hdr[24:]))
	// Both meta pages are checked; bbolt uses the valid one with the
	// higher transaction id.
	maxHigh := int64(0)
	for i := int64(0); i < 2; i++ {
		var m [16 + 64]byte
		if pageSize < 1024 || pageSize > 1<<16 {
			return &CorruptError{path, fmt.Errorf("implausible page size %d", pageSize)}
		}
		if _, err := f.ReadAt(m[:], i*pageSize); err != nil {
			return &CorruptError{path, fmt.Errorf("meta page %d unreadable: file truncated to %d bytes", i, fi.Size())}
		}
		pgid := int64(binary.LittleEndian.Uint64(m[16+40:]))
		if pgid > maxHigh {
			maxHigh = pgid
		}
	}
	if maxHigh*pageSize > fi.Size() {
		return &CorruptError{path, fmt.Errorf("file truncated: %d bytes, but its pages reach %d", fi.Size(), maxHigh*pageSize)}
	}
	return nil
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// Close releases the database and its lock.
func (s *Store) Close() error { return s.be.close() }

// update runs fn in one write transaction, turning a panic from a damaged
// file into a *CorruptError.
func (s *Store) update(fn func(tx *kvTx) error) error {
	_, err := s.updateID(fn)
	return err
}

// updateID is update, returning the commit's id (backend.update).
func (s *Store) updateID(fn func(tx *kvTx) error) (id uint64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &CorruptError{s.path, fmt.Errorf("%v", r)}
		}
	}()
	var before int64
	if s.auto != nil {
		before = s.size()
	}
	id, err = s.be.update(fn)
	if err == nil && s.auto != nil && s.size() != before {
		if cerr := s.signAfterWrite(); cerr != nil && s.auto.Warn != nil {
			s.auto.Warn(cerr)
		}
	}
	return id, s.withPath(err)
}

// size is the history's size (0 when it cannot be read).
func (s *Store) size() int64 {
	var n int64
	s.be.view(func(tx *kvTx) error {
		if b := tx.Bucket(bMeta); b != nil && len(b.Get(kLogSize)) == 8 {
			n = logSize(tx)
		}
		return nil
	})
	return n
}

// withPath names the file in a *CorruptError made inside a transaction.
func (s *Store) withPath(err error) error {
	var ce *CorruptError
	if errors.As(err, &ce) && ce.Path == "" {
		ce.Path = s.path
	}
	return err
}

// view runs fn in one read transaction, like update.
func (s *Store) view(fn func(tx *kvTx) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &CorruptError{s.path, fmt.Errorf("%v", r)}
		}
	}()
	return s.withPath(s.be.view(fn))
}

// CheckFile reads every bucket and key and every page header, then runs
// bbolt's consistency check of every page. bbolt's check runs in a
// goroutine of its own, where a panic on a damaged page would end the
// process; so everything that can panic happens first in this goroutine,
// where it becomes a [*CorruptError]: the free list is loaded by [Open]
// (PreLoadFreelist; a zeroed free-list page panicked inside the check),
// and the walk reads every reachable page.
func (s *Store) CheckFile() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &CorruptError{s.path, fmt.Errorf("%v", r)}
		}
	}()
	return s.db.View(func(tx *bolt.Tx) error {
		if err := walk(tx); err != nil {
			return &CorruptError{s.path, err}
		}
		for err := range tx.Check() {
			return &CorruptError{s.path, err}
		}
		return nil
	})
}

// walk visits every page reachable from the root, checking each page's
// id and type as it goes.
func walk(tx *bolt.Tx) error {
	var visit func(b *bolt.Bucket, path string) error
	visit = func(b *bolt.Bucket, path string) error {
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				nb := b.Bucket(k)
				if nb == nil {
					return fmt.Errorf("bucket %s/%q cannot be opened", path, k)
				}
				return visit(nb, path+"/"+string(k))
			}
			return nil
		})
	}
	if err := tx.ForEach(func(name []byte, b *bolt.Bucket) error { return visit(b, string(name)) }); err != nil {
		return err
	}
	// Every page below the high-water mark has a plausible header, the
	// two meta pages included: bbolt's check would panic on a damaged
	// one in its own goroutine, after closing its channel, so that the
	// check could pass (and the process end) before the panic did.
	for id := 0; ; id++ {
		info, err := tx.Page(id)
		if errors.Is(err, berrors.ErrFreePagesNotLoaded) {
			return nil // Open preloads it; without it free pages look damaged
		}
		if err != nil {
			return fmt.Errorf("page %d: %v", id, err)
		}
		if info == nil {
			return nil
		}
		if id < 2 && info.Type != "meta" {
			return fmt.Errorf("meta page %d: not a meta page (type %s): zeroed or overwritten", id, info.Type)
		}
		switch info.Type {
		case "branch", "leaf", "meta", "freelist", "free":
		default:
			return fmt.Errorf("page %d: not a page of the database (type %s): zeroed or overwritten", id, info.Type)
		}
		id += info.OverflowCount
	}
}

// migration upgrades the schema from to-1 to to.
type migration struct {
	to   uint64
	name string
	fn   func(tx *kvTx) error
}

// migrations are applied in order; each runs in the transaction that also
// records its version, so a crash never leaves a half-migrated database.
var migrations = []migration{
	{1, "create the buckets", migrate1},
	{2, "index pinned names and their skeletons", migrate2},
	{3, "bind pins and revocations to their history records; Unicode 15.0.0 skeletons", migrate3},
	{4, "skeletons that fold blank characters like white space", migrate4},
	{5, "pins of prompts, resources and resource templates; call records", migrate5},
}

func migrate1(tx *kvTx) error {
	for _, b := range [][]byte{bMeta, bServers, bPins, bRevoked} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	lb, err := tx.CreateBucketIfNotExists(bLog)
	if err != nil {
		return err
	}
	for _, b := range [][]byte{bRecords, bHashes} {
		if _, err := lb.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	meta := tx.Bucket(bMeta)
	if meta.Get(kID) == nil {
		var id [16]byte
		if _, err := rand.Read(id[:]); err != nil {
			return err
		}
		if err := meta.Put(kID, []byte(hex.EncodeToString(id[:]))); err != nil {
			return err
		}
	}
	if meta.Get(kLogSize) == nil {
		return meta.Put(kLogSize, u64(0))
	}
	return nil
}

// migrate2 builds the names and skeletons indexes from the pins that
// schema 1 databases hold.
func migrate2(tx *kvTx) error {
	for _, b := range [][]byte{bNames, bSkeletons} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	return forEachPin(tx, nil, func(p *Pin) error { return indexPin(tx, p) })
}

func (s *Store) migrate(readOnly bool) error {
	var have uint64
	if err := s.view(func(tx *kvTx) error {
		if m := tx.Bucket(bMeta); m != nil {
			if v := m.Get(kSchema); v != nil {
				if len(v) != 8 {
					return &CorruptError{s.path, errors.New("schema version is not 8 bytes")}
				}
				have = binary.BigEndian.Uint64(v)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if have > SchemaVersion {
		return fmt.Errorf("pin database %s has schema %d; this etdi reads up to %d (upgrade etdi)", s.path, have, SchemaVersion)
	}
	if have == SchemaVersion {
		return nil
	}
	if readOnly {
		return fmt.Errorf("pin database %s has schema %d and needs a migration to %d; open it once without read-only", s.path, have, SchemaVersion)
	}
	for _, m := range migrations {
		if m.to <= have {
			continue
		}
		if err := s.update(func(tx *kvTx) error {
			if err := m.fn(tx); err != nil {
				return err
			}
			return tx.Bucket(bMeta).Put(kSchema, u64(m.to))
		}); err != nil {
			return fmt.Errorf("migrating pin database to schema %d (%s): %w", m.to, m.name, err)
		}
	}
	return nil
}

// Schema returns the database's schema version.
func (s *Store) Schema() (uint64, error) {
	var v uint64
	err := s.view(func(tx *kvTx) error {
		v = binary.BigEndian.Uint64(tx.Bucket(bMeta).Get(kSchema))
		return nil
	})
	return v, err
}

// ID returns the database's random identity (hex).
func (s *Store) ID() (string, error) {
	var id string
	err := s.view(func(tx *kvTx) error {
		id = string(tx.Bucket(bMeta).Get(kID))
		return nil
	})
	return id, err
}

func u64(n uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return b[:]
}
