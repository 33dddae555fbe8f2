package pin

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Record types.
const (
	RecordApprove   = "approve"   // first approval of a tool on a server
	RecordReapprove = "reapprove" // approval replacing an earlier pin
	RecordRevoke    = "revoke"    // a revocation
	RecordUnrevoke  = "unrevoke"  // a revocation lifted
	RecordFinding   = "finding"   // a finding detected by check
	RecordCall      = "call"      // a tools/call through etdi run --audit-calls
)

// Record is one entry of the history.
type Record struct {
	Index int64 `json:"index"`
	// Prev is the base64 tree hash of the log's first Index records.
	Prev   string    `json:"prev"`
	Time   time.Time `json:"time"`
	Type   string    `json:"type"`
	Server string    `json:"server,omitempty"`
	Tool   string    `json:"tool,omitempty"`
	// Item is the kind of item Tool names, when it is not a tool
	// (ItemPrompt, ItemResource, ItemTemplate).
	Item     string    `json:"item,omitempty"`
	Version  string    `json:"version,omitempty"`
	Digest   string    `json:"digest,omitempty"`
	Signer   *SignerID `json:"signer,omitempty"`
	KeyID    string    `json:"keyId,omitempty"`
	Kind     string    `json:"kind,omitempty"`
	Severity string    `json:"severity,omitempty"`
	Message  string    `json:"message,omitempty"`
	By       string    `json:"by,omitempty"`
	// Machine and User name who appended the record to a store shared
	// through etcd: the host name and login name of the writer (
	// docs/fleets.md#transactions). Records of a pin database file leave them out.
	Machine string `json:"machine,omitempty"`
	User    string `json:"user,omitempty"`
	// Permissions granted by an approval.
	Permissions []etdi.Permission `json:"permissions,omitempty"`
	// Scopes given to an unsigned tool by its approval (Pin.Scopes).
	Scopes []string `json:"scopes,omitempty"`
	// Replaced is what a re-approval replaced: "version digest".
	Replaced string `json:"replaced,omitempty"`
	// Served is what served the tool an approval approved (an artifact
	// or an endpoint), when known.
	Served string `json:"served,omitempty"`
	// ServedAt is where the file that served it was, for a file artifact
	// (Pin.ServedAt).
	ServedAt string `json:"servedAt,omitempty"`
	// Variant says that an approval adds its definition beside the ones
	// approved before (replacing only one of the same digest) instead of
	// replacing them all (docs/storage.md#approved-variants).
	Variant bool `json:"variant,omitempty"`
	// Arguments is the SHA-256 of a call's arguments in RFC 8785 form
	// ("sha256:..."; "raw-sha256:..." of the bytes sent when they are not
	// JSON of §2's profile); Outcome is "forwarded", "blocked" or "error";
	// DurationMicros is the time from the call to its answer. A call
	// record never holds the arguments or the result.
	Arguments      string `json:"arguments,omitempty"`
	Outcome        string `json:"outcome,omitempty"`
	DurationMicros int64  `json:"durationMicros,omitempty"`
	// Decision is what the call-time policies decided of a call ("allow",
	// "ask", "forbid"; empty without policies), Policies the ids of the
	// policies that decided it, and Answer the person's answer when it
	// was put to them ("accept", "decline", "cancel", "timeout",
	// "unsupported": the host cannot ask, "invalid").
	Decision string   `json:"decision,omitempty"`
	Policies []string `json:"policies,omitempty"`
	Answer   string   `json:"answer,omitempty"`
}

// LogError reports a record that fails verification.
type LogError struct {
	Record int64
	Msg    string
}

func (e *LogError) Error() string { return fmt.Sprintf("history record %d: %s", e.Record, e.Msg) }

type bucketHashes struct{ b *kvBucket }

func (r bucketHashes) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, idx := range indexes {
		v := r.b.Get(u64(uint64(idx)))
		if len(v) != tlog.HashSize {
			return nil, fmt.Errorf("stored hash %d is missing", idx)
		}
		copy(out[i][:], v)
	}
	return out, nil
}

type memHashes []tlog.Hash

func (m memHashes) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, idx := range indexes {
		if idx < 0 || idx >= int64(len(m)) {
			return nil, fmt.Errorf("hash %d not computed", idx)
		}
		out[i] = m[idx]
	}
	return out, nil
}

func logSize(tx *kvTx) int64 {
	return int64(binary.BigEndian.Uint64(tx.Bucket(bMeta).Get(kLogSize)))
}

// appendFill is the page fill for the append-only log buckets.
const appendFill = 0.95

// appendRecord appends rec to the history inside tx, filling Index and
// Prev, and returns the index.
func appendRecord(tx *kvTx, rec Record) (int64, error) {
	b, err := appendBound(tx, rec)
	return b.Record, err
}

// appendBound appends rec like appendRecord and returns its binding.
func appendBound(tx *kvTx, rec Record) (Binding, error) {
	if tx.w != nil {
		return appendBoundAs(tx, rec, tx.w.machine, tx.w.user)
	}
	return appendBoundAs(tx, rec, "", "")
}

