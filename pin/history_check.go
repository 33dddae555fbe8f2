package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/etdi-dev/etdi"
	"golang.org/x/mod/sumdb/tlog"
)

// replayed is the state the approve and revoke records imply: for each
// pin key and revocation key, the latest record about it.
type replayed struct {
	pins    map[string][]liveApproval // pinKey -> approvals left, in order
	revoked map[string]int64          // Revocation.key -> record
	// recs are the stored records by index, valid for the transaction.
	recs [][]byte
	// stored are the stored hashes by stored hash index.
	stored [][]byte
	// briefs hold what the approve and revoke records say, by index.
	briefs []brief
	// mem, when set, holds every stored hash, recomputed from recs and
	// checked against the stored ones by verifyLog in this transaction.
	mem memHashes
}

// brief is what an approve or revoke record says, kept instead of a
// decoded Record for each of 100,000 records.
type brief struct {
	ok       bool // the record was decoded and is an approval of a tool or a revocation
	approval bool // it is an approve or reapprove record
	index    int64
	// ref is the pin key of an approval, the revocation key of a
	// revocation.
	ref string
	// sum is the approvalSum of an approval.
	sum [sha256.Size]byte
	// digest is what an approval approves or a revocation of one
	// variant revokes; variant says the approval adds a variant; pin is
	// the pin key a revocation of one variant concerns.
	digest  string
	variant bool
	pin     string
	// lifted says the record lifts the revocation ref (RecordUnrevoke).
	lifted bool
}

// approvalSum is the SHA-256 of what an approval approves, each field
// preceded by its length: two sums are equal exactly when pinDisagrees
// finds nothing to say about a record that is an approval and a pin (or
// SHA-256 has a collision, which the history's own hashes exclude too).
func approvalSum(server, item, tool, version, digest string, signer *SignerID, perms []etdi.Permission, scopes []string, served, servedAt string) [sha256.Size]byte {
	var buf [256]byte
	b := buf[:0]
	field := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	field(server)
	field(item)
	field(tool)
	field(version)
	field(digest)
	if signer == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		field(signer.Kind)
		field(signer.ID)
	}
	b = binary.AppendUvarint(b, uint64(len(perms)))
	for _, p := range perms {
		field(p.Scope)
		field(p.Description)
	}
	// The scopes given to an unsigned tool (the Cedar rules read them).
	b = binary.AppendUvarint(b, uint64(len(scopes)))
	for _, sc := range scopes {
		field(sc)
	}
	if served != "" { // absent from approvals made before it was recorded
		field(served)
	}
	if servedAt != "" { // absent from approvals made before it was recorded
		b = append(b, 0xff)
		field(servedAt)
	}
	return sha256.Sum256(b)
}

