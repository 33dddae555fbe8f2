package pin

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/etdi-dev/etdi/finding"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A machine with the client role of an etcd store (docs/fleets.md#roles) never
// writes the history: etcd refuses it every key under log/ and meta/.
// Its findings and call records go to its own spool entries instead,
//
//	PREFIX/spools/<machine>/<entry id>    a spoolEntry, JSON
//
// and the next transaction of an approver validates them and appends them
// to the history (fold). An entry that does not validate is dropped and
// the drop is recorded in the history; it never stops the fold. The marks
// of call-record spools (call_records.go) are keys of the same bucket without a
// '/', written by approvers only.

// Bounds of the spool entries of etcd stores.
const (
	// MaxSpoolEntry bounds the size of one spool entry; a longer one is
	// dropped. A writer splits its records into entries of this size.
	MaxSpoolEntry = 256 << 10
	// MaxSpoolPending bounds the entries one machine may have waiting for
	// an approver: a writer refuses to spool more, and the fold drops the
	// entries of a machine beyond it.
	MaxSpoolPending = 64
	// foldScan bounds the spool keys one transaction looks at, foldMax
	// the entries it appends and foldPerMachine those of one machine;
	// foldBytes bounds the bytes of entries it reads. More is left for
	// the next transaction.
	foldScan       = 1024
	foldMax        = 32
	foldPerMachine = 8
	foldBytes      = 4 << 20
)

// spoolEntry is one entry of a machine's spool.
type spoolEntry struct {
	// V is the format, 1.
	V int `json:"v"`
	// User is the login name of the writer (Record.User).
	User string `json:"user,omitempty"`
	// Spool and Seq: the entry's call records end sequence number Seq
	// of the call-record spool Spool (call_records.go); End: that spool is done.
	Spool string `json:"spool,omitempty"`
	Seq   uint64 `json:"seq,omitempty"`
	End   bool   `json:"end,omitempty"`
	// Records are findings and call records, without index or prev.
	Records []Record `json:"records"`
}

