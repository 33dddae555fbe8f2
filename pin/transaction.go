package pin

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
)

// kvTx is one transaction on the store's buckets. Its reads and writes go
// to a bbolt file: the database itself, or the local snapshot of an etcd
// store. For an etcd store the writes are also recorded (w), and committed
// to etcd in one transaction instead of to the snapshot (etcd.go).
type kvTx struct {
	btx *bolt.Tx
	w   *writeSet
}

// kvBucket is a bucket of a kvTx; path is its name, nested names joined
// by '/' ("log/records").
type kvBucket struct {
	b    *bolt.Bucket
	path string
	w    *writeSet
}

// writeSet is what a transaction on an etcd store wrote, in order.
type writeSet struct {
	ops []kvOp
	// machine and user name the writer in the history records it
	// appends (Record.Machine, Record.User).
	machine, user string
}

// kvOp is one write: key is "<bucket path>/<key>".
type kvOp struct {
	key []byte
	val []byte // nil: a deletion
}

func (w *writeSet) record(path string, key, val []byte) {
	k := make([]byte, 0, len(path)+1+len(key))
	k = append(append(append(k, path...), '/'), key...)
	w.ops = append(w.ops, kvOp{k, bytes.Clone(val)})
}

func (t *kvTx) wrap(b *bolt.Bucket, path string) *kvBucket {
	if b == nil {
		return nil
	}
	return &kvBucket{b, path, t.w}
}

// Bucket returns the top-level bucket name, nil if it does not exist.
func (t *kvTx) Bucket(name []byte) *kvBucket {
	return t.wrap(t.btx.Bucket(name), string(name))
}

// CreateBucketIfNotExists creates a top-level bucket. Buckets are not
// stored in etcd: every bucket of the schema exists in a snapshot.
func (t *kvTx) CreateBucketIfNotExists(name []byte) (*kvBucket, error) {
	b, err := t.btx.CreateBucketIfNotExists(name)
	return t.wrap(b, string(name)), err
}

// CreateBucket creates a top-level bucket (migrations of a file only).
func (t *kvTx) CreateBucket(name []byte) (*kvBucket, error) {
	b, err := t.btx.CreateBucket(name)
	return t.wrap(b, string(name)), err
}

// DeleteBucket deletes a top-level bucket (migrations of a file only).
func (t *kvTx) DeleteBucket(name []byte) error { return t.btx.DeleteBucket(name) }

// Get returns the value of key, nil if there is none; it is valid for the
// transaction only.
func (b *kvBucket) Get(key []byte) []byte { return b.b.Get(key) }

// Put sets key to val.
func (b *kvBucket) Put(key, val []byte) error {
	if err := b.b.Put(key, val); err != nil {
		return err
	}
	if b.w != nil {
		b.w.record(b.path, key, val)
	}
	return nil
}

// Delete removes key.
func (b *kvBucket) Delete(key []byte) error {
	if err := b.b.Delete(key); err != nil {
		return err
	}
	if b.w != nil {
		b.w.record(b.path, key, nil)
	}
	return nil
}

// Bucket returns the nested bucket name, nil if it does not exist.
func (b *kvBucket) Bucket(name []byte) *kvBucket {
	nb := b.b.Bucket(name)
	if nb == nil {
		return nil
	}
	return &kvBucket{nb, b.path + "/" + string(name), b.w}
}

// CreateBucketIfNotExists creates a nested bucket.
func (b *kvBucket) CreateBucketIfNotExists(name []byte) (*kvBucket, error) {
	nb, err := b.b.CreateBucketIfNotExists(name)
	if err != nil {
		return nil, err
	}
	return &kvBucket{nb, b.path + "/" + string(name), b.w}, nil
}

// Cursor returns a cursor to read the bucket in key order; writes go
// through Put and Delete only.
func (b *kvBucket) Cursor() *bolt.Cursor { return b.b.Cursor() }

// ForEach calls fn for each key and value in order.
func (b *kvBucket) ForEach(fn func(k, v []byte) error) error { return b.b.ForEach(fn) }

// KeyN returns the number of keys.
func (b *kvBucket) KeyN() int { return b.b.Stats().KeyN }

// SetFillPercent sets how full bbolt fills the bucket's pages.
func (b *kvBucket) SetFillPercent(f float64) { b.b.FillPercent = f }