// parallel calls fn on consecutive chunks of [0, n) from one goroutine
// per CPU and returns when all are done.
func parallel(n, chunk int, fn func(lo, hi int)) {
	w := runtime.GOMAXPROCS(0)
	if w < 2 || n <= chunk {
		fn(0, n)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range w {
		wg.Go(func() {
			for {
				lo := int(next.Add(int64(chunk))) - chunk
				if lo >= n {
					return
				}
				fn(lo, min(lo+chunk, n))
			}
		})
	}
	wg.Wait()
}

// valuesByIndex returns the values of b at keys u64(0) .. u64(n-1) as Get
// would return them (nil if absent), walking a cursor instead of searching
// the tree for each key.
func valuesByIndex(b *kvBucket, n int64) [][]byte {
	out := make([][]byte, n)
	c := b.Cursor()
	k, v := c.First()
	for i := int64(0); i < n; i++ {
		key := u64(uint64(i))
		if !bytes.Equal(k, key) {
			k, v = c.Seek(key)
		}
		if bytes.Equal(k, key) {
			out[i] = v // nil for a nested bucket, as Get returns
			k, v = c.Next()
		}
	}
	return out
}

// hashed is what the hashing half of verifyLog found.
type hashed struct {
	mem   memHashes
	prevs []tlog.Hash // tree hash of the first i records
	// fail is the first record whose hashes are wrong (-1 if none); err
	// says how, and late whether it was found after the prev check.
	fail int64
	err  error
	late bool
}

// hashRecords recomputes the stored hashes of recs and compares them with
// stored (indexed by stored hash index), stopping at the first mismatch.
func hashRecords(recs, stored [][]byte) *hashed {
	n := int64(len(recs))
	h := &hashed{mem: make(memHashes, 0, tlog.StoredHashCount(n)), prevs: make([]tlog.Hash, n), fail: -1}
	for i := int64(0); i < n; i++ {
		hs, err := tlog.StoredHashes(i, recs[i], h.mem)
		if err != nil {
			h.fail, h.err = i, err
			return h
		}
		base := tlog.StoredHashIndex(0, i)
		if !bytes.Equal(storedAt(stored, base), hs[0][:]) {
			h.fail, h.err = i, &LogError{i, "changed after it was written (its hash does not match)"}
			return h
		}
		if h.prevs[i], err = tlog.TreeHash(i, h.mem); err != nil {
			h.fail, h.err = i, err
			return h
		}
		for k := 1; k < len(hs); k++ {
			if !bytes.Equal(storedAt(stored, base+int64(k)), hs[k][:]) {
				h.fail, h.err, h.late = i, &LogError{i, fmt.Sprintf("stored tree hash %d is wrong", base+int64(k))}, true
				return h
			}
		}
		h.mem = append(h.mem, hs...)
	}
	return h
}

func storedAt(stored [][]byte, i int64) []byte {
	if i < int64(len(stored)) {
		return stored[i]
	}
	return nil
}

// replayable reports whether rec is an approval of a tool or a revocation,
// the records that justify pins and revocations.
func replayable(rec *Record) bool {
	switch rec.Type {
	case RecordApprove, RecordReapprove:
		return rec.Tool != ""
	case RecordRevoke, RecordUnrevoke:
		return true
	}
	return false
}

// history is the stored history as read inside one transaction.
type history struct {
	n       int64
	recs    [][]byte // by index, up to the first missing one
	stored  [][]byte // stored hashes by stored hash index
	beyond  bool     // a record is stored at index n
	nHashes int64    // how many stored hashes there are
}

// readStored collects the history's stored values with cursors; the
// slices stay valid for the transaction and are safe to read from any
// goroutine, unlike the transaction.
func readStored(tx *kvTx, check bool) *history {
	lb := tx.Bucket(bLog)
	records, hashes := lb.Bucket(bRecords), lb.Bucket(bHashes)
	h := &history{n: logSize(tx)}
	h.recs = valuesByIndex(records, h.n)
	for i, d := range h.recs {
		if d == nil {
			h.recs = h.recs[:i]
			break
		}
	}
	h.stored = valuesByIndex(hashes, tlog.StoredHashCount(h.n))
	if check {
		h.beyond = records.Get(u64(uint64(h.n))) != nil
		h.nHashes = int64(hashes.KeyN())
	}
	return h
}

// head is the index and prev hash of a record, when checked; a prev of
// another length than a base64 hash cannot match and is kept empty.
type head struct {
	index   int64
	prev    [44]byte
	prevLen int
}

// check refuses record i, of head hd, when it holds another index, when
// its hashes (h) are wrong, or when its prev is not the tree hash of the
// records before it. b64 is a buffer.
func (hd *head) check(i int64, h *hashed, b64 *[44]byte) error {
	if hd.index != i {
		return &LogError{i, fmt.Sprintf("holds record %d (records were reordered)", hd.index)}
	}
	if h.fail == i && !h.late {
		return h.err
	}
	base64.StdEncoding.Encode(b64[:], h.prevs[i][:])
	if hd.prevLen != len(b64) || hd.prev != *b64 {
		return &LogError{i, "was written after a different history (records before it were changed)"}
	}
	if h.fail == i {
		return h.err
	}
	return nil
}

// briefOf is the brief of replayable record rec.
func briefOf(rec *Record) brief {
	br := brief{ok: true, index: rec.Index}
	switch rec.Type {
	case RecordApprove, RecordReapprove:
		br.approval, br.ref = true, string(pinKeyOf(rec.Server, rec.Item, rec.Tool))
		br.sum = approvalSum(rec.Server, rec.Item, rec.Tool, rec.Version, rec.Digest, rec.Signer, rec.Permissions, rec.Scopes, rec.Served, rec.ServedAt)
		br.digest, br.variant = rec.Digest, rec.Variant
	case RecordRevoke:
		r := revocationOf(rec)
		br.ref = string(r.key())
		if r.Digest != "" && r.KeyID == "" {
			br.digest, br.pin = r.Digest, string(pinKeyOf(rec.Server, rec.Item, rec.Tool))
		}
	case RecordUnrevoke:
		r := revocationOf(rec)
		br.ref, br.lifted = string(r.key()), true
	}
	return br
}

// apply replays the brief br of record i.
func (st *replayed) apply(i int64, br *brief) {
	switch {
	case !br.ok:
	case br.approval:
		st.pins[br.ref] = approved(st.pins[br.ref], i, br.digest, br.variant)
	case br.lifted:
		delete(st.revoked, br.ref)
	default:
		st.revoked[br.ref] = i
		if br.pin != "" {
			if st.pins[br.pin] = dropped(st.pins[br.pin], br.digest); len(st.pins[br.pin]) == 0 {
				delete(st.pins, br.pin)
			}
		}
	}
}

// readHistory checks the history read by readStored and replays it. With
// check, it verifies it like VerifyLog (hashing on one goroutine while the
// others decode every record) and returns the tree; without, it only
// decodes the records that may approve or revoke, as a replay needs. It
// does not use the transaction.
func readHistory(hist *history, check bool) (*Tree, *replayed, error) {
	n, recs := hist.n, hist.recs
	avail := int64(len(recs)) // records before the first missing one
	if !check && avail < n {
		return nil, nil, &LogError{avail, "missing (deleted)"}
	}
	var h *hashed
	done := make(chan struct{})
	if check {
		go func() {
			defer close(done)
			h = hashRecords(recs, hist.stored)
		}()
	} else {
		close(done)
	}

	var heads []head
	if check {
		heads = make([]head, avail)
	}
	briefs := make([]brief, avail)
	errs := make([]error, avail)
	parallel(int(avail), 512, func(lo, hi int) {
		var rec Record
		for i := lo; i < hi; i++ {
			if !check && !aboutServer(recs[i], nil) {
				continue // a finding
			}
			rec = Record{}
			if err := json.Unmarshal(recs[i], &rec); err != nil {
				errs[i] = err
				continue
			}
			if check {
				heads[i].index = rec.Index
				if len(rec.Prev) == len(heads[i].prev) {
					heads[i].prevLen = copy(heads[i].prev[:], rec.Prev)
				} else {
					heads[i].prevLen = -1
				}
			}
			if replayable(&rec) {
				briefs[i] = briefOf(&rec)
			}
		}
	})
	<-done

	st := &replayed{pins: make(map[string][]liveApproval, avail), revoked: map[string]int64{}, recs: recs, stored: hist.stored, briefs: briefs}
	var b64 [44]byte
	for i := int64(0); i < avail; i++ {
		if errs[i] != nil {
			return nil, nil, &LogError{i, "unreadable: " + errs[i].Error()}
		}
		if check {
			if err := heads[i].check(i, h, &b64); err != nil {
				return nil, nil, err
			}
		}
		st.apply(i, &briefs[i])
	}
	if !check {
		return nil, st, nil
	}
	if avail < n {
		return nil, nil, &LogError{avail, "missing (deleted)"}
	}
	if hist.beyond {
		return nil, nil, &LogError{n, "lies beyond the recorded history size (appended without hashes)"}
	}
	if hist.nHashes != int64(len(h.mem)) {
		return nil, nil, &LogError{n, fmt.Sprintf("%d stored hashes where %d were expected", hist.nHashes, len(h.mem))}
	}
	root, err := tlog.TreeHash(n, h.mem)
	if err != nil {
		return nil, nil, err
	}
	// Every stored hash is in mem now.
	st.mem, st.stored = h.mem, nil
	return &Tree{Size: n, Hash: root, hashes: h.mem}, st, nil
}

// verifyLog recomputes the history inside tx (see VerifyLog).
func verifyLog(tx *kvTx) (*Tree, error) {
	t, _, err := readHistory(readStored(tx, true), true)
	return t, err
}

// replay reads every record and returns the state it implies. It does
// not check hashes; VerifyLog does.
func replay(tx *kvTx) (*replayed, error) {
	_, st, err := readHistory(readStored(tx, false), false)
	return st, err
}

// bound checks, like boundRecord, that b names a record stored at
// b.Record whose leaf hash and stored leaf hash are b.Leaf, and says how
// it does not, or "". It does not use the transaction.
func (st *replayed) bound(b Binding) string {
	if b.Leaf == "" {
		return "it is bound to no history record"
	}
	want, err := base64.StdEncoding.DecodeString(b.Leaf)
	if err != nil || len(want) != tlog.HashSize {
		return fmt.Sprintf("its leaf hash %q is malformed", b.Leaf)
	}
	if b.Record < 0 || b.Record >= int64(len(st.recs)) {
		return fmt.Sprintf("the history has no record %d", b.Record)
	}
	si := tlog.StoredHashIndex(0, b.Record)
	var leaf tlog.Hash
	if st.mem != nil {
		leaf = st.mem[si] // recomputed from the record by verifyLog
	} else {
		leaf = tlog.RecordHash(st.recs[b.Record])
	}
	if !bytes.Equal(leaf[:], want) {
		return "the record's leaf hash differs from the one bound"
	}
	stored := storedAt(st.stored, si)
	if st.mem != nil {
		stored = leaf[:] // verifyLog found it stored
	}
	if !bytes.Equal(stored, want) {
		return "the stored leaf hash differs from the one bound"
	}
	return ""
}

// record decodes the record at i, bound by a binding that bound accepted,
// and checks that it is in its place.
func (st *replayed) record(i int64) (*Record, string) {
	rec := new(Record)
	if err := json.Unmarshal(st.recs[i], rec); err != nil {
		return nil, "the record is unreadable"
	}
	if rec.Index != i {
		return nil, "the record is misplaced"
	}
	return rec, ""
}

// pinMsg says how the history fails to justify p, or "", like checkPin.
func (st *replayed) pinMsg(p *Pin) string {
	if msg := st.bound(p.Binding); msg != "" {
		return msg
	}
	br := &st.briefs[p.Record]
	if br.ok && br.index == p.Record && br.approval &&
		br.sum == approvalSum(p.Server, p.Item, p.Tool, p.Version, p.Digest, &p.Signer, p.Permissions, p.Scopes, p.Served, p.ServedAt) {
		return ""
	}
	// Something differs: decode the record to say what.
	rec, msg := st.record(p.Record)
	if msg == "" {
		msg = pinDisagrees(rec, p)
	}
	return msg
}

// revocationMsg says how the history fails to justify r, or "".
func (st *replayed) revocationMsg(r *Revocation) string {
	if msg := st.bound(r.Binding); msg != "" {
		return msg
	}
	rec, msg := st.record(r.Record)
	if msg == "" {
		msg = revocationDisagrees(rec, r)
	}
	return msg
}

// pinRead is one pin of the pins bucket, decoded and checked on its own.
type pinRead struct {
	k      []byte
	p      Pin
	err    error  // decoding
	other  bool   // the value is the pin of another key
	skel   string // skeletonOf the tool
	msg    string // how its history records fail to justify it
	defMsg string // definitionDisagrees
}

// pinBatch is how many pins are decoded and checked at once: the pins are
// never all decoded together.
const pinBatch = 2048

// kvBatches sends the keys and values of bucket in batches of n; only
// its goroutine uses the transaction until out is closed.
func kvBatches(b *kvBucket, n int, out chan<- [][2][]byte) {
	defer close(out)
	var kvs [][2][]byte
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		kvs = append(kvs, [2][]byte{k, v})
		if len(kvs) == n {
			out <- kvs
			kvs = nil
		}
	}
	if len(kvs) > 0 {
		out <- kvs
	}
}