// validMachine says whether name can name a spool: 1 to 64 letters,
// digits, '.', '_' and '-', not "." or "..".
func validMachine(name string) bool {
	if name == "" || len(name) > 64 || name == "." || name == ".." {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// parseSpoolEntry decodes and validates an entry: JSON of §2's profile
// with no unknown member, format 1, a user of at most 256 bytes without
// control characters, at least one record, and only records a client may
// write: findings and call records that carry no index, prev, machine,
// user or approval fields. Records of an entry with a spool id are calls.
func parseSpoolEntry(data []byte) (*spoolEntry, error) {
	if len(data) > MaxSpoolEntry {
		return nil, fmt.Errorf("%d bytes, over %d", len(data), MaxSpoolEntry)
	}
	if err := strictJSON(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var e spoolEntry
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("not a spool entry: %v", err)
	}
	if dec.More() {
		return nil, errors.New("data after the entry")
	}
	if err := checkSpoolHeader(&e); err != nil {
		return nil, err
	}
	for i := range e.Records {
		if bad := spoolRecordProblem(&e, &e.Records[i]); bad != "" {
			return nil, fmt.Errorf("record %d: %s", i, bad)
		}
	}
	return &e, nil
}

// checkSpoolHeader refuses an entry of another format, with a bad user
// name or spool id, a sequence number without a spool id, or no records.
func checkSpoolHeader(e *spoolEntry) error {
	switch {
	case e.V != 1:
		return fmt.Errorf("format %d, want 1", e.V)
	case len(e.User) > 256 || hasControl(e.User):
		return errors.New("bad user name")
	case len(e.Spool) > 256 || hasControl(e.Spool) || strings.Contains(e.Spool, "/"):
		return errors.New("bad spool id")
	case e.Spool == "" && (e.Seq != 0 || e.End):
		return errors.New("a sequence number without a spool id")
	case len(e.Records) == 0 && !e.End:
		return errors.New("no records")
	}
	return nil
}

// spoolRecordProblem says why record r of entry e is not one a client
// may write, or "": a finding of error or warning severity, or a call in
// a spool of calls, carrying neither the history's own fields nor those
// of an approval.
func spoolRecordProblem(e *spoolEntry, r *Record) string {
	switch {
	case r.Index != 0 || r.Prev != "" || r.Machine != "" || r.User != "":
		return "carries index, prev, machine or user"
	case r.Signer != nil || r.KeyID != "" || len(r.Permissions) > 0 || len(r.Scopes) > 0 || r.Replaced != "" || r.Served != "" || r.ServedAt != "":
		return "carries fields of an approval"
	case e.Spool != "" && r.Type != RecordCall:
		return fmt.Sprintf("a %q record in a spool of calls", r.Type)
	case r.Type == RecordFinding:
		return findingRecordProblem(r)
	case r.Type == RecordCall:
		if r.Kind != "" || r.Severity != "" {
			return "a call with the fields of a finding"
		}
		return ""
	default:
		return fmt.Sprintf("a %q record: a client appends findings and calls only", r.Type)
	}
}

// findingRecordProblem says why finding record r is not one a client may
// write (a severity other than error or warning, the fields of a call),
// or "".
func findingRecordProblem(r *Record) string {
	bad := ""
	if r.Severity != string(finding.Error) && r.Severity != string(finding.Warning) {
		bad = fmt.Sprintf("a finding of severity %q", r.Severity)
	}
	if r.Arguments != "" || r.Outcome != "" || r.DurationMicros != 0 || r.Decision != "" || len(r.Policies) > 0 || r.Answer != "" {
		bad = "a finding with the fields of a call"
	}
	return bad
}

// strictJSON refuses JSON that is not one value, or that has a duplicate
// member at any depth.
func strictJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var walk func(depth int) error
	walk = func(depth int) error {
		if depth > 64 {
			return errors.New("nested too deeply")
		}
		t, err := dec.Token()
		if err != nil {
			return err
		}
		d, ok := t.(json.Delim)
		if !ok {
			return nil
		}
		seen := map[string]bool{}
		for dec.More() {
			if d == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				ks, _ := k.(string)
				if seen[ks] {
					return fmt.Errorf("duplicate member %q", ks)
				}
				seen[ks] = true
			}
			if err := walk(depth + 1); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	if err := walk(0); err != nil {
		return fmt.Errorf("not JSON of the profile: %v", err)
	}
	if _, err := dec.Token(); err == nil {
		return errors.New("data after the entry")
	}
	return nil
}

// pendingEntry is a spool key read by a fold: its name relative to the
// prefix, its value (nil: not read) and the revision to compare.
type pendingEntry struct {
	key     string // "spools/<machine>/<id>"
	machine string
	val     []byte
	mod     int64
	drop    string // why it is dropped ("" to fold it)
}

// pendingSpools reads what the next transaction folds: at most foldScan
// keys, and the values of at most foldMax entries (foldPerMachine of a
// machine, foldBytes in all). The entries of a machine beyond
// MaxSpoolPending, and keys that name no machine, are dropped unread.
func (e *etcdBackend) pendingSpools(ctx context.Context) ([]pendingEntry, error) {
	base := e.root + string(bSpools) + "/"
	rctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	resp, err := e.cli.Get(rctx, base, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(foldScan))
	cancel()
	if err != nil {
		return nil, err
	}
	var out []pendingEntry
	perMachine := map[string]int{}
	read, bytesRead := 0, 0
	for _, kv := range resp.Kvs {
		rel := strings.TrimPrefix(string(kv.Key), e.root)
		m, id, ok := strings.Cut(strings.TrimPrefix(rel, string(bSpools)+"/"), "/")
		if !ok {
			continue // a mark
		}
		p := pendingEntry{key: rel, machine: m, mod: kv.ModRevision}
		perMachine[m]++
		switch n := perMachine[m]; {
		case !validMachine(m) || id == "":
			p.machine, p.drop = "", "not a spool entry of a machine"
		case n > MaxSpoolPending:
			p.drop = fmt.Sprintf("more than %d entries wait", MaxSpoolPending)
		case n > foldPerMachine || read >= foldMax || bytesRead >= foldBytes:
			continue // the next transaction's
		default:
			rctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
			g, err := e.cli.Get(rctx, string(kv.Key))
			cancel()
			if err != nil {
				return nil, err
			}
			if len(g.Kvs) == 0 {
				continue // folded meanwhile
			}
			read++
			bytesRead += len(g.Kvs[0].Value)
			p.val, p.mod = g.Kvs[0].Value, g.Kvs[0].ModRevision
		}
		out = append(out, p)
	}
	return out, nil
}

// fold appends the valid entries of pending to the history inside tx, in
// their order, sets or ends the marks of their call-record spools, deletes
// every entry, and records what it dropped: one finding record per
// machine, naming the entries and why.
func fold(tx *kvTx, pending []pendingEntry) error {
	if len(pending) == 0 {
		return nil
	}
	sp, err := tx.CreateBucketIfNotExists(bSpools)
	if err != nil {
		return err
	}
	dropped := map[string][]string{}
	var order []string
	for _, p := range pending {
		// Deleted in etcd only: no snapshot holds an entry (apply),
		// and its key may be longer than a bbolt key.
		if tx.w != nil {
			tx.w.record(string(bSpools), []byte(strings.TrimPrefix(p.key, string(bSpools)+"/")), nil)
		}
		if p.drop == "" {
			var ent *spoolEntry
			if ent, err = parseSpoolEntry(p.val); err != nil {
				p.drop = err.Error()
			} else if err := foldEntry(tx, sp, p.machine, ent); err != nil {
				return err
			}
		}
		if p.drop != "" {
			if _, ok := dropped[p.machine]; !ok {
				order = append(order, p.machine)
			}
			dropped[p.machine] = append(dropped[p.machine], fmt.Sprintf("%q: %s", p.key, p.drop))
		}
	}
	for _, m := range order {
		msg := fmt.Sprintf("dropped %d spool entries: %s", len(dropped[m]), strings.Join(dropped[m], "; "))
		if len(msg) > 4096 {
			msg = msg[:4096] + "…"
		}
		rec := Record{Type: RecordFinding, Kind: "spool_dropped", Severity: string(finding.Warning), Message: msg}
		if _, err := appendBoundAs(tx, rec, m, ""); err != nil {
			return err
		}
	}
	return nil
}

// foldEntry appends one valid entry of machine's spool.
func foldEntry(tx *kvTx, sp *kvBucket, machine string, ent *spoolEntry) error {
	if ent.Spool != "" {
		mark, err := spoolMark(sp, ent.Spool)
		if err != nil {
			return err
		}
		if ent.Seq == 0 || ent.Seq > mark {
			for _, r := range ent.Records {
				if _, err := appendBoundAs(tx, r, machine, ent.User); err != nil {
					return err
				}
			}
			if ent.Seq > mark {
				if err := sp.Put([]byte(ent.Spool), u64(ent.Seq)); err != nil {
					return err
				}
			}
		}
		if ent.End {
			return sp.Delete([]byte(ent.Spool))
		}
		return nil
	}
	for _, r := range ent.Records {
		if _, err := appendBoundAs(tx, r, machine, ent.User); err != nil {
			return err
		}
	}
	return nil
}

// spoolWrite writes records to this machine's spool: in entries of at
// most MaxSpoolEntry bytes, put in one etcd transaction, the last one
// carrying seq and end. It returns the etcd revision of the write.
func (e *etcdBackend) spoolWrite(spool string, seq uint64, end bool, recs []Record) (uint64, error) {
	if e.offline != nil {
		return 0, fmt.Errorf("pin store %s: %w (%v)", e.loc, ErrOffline, e.offline)
	}
	if !validMachine(e.opts.Machine) {
		return 0, fmt.Errorf("pin store %s: the machine name %q cannot name a spool: set $ETDI_MACHINE to 1-64 letters, digits, '.', '_' or '-'", e.loc, e.opts.Machine)
	}
	// Split into entries that fit.
	var entries []spoolEntry
	cur := spoolEntry{V: 1, User: e.opts.User, Spool: spool}
	size := 0
	for _, r := range recs {
		r.Index, r.Prev, r.Machine, r.User = 0, "", "", ""
		b, err := json.Marshal(r)
		if err != nil {
			return 0, err
		}
		if len(b)+512 > MaxSpoolEntry {
			return 0, fmt.Errorf("pin store %s: a record of %d bytes does not fit a spool entry", e.loc, len(b))
		}
		if size+len(b)+512 > MaxSpoolEntry && len(cur.Records) > 0 {
			entries = append(entries, cur)
			cur = spoolEntry{V: 1, User: e.opts.User, Spool: spool}
			size = 0
		}
		cur.Records = append(cur.Records, r)
		size += len(b) + 1
	}
	cur.Seq, cur.End = seq, end
	entries = append(entries, cur)

	base := e.root + string(bSpools) + "/" + e.opts.Machine + "/"
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.Timeout)
	defer cancel()
	n, err := e.cli.Get(ctx, base, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, e.writeError(err)
	}
	if int(n.Count)+len(entries) > MaxSpoolPending {
		return 0, fmt.Errorf("pin store %s: %d entries of machine %s wait for an approver to append them to the history; nothing more is spooled until one does (any approval or revocation appends them)", e.loc, n.Count, e.opts.Machine)
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	stamp := fmt.Sprintf("%016x-%s", uint64(time.Now().UnixNano()), hex.EncodeToString(rnd[:]))
	var ops []clientv3.Op
	for i, ent := range entries {
		b, err := json.Marshal(ent)
		if err != nil {
			return 0, err
		}
		ops = append(ops, clientv3.OpPut(fmt.Sprintf("%s%s-%04d", base, stamp, i), string(b)))
	}
	resp, err := e.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return 0, e.writeError(err)
	}
	return uint64(resp.Header.Revision), nil
}

// ownPending returns this machine's spool entries waiting in etcd, in
// order; an entry that does not validate is left out.
func (e *etcdBackend) ownPending() ([]*spoolEntry, error) {
	if e.offline != nil || !validMachine(e.opts.Machine) {
		return nil, nil
	}
	base := e.root + string(bSpools) + "/" + e.opts.Machine + "/"
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.Timeout)
	defer cancel()
	resp, err := e.cli.Get(ctx, base, clientv3.WithPrefix(), clientv3.WithLimit(MaxSpoolPending+1))
	if err != nil {
		if pe := e.permission(err); pe != nil {
			return nil, pe
		}
		return nil, err
	}
	var out []*spoolEntry
	for _, kv := range resp.Kvs {
		if ent, err := parseSpoolEntry(kv.Value); err == nil {
			out = append(out, ent)
		}
	}
	return out, nil
}

