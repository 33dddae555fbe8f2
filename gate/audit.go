package gate

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/filelock"
	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/policy"
)

// Call outcomes, in call records.
const (
	OutcomeForwarded = "forwarded"
	OutcomeBlocked   = "blocked"
	OutcomeError     = "error"
)

// flushAt is the number of call records that are written at once without
// waiting for FlushEvery.
const flushAt = 1024

// callAudit records the calls of one gate (docs/gate.md#runtime-gate, "Call records").
// Each record is first appended to a spool file of the gate's own beside
// the pin database (<pins>.calls/<id>.jsonl), then, batched, to the
// history in one transaction, which also records how far the spool is
// done; the spool then keeps only what is not yet in the history. A gate
// holds a lock on its <id>.lock while it runs: the spool of a gate whose
// lock is free was left by a gate that ended without finishing it (killed),
// and the next gate appends what it holds to the history, exactly once.
// A nil *callAudit records nothing.
type callAudit struct {
	opts  guard.Options
	dir   string
	id    string
	lock  *os.File
	every time.Duration

	mu      sync.Mutex
	spool   *os.File // opened for appending, again after each rewrite
	seq     uint64
	pending []spooled // in the spool, not yet in the history
	err     error     // the first failure to write

	kick chan struct{}
	quit chan struct{}
	done chan struct{}

	// own are the transactions the flushes committed (the gate need not
	// compare its pins again for those); ownMu guards it.
	ownMu sync.Mutex
	own   map[uint64]bool
}

func (a *callAudit) ownTx(txid uint64) {
	a.ownMu.Lock()
	defer a.ownMu.Unlock()
	if a.own == nil || len(a.own) > 4096 {
		a.own = map[uint64]bool{}
	}
	a.own[txid] = true
}

// onlyOwn reports whether every transaction after from up to to was a
// flush's.
func (a *callAudit) onlyOwn(from, to uint64) bool {
	if a == nil || to < from || to-from > 64 {
		return false
	}
	a.ownMu.Lock()
	defer a.ownMu.Unlock()
	for tx := from + 1; tx <= to; tx++ {
		if !a.own[tx] {
			return false
		}
	}
	return true
}

// spooled is one line of a spool.
type spooled struct {
	Seq    uint64     `json:"seq"`
	Record pin.Record `json:"record"`
}

// callRecord is a call forwarded to the server, waiting for its answer.
type callRecord struct {
	rec   pin.Record
	start time.Time
}

func spoolDir(pins string) string { return pins + ".calls" }

// startAudit opens the gate's spool and appends to the history what
// spools of gates that are gone left behind.
func startAudit(opts Options) (*callAudit, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	a := &callAudit{opts: opts.Options, dir: spoolDir(opts.Options.LocalPins()), id: time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(rnd[:]),
		every: opts.FlushEvery, kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	if err := os.MkdirAll(a.dir, 0o700); err != nil {
		return nil, err
	}
	// The lock file appears under its name already locked (created and
	// locked under a temporary name, then renamed): a gate that starts at
	// the same moment never finds it free and takes it for a killed one's.
	lock, err := os.CreateTemp(a.dir, ".lock-*")
	if err != nil {
		return nil, err
	}
	if err := filelock.TryLock(lock); err != nil {
		lock.Close()
		os.Remove(lock.Name())
		return nil, fmt.Errorf("locking the call spool: %w", err)
	}
	if err := os.Rename(lock.Name(), filepath.Join(a.dir, a.id+".lock")); err != nil {
		lock.Close()
		os.Remove(lock.Name())
		return nil, err
	}
	a.lock = lock
	if err := recoverSpools(opts.Options, a.dir, a.id); err != nil {
		a.lock.Close()
		os.Remove(lock.Name())
		return nil, fmt.Errorf("appending the calls of an earlier etdi run: %w", err)
	}
	go a.flusher()
	return a, nil
}

// recordedName is the tool name a call record holds: a name longer than a
// tool name may be (one the host asked for that no server listed) is cut,
// with the SHA-256 of the whole of it.
func recordedName(tool string) string {
	if len(tool) <= etdi.MaxNameLen {
		return tool
	}
	sum := sha256.Sum256([]byte(tool))
	cut := tool[:128]
	for len(cut) > 0 && !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return cut + "...(sha256:" + hex.EncodeToString(sum[:]) + ")"
}

// begin starts the record of a call forwarded to the server, with what
// the policies decided of it.
func (a *callAudit) begin(server, tool, digest string, args []byte, p policyOutcome) *callRecord {
	if a == nil {
		return nil
	}
	return &callRecord{start: time.Now(), rec: pin.Record{Type: pin.RecordCall, Server: server, Tool: recordedName(tool), Digest: digest,
		Arguments: policy.ArgumentsDigest(args), By: a.opts.By, Decision: p.decision, Policies: p.policies, Answer: string(p.answer)}}
}

// finish records the answer to a call (m nil: none came, the session
// ended).
func (a *callAudit) finish(c *callRecord, m *mcpclient.Message) {
	if a == nil || c == nil {
		return
	}
	c.rec.Time = c.start.UTC()
	c.rec.DurationMicros = max(time.Since(c.start).Microseconds(), 1)
	c.rec.Outcome = OutcomeForwarded
	switch {
	case m == nil:
		c.rec.Outcome, c.rec.Message = OutcomeError, "the session ended before the server answered"
	case m.Error:
		c.rec.Outcome, c.rec.Message = OutcomeError, "the server answered with error "+clipText(m.ErrCode)
	}
	a.add(c.rec)
}

// blocked records a call the gate refused.
func (a *callAudit) blocked(server, tool, digest string, args []byte, kind string, p policyOutcome) {
	if a == nil {
		return
	}
	a.add(pin.Record{Type: pin.RecordCall, Time: time.Now().UTC(), Server: server, Tool: recordedName(tool), Digest: digest,
		Arguments: policy.ArgumentsDigest(args), Outcome: OutcomeBlocked, Kind: kind, By: a.opts.By,
		Decision: p.decision, Policies: p.policies, Answer: string(p.answer)})
}

// add appends a record to the spool (one write) and to the batch.
func (a *callAudit) add(r pin.Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	s := spooled{a.seq, r}
	line, err := json.Marshal(s)
	if err == nil && a.spool == nil {
		a.spool, err = os.OpenFile(a.spoolPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	}
	if err == nil {
		_, err = a.spool.Write(append(line, '\n'))
	}
	if err != nil && a.err == nil {
		a.err = fmt.Errorf("writing the call spool: %w", err)
	}
	a.pending = append(a.pending, s)
	if len(a.pending) >= flushAt {
		select {
		case a.kick <- struct{}{}:
		default:
		}
	}
}

func (a *callAudit) spoolPath() string { return filepath.Join(a.dir, a.id+".jsonl") }

// replaceFile replaces path with data through a temporary file and a
// rename: a process killed meanwhile leaves the old file or the new one.
// It does not sync: the spool guards against a killed process, whose
// writes the system keeps, not against a power cut.
func replaceFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".spool.tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // no-op after the rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func (a *callAudit) flusher() {
	defer close(a.done)
	t := time.NewTicker(a.every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-a.kick:
		case <-a.quit:
			return
		}
		a.flush()
	}
}