// checkPins decodes the pins in batches on every CPU, checks each
// against st on its own, and sends the batches in order. Only its
// goroutine uses tx until out is closed.
func checkPins(tx *kvTx, st *replayed, out chan<- []pinRead) {
	defer close(out)
	in := make(chan [][2][]byte)
	go kvBatches(tx.Bucket(bPins), pinBatch, in)
	for kvs := range in {
		batch := make([]pinRead, len(kvs))
		parallel(len(batch), 128, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				r := &batch[i]
				r.k = kvs[i][0]
				if r.err = json.Unmarshal(kvs[i][1], &r.p); r.err != nil {
					continue
				}
				if r.other = string(r.p.key()) != string(r.k); r.other {
					continue
				}
				r.skel = skeletonOf(r.p.Tool)
				if r.msg = variantShape(&r.p); r.msg != "" {
					continue
				}
				r.defMsg = definitionDisagrees(&r.p)
				r.p.Definition = nil
				r.msg = st.pinMsg(&r.p)
				for j := range r.p.Variants {
					v := r.p.Variants[j].pin()
					r.p.Variants[j].Definition = nil
					if r.defMsg == "" {
						r.defMsg = definitionDisagrees(&v)
					}
					if r.msg == "" {
						if r.msg = st.pinMsg(&v); r.msg != "" {
							r.msg = fmt.Sprintf("its variant %s: %s", v.Digest, r.msg)
						}
					}
				}
			}
		})
		out <- batch
	}
}