// appendBoundAs is appendBound for a record that machine and user wrote
// (Record.Machine, Record.User; empty in a file).
func appendBoundAs(tx *kvTx, rec Record, machine, user string) (Binding, error) {
	lb := tx.Bucket(bLog)
	records, hashes := lb.Bucket(bRecords), lb.Bucket(bHashes)
	// Keys only ever grow: fill pages instead of splitting them in half.
	records.SetFillPercent(appendFill)
	hashes.SetFillPercent(appendFill)
	n := logSize(tx)
	prev, err := tlog.TreeHash(n, bucketHashes{hashes})
	if err != nil {
		return Binding{}, err
	}
	rec.Index = n
	rec.Prev = base64.StdEncoding.EncodeToString(prev[:])
	if rec.Time.IsZero() {
		rec.Time = time.Now().UTC()
	}
	rec.Machine, rec.User = machine, user
	data, err := json.Marshal(rec)
	if err != nil {
		return Binding{}, err
	}
	hs, err := tlog.StoredHashes(n, data, bucketHashes{hashes})
	if err != nil {
		return Binding{}, err
	}
	base := tlog.StoredHashIndex(0, n)
	for i, h := range hs {
		if err := hashes.Put(u64(uint64(base+int64(i))), h[:]); err != nil {
			return Binding{}, err
		}
	}
	if err := records.Put(u64(uint64(n)), data); err != nil {
		return Binding{}, err
	}
	return leafOf(n, data), tx.Bucket(bMeta).Put(kLogSize, u64(uint64(n+1)))
}

// Tree is a verified state of the history: its size and root hash.
type Tree struct {
	Size int64
	Hash tlog.Hash
	// hashes are all stored hashes, recomputed from the records.
	hashes memHashes
}

// VerifyLog recomputes the history from its records and checks it against
// everything stored: each record's position, content, predecessor hash,
// every stored hash, and that nothing lies beyond the recorded size. The
// first problem is returned as a [*LogError] naming the record.
func (s *Store) VerifyLog() (*Tree, error) {
	var t *Tree
	err := s.view(func(tx *kvTx) error {
		var err error
		t, err = verifyLog(tx)
		return err
	})
	return t, err
}

// Records calls fn for every record in order, stopping at its first error.
func (s *Store) Records(fn func(data []byte, r *Record) error) error {
	return s.view(func(tx *kvTx) error {
		records := tx.Bucket(bLog).Bucket(bRecords)
		n := logSize(tx)
		for i := int64(0); i < n; i++ {
			data := records.Get(u64(uint64(i)))
			if data == nil {
				return &LogError{i, "missing (deleted)"}
			}
			var rec Record
			if err := json.Unmarshal(data, &rec); err != nil {
				return &LogError{i, "unreadable: " + err.Error()}
			}
			if err := fn(bytes.Clone(data), &rec); err != nil {
				return err
			}
		}
		return nil
	})
}

// Checkpoint is a signed statement of the history's size and root hash.
type Checkpoint struct {
	Origin string
	Size   int64
	Hash   tlog.Hash
}

// Text returns the checkpoint body (C2SP tlog-checkpoint).
func (c Checkpoint) Text() string {
	return fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Hash[:]))
}

// Origin returns the checkpoint origin line of this database.
func (s *Store) Origin() (string, error) {
	id, err := s.ID()
	if err != nil {
		return "", err
	}
	return "etdi.dev/pins/" + id, nil
}

// SignCheckpoint verifies the history and returns a note signed by signer
// stating its size and root hash.
func (s *Store) SignCheckpoint(signer note.Signer) ([]byte, *Checkpoint, error) {
	t, err := s.VerifyLog()
	if err != nil {
		return nil, nil, err
	}
	origin, err := s.Origin()
	if err != nil {
		return nil, nil, err
	}
	c := &Checkpoint{Origin: origin, Size: t.Size, Hash: t.Hash}
	msg, err := note.Sign(&note.Note{Text: c.Text()}, signer)
	return msg, c, err
}

// OpenCheckpoint checks the signature of a checkpoint note and parses it.
func OpenCheckpoint(msg []byte, v note.Verifier) (*Checkpoint, error) {
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		return nil, fmt.Errorf("checkpoint signature: %w", err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 || lines[len(lines)-1] != "" {
		return nil, errors.New("checkpoint: want origin, size and hash lines")
	}
	if len(lines) != 4 {
		return nil, errors.New("checkpoint: extension lines are not supported")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return nil, fmt.Errorf("checkpoint: bad size %q", lines[1])
	}
	hb, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(hb) != tlog.HashSize || base64.StdEncoding.EncodeToString(hb) != lines[2] {
		return nil, fmt.Errorf("checkpoint: bad hash %q", lines[2])
	}
	if lines[0] == "" {
		return nil, errors.New("checkpoint: empty origin")
	}
	c := &Checkpoint{Origin: lines[0], Size: size}
	copy(c.Hash[:], hb)
	return c, nil
}

// ConsistencyError reports a history that does not extend a checkpoint.
type ConsistencyError struct {
	Checkpoint int64
	Size       int64
	Msg        string
}

func (e *ConsistencyError) Error() string {
	return fmt.Sprintf("history of %d records does not extend the checkpoint of %d records: %s", e.Size, e.Checkpoint, e.Msg)
}

// CheckConsistency proves that the verified tree t extends checkpoint c:
// the first c.Size records are the ones c was made over.
func (s *Store) CheckConsistency(t *Tree, c *Checkpoint) error {
	origin, err := s.Origin()
	if err != nil {
		return err
	}
	if c.Origin != origin {
		return fmt.Errorf("checkpoint is for %q, this database is %q", c.Origin, origin)
	}
	if c.Size > t.Size {
		return &ConsistencyError{c.Size, t.Size, "records were deleted"}
	}
	if c.Size == t.Size {
		if c.Hash != t.Hash {
			return &ConsistencyError{c.Size, t.Size, "records before the checkpoint were rewritten"}
		}
		return nil
	}
	proof, err := tlog.ProveTree(t.Size, c.Size, t.hashes)
	if err != nil {
		return err
	}
	if err := tlog.CheckTree(proof, t.Size, t.Hash, c.Size, c.Hash); err != nil {
		return &ConsistencyError{c.Size, t.Size, "records before the checkpoint were rewritten"}
	}
	return nil
}