// flush appends the pending records to the history and rewrites the spool
// with what came in meanwhile. The database is opened only for the write.
func (a *callAudit) flush() error {
	a.mu.Lock()
	batch := a.pending
	a.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	recs := make([]pin.Record, len(batch))
	for i, s := range batch {
		recs[i] = s.Record
	}
	last := batch[len(batch)-1].Seq
	err := a.opts.WithPins(false, func(s *pin.Store) error {
		txid, err := s.AppendCalls(a.id, last, recs)
		if err == nil {
			a.ownTx(txid)
		}
		return err
	})
	if err != nil {
		a.mu.Lock()
		if a.err == nil {
			a.err = fmt.Errorf("appending call records to the history: %w", err)
		}
		a.mu.Unlock()
		return err // they stay pending and spooled: tried again
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pending = a.pending[len(batch):]
	// The spool keeps only what the history lacks; replaced atomically, so
	// a gate killed meanwhile leaves the old one (its mark says what of it
	// is done) or the new one.
	var buf bytes.Buffer
	for _, s := range a.pending {
		line, _ := json.Marshal(s)
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if err := replaceFile(a.spoolPath(), buf.Bytes()); err != nil && a.err == nil {
		a.err = fmt.Errorf("rewriting the call spool: %w", err)
	}
	if a.spool != nil {
		a.spool.Close() // the file replaced: the next record opens the new one
		a.spool = nil
	}
	return nil
}

// stop writes what is left and removes the spool: every record is in the
// history. A failure leaves the spool for the next gate to append.
func (a *callAudit) stop() error {
	if a == nil {
		return nil
	}
	close(a.quit)
	<-a.done
	err := a.flush()
	a.mu.Lock()
	left, werr := len(a.pending), a.err
	a.mu.Unlock()
	if a.spool != nil {
		a.spool.Close()
		a.spool = nil
	}
	if err == nil && left == 0 {
		os.Remove(a.spoolPath())
		if err := a.opts.WithPins(false, func(s *pin.Store) error { return s.EndSpool(a.id) }); err == nil {
			a.lock.Close()
			os.Remove(filepath.Join(a.dir, a.id+".lock"))
			return nil
		}
	}
	a.lock.Close() // the spool stays, for the next gate
	if err == nil {
		err = werr
	}
	if err == nil {
		err = errors.New("call records are left in the spool")
	}
	return fmt.Errorf("%w; they stay in %s and are appended by the next etdi run", err, a.dir)
}

// recoverSpools appends to the history the call records of spools whose
// gate is gone (its lock is free), each exactly once, and removes them.
func recoverSpools(opts guard.Options, dir, own string) error {
	locks, err := filepath.Glob(filepath.Join(dir, "*.lock"))
	if err != nil {
		return err
	}
	for _, path := range locks {
		id := strings.TrimSuffix(filepath.Base(path), ".lock")
		if id == own {
			continue
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			continue // removed meanwhile
		}
		if err := filelock.TryLock(f); err != nil {
			f.Close()
			continue // its gate runs
		}
		err = recoverSpool(opts, dir, id)
		if err == nil {
			os.Remove(filepath.Join(dir, id+".jsonl"))
			os.Remove(path)
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// recoverSpool appends the records of one spool that its mark says are
// not in the history yet. A line cut short by a kill is skipped.
func recoverSpool(opts guard.Options, dir, id string) error {
	data, err := os.ReadFile(filepath.Join(dir, id+".jsonl"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var mark uint64
	if err := opts.WithPins(false, func(s *pin.Store) error {
		var err error
		mark, err = s.SpoolMark(id)
		return err
	}); err != nil {
		return err
	}
	var recs []pin.Record
	last := mark
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		var s spooled
		if json.Unmarshal(line, &s) != nil || s.Record.Type != pin.RecordCall || s.Seq <= mark {
			continue // a line cut short by a kill, or one appended already
		}
		recs = append(recs, s.Record)
		last = max(last, s.Seq)
	}
	return opts.WithPins(false, func(s *pin.Store) error {
		if len(recs) > 0 {
			if _, err := s.AppendCalls(id, last, recs); err != nil {
				return err
			}
		}
		return s.EndSpool(id)
	})
}