// auditIn reads the history and the pins in one pass and returns the
// tree (with check) and the disagreements.
func auditIn(tx *kvTx, check bool) (*Tree, []Disagreement, error) {
	t, st, err := readHistory(readStored(tx, check), check)
	if err != nil {
		return nil, nil, err
	}
	return t, verifyPins(tx, st), nil
}

// VerifyPins replays the approve and revoke records of the history and
// returns every pin and revocation that disagrees with them: edited,
// added, deleted, rolled back to an older approval, or damaged; and every
// entry of the name indexes that the pins do not explain.
func (s *Store) VerifyPins() ([]Disagreement, error) {
	var out []Disagreement
	err := s.view(func(tx *kvTx) error {
		var err error
		_, out, err = auditIn(tx, false)
		return err
	})
	return out, err
}

// Audit verifies the history like [Store.VerifyLog] and then the pins,
// the revocations and the name indexes against it like
// [Store.VerifyPins], in one
// transaction and one pass over the records. A history that does not
// verify is returned as the error, with no tree.
func (s *Store) Audit() (*Tree, []Disagreement, error) {
	var t *Tree
	var out []Disagreement
	err := s.view(func(tx *kvTx) error {
		var err error
		t, out, err = auditIn(tx, true)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return t, out, nil
}

// verifyPins gathers the disagreements of the pins, revocations and name
// indexes with the replayed history.
func verifyPins(tx *kvTx, st *replayed) []Disagreement {
	var out []Disagreement
	add := func(what, ref string, rec int64, msg string) {
		out = append(out, Disagreement{what, ref, rec, msg})
	}
	pinRef := keyRef
	// Entries of st.pins and st.revoked are deleted as they are seen: the
	// ones left are missing.
	names := make(map[string][]string, len(st.pins))
	skels := map[string][]string{}
	batches := make(chan []pinRead, 1)
	go checkPins(tx, st, batches)
	for batch := range batches {
		for i := range batch {
			r := &batch[i]
			k, p := r.k, &r.p
			live, ok := st.pins[string(k)]
			want := int64(-1)
			if ok {
				delete(st.pins, string(k))
				want = live[len(live)-1].index
			}
			switch {
			case r.err != nil:
				add("pin", pinRef(k), want, "the value is damaged: "+r.err.Error())
				continue
			case r.other:
				add("pin", pinRef(k), want, fmt.Sprintf("the value is the pin of %s", p.Ref()))
				continue
			}
			if servers := names[p.Tool]; p.Item == ItemTool && !slices.Contains(servers, p.Server) {
				if len(servers) == 0 && !slices.Contains(skels[r.skel], p.Tool) {
					skels[r.skel] = append(skels[r.skel], p.Tool)
				}
				names[p.Tool] = append(servers, p.Server)
			}
			switch {
			case r.msg != "":
				add("pin", p.Ref(), want, r.msg)
			case r.defMsg != "":
				add("pin", p.Ref(), want, r.defMsg)
			case p.Record != want:
				// The history approves this pin at p.Record, so it holds
				// a latest approval of it.
				add("pin", p.Ref(), want, fmt.Sprintf("it holds the approval of record %d, replaced by record %d", p.Record, want))
			default:
				if msg := variantsDisagree(p, live); msg != "" {
					add("pin", p.Ref(), want, msg)
				}
			}
		}
	}
	for k, live := range st.pins {
		add("pin", pinRef([]byte(k)), live[len(live)-1].index, "approved in the history, missing from the pins")
	}
	verifyRevocations(tx, st, add)
	verifyIndex(tx, bNames, names, "name", add)
	verifyIndex(tx, bSkeletons, skels, "skeleton", add)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].What != out[j].What {
			return out[i].What > out[j].What
		}
		return out[i].Ref < out[j].Ref
	})
	return out
}