// spooled reports whether writes of this store go to its machine's spool:
// etcd refused it a write of the history before.
func (s *Store) spooled() bool { return s.remote != nil && s.remote.client }

// clientFallback says whether err is etcd refusing a write of the history
// for the client role; it remembers that the machine is a client.
func (s *Store) clientFallback(err error) bool {
	if s.remote == nil || !errors.Is(err, ErrPermission) {
		return false
	}
	s.remote.client = true
	return true
}

// recordSpooled is Record for a client: the findings the history and this
// machine's waiting entries do not hold yet go to its spool.
func (s *Store) recordSpooled(o *Observation, by string, extra []finding.Finding) (*Comparison, error) {
	c, todo, err := s.Judge(o, extra...)
	if err != nil || len(todo) == 0 {
		return c, err
	}
	pending, err := s.remote.ownPending()
	if err != nil {
		return nil, err
	}
	waiting := map[findingKey]int{}
	for _, ent := range pending {
		for i := range ent.Records {
			if r := &ent.Records[i]; r.Type == RecordFinding {
				waiting[keyOfRecord(r)]++
			}
		}
	}
	var recs []Record
	for _, f := range todo {
		k := keyOfFinding(o.Server, &f)
		if waiting[k] > 0 {
			waiting[k]--
			continue
		}
		recs = append(recs, findingRecord(o, &f, by))
	}
	if len(recs) == 0 {
		return c, nil
	}
	if _, err := s.remote.spoolWrite("", 0, false, recs); err != nil {
		return nil, err
	}
	c.Recorded = len(recs)
	return c, nil
}

// spooledMark is SpoolMark for an etcd store: the mark, or the sequence
// number of this machine's latest waiting entry of the spool when higher.
func (s *Store) spooledMark(spool string, mark uint64) (uint64, error) {
	pending, err := s.remote.ownPending()
	if err != nil {
		return 0, err
	}
	for _, ent := range pending {
		if ent.Spool == spool {
			mark = max(mark, ent.Seq)
		}
	}
	return mark, nil
}