// verifyRevocations compares the revocations with those the history
// holds (st.revoked, whose entries it deletes as it sees them) and adds
// each disagreement.
func verifyRevocations(tx *kvTx, st *replayed, add func(what, ref string, rec int64, msg string)) {
	tx.Bucket(bRevoked).ForEach(func(k, v []byte) error {
		want, ok := st.revoked[string(k)]
		if ok {
			delete(st.revoked, string(k))
		} else {
			want = -1
		}
		var r Revocation
		if err := json.Unmarshal(v, &r); err != nil {
			add("revocation", string(k), want, "the value is damaged: "+err.Error())
			return nil
		}
		if string(r.key()) != string(k) {
			add("revocation", string(k), want, fmt.Sprintf("the value is the revocation of %q", r.key()))
			return nil
		}
		if msg := st.revocationMsg(&r); msg != "" {
			add("revocation", string(k), want, msg)
		} else if !ok {
			add("revocation", string(k), -1, "no revocation in the history")
		}
		return nil
	})
	for k, idx := range st.revoked {
		add("revocation", k, idx, "revoked in the history, missing from the revocations")
	}
}

// verifyIndex compares the index bucket, of entries named what, with the
// entries the pins say it holds (want) and adds each disagreement.
// Entries of want are deleted as they are found: the ones left are
// missing from the index.
func verifyIndex(tx *kvTx, bucket []byte, want map[string][]string, what string, add func(what, ref string, rec int64, msg string)) {
	in := make(chan [][2][]byte)
	go kvBatches(tx.Bucket(bucket), 4096, in)
	for kvs := range in {
		// Decode and compare on every CPU; each key is once in the
		// bucket, so each value of want is sorted by one goroutine.
		msgs := make([]string, len(kvs))
		parallel(len(kvs), 512, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				vals, ok := want[string(kvs[i][0])]
				if !ok {
					continue
				}
				var got []string
				if v := kvs[i][1]; v != nil && json.Unmarshal(v, &got) != nil {
					got = nil // damaged: getStrings returns nothing then
				}
				sort.Strings(vals)
				if !slices.Equal(got, vals) {
					msgs[i] = fmt.Sprintf("holds %q, the pins say %q", got, vals)
				}
			}
		})
		for i, kv := range kvs {
			k := string(kv[0])
			if _, ok := want[k]; !ok {
				add("index", what+" "+k, -1, "no pin has it")
				continue
			}
			delete(want, k)
			if msgs[i] != "" {
				add("index", what+" "+k, -1, msgs[i])
			}
		}
	}
	for k, vals := range want {
		sort.Strings(vals)
		add("index", what+" "+k, -1, fmt.Sprintf("holds %q, the pins say %q", []string(nil), vals))
	}
}
