package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"errors"

	"github.com/etdi-dev/etdi"
	berrors "go.etcd.io/bbolt/errors"
	"golang.org/x/mod/sumdb/tlog"
)

// Binding ties a pin or a revocation to the history record that created
// it (docs/storage.md#pin-database): the record's index and its Merkle leaf hash (base64
// of [tlog.RecordHash] of the stored record). Every read checks that the
// record is stored there, hashes to Leaf, says what the value says, and
// is the latest record about it; a value the history does not justify
// is never used.
type Binding struct {
	Record int64  `json:"record"`
	Leaf   string `json:"leaf"`
}

// UnjustifiedError reports a pin or a revocation that the history does
// not justify: edited, added or rolled back outside etdi, or left
// unbound by a migration because no record approves it.
type UnjustifiedError struct {
	// What is "pin" or "revocation"; Ref names it ("server/tool",
	// "server/tool@version" or "key:<key id>").
	What   string
	Ref    string
	Record int64 // the record it claims, -1 if none
	Msg    string
}

func (e *UnjustifiedError) Error() string {
	if e.Record < 0 {
		return fmt.Sprintf("%s %q is not justified by the history: %s", e.What, e.Ref, e.Msg)
	}
	return fmt.Sprintf("%s %q is not justified by history record %d: %s", e.What, e.Ref, e.Record, e.Msg)
}

// damagedError reports a stored value that cannot be read: the caller
// never treats it as absent.
func damagedError(what string, key []byte, err error) error {
	return &CorruptError{Err: fmt.Errorf("%s %q is damaged: %v", what, key, err)}
}

// leafOf returns the binding of the record stored at index.
func leafOf(index int64, data []byte) Binding {
	h := tlog.RecordHash(data)
	return Binding{Record: index, Leaf: base64.StdEncoding.EncodeToString(h[:])}
}

// boundRecord returns the record b names, after checking that it is
// stored at b.Record and that both the record and its stored leaf hash
// match b.Leaf.
func boundRecord(tx *kvTx, b Binding) (*Record, string) { return boundRecordIn(tx, b, nil) }

// boundRecordIn is boundRecord with records already decoded by index.
func boundRecordIn(tx *kvTx, b Binding, decoded map[int64]*Record) (*Record, string) {
	if b.Leaf == "" {
		return nil, "it is bound to no history record"
	}
	want, err := base64.StdEncoding.DecodeString(b.Leaf)
	if err != nil || len(want) != tlog.HashSize {
		return nil, fmt.Sprintf("its leaf hash %q is malformed", b.Leaf)
	}
	if b.Record < 0 || b.Record >= logSize(tx) {
		return nil, fmt.Sprintf("the history has no record %d", b.Record)
	}
	lb := tx.Bucket(bLog)
	data := lb.Bucket(bRecords).Get(u64(uint64(b.Record)))
	if data == nil {
		return nil, "the record is missing"
	}
	h := tlog.RecordHash(data)
	if !bytes.Equal(h[:], want) {
		return nil, "the record's leaf hash differs from the one bound"
	}
	if !bytes.Equal(lb.Bucket(bHashes).Get(u64(uint64(tlog.StoredHashIndex(0, b.Record)))), want) {
		return nil, "the stored leaf hash differs from the one bound"
	}
	rec := decoded[b.Record]
	if rec == nil {
		rec = new(Record)
		if err := json.Unmarshal(data, rec); err != nil {
			return nil, "the record is unreadable"
		}
	}
	if rec.Index != b.Record {
		return nil, "the record is misplaced"
	}
	return rec, ""
}

func samePermissions(a, b []etdi.Permission) bool {
	return len(a) == len(b) && (len(a) == 0 || slices.Equal(a, b))
}

// pinDisagrees says how rec fails to justify p, or "".
func pinDisagrees(rec *Record, p *Pin) string {
	switch {
	case rec.Type != RecordApprove && rec.Type != RecordReapprove:
		return fmt.Sprintf("the record is a %q, not an approval", rec.Type)
	case rec.Server != p.Server || rec.Item != p.Item || rec.Tool != p.Tool:
		return fmt.Sprintf("the record approves %s/%s", rec.Server, ItemRef(rec.Item, rec.Tool))
	case rec.Version != p.Version:
		return fmt.Sprintf("the record approves version %q, the pin holds %q", rec.Version, p.Version)
	case rec.Digest != p.Digest:
		return fmt.Sprintf("the record approves %s, the pin holds %s", rec.Digest, p.Digest)
	case rec.Signer == nil || *rec.Signer != p.Signer:
		return fmt.Sprintf("the record approves another signer than %s", p.Signer)
	case !samePermissions(rec.Permissions, p.Permissions):
		return "the record approves other permissions"
	case !slices.Equal(rec.Scopes, p.Scopes):
		return "the record approves other scopes"
	case rec.Served != p.Served:
		return fmt.Sprintf("the record approves the tool served by %q, the pin holds %q", rec.Served, p.Served)
	case rec.ServedAt != p.ServedAt:
		return fmt.Sprintf("the record approves the tool served from %q, the pin holds %q", rec.ServedAt, p.ServedAt)
	}
	return ""
}

// definitionDisagrees says whether the definition kept for showing
// differences is not the pinned one. Only audit verify checks it: check
// compares digests, never the kept definition.
func definitionDisagrees(p *Pin) string {
	// Approve keeps the canonical bytes, whose SHA-256 is the digest; a
	// definition kept another way is recomputed.
	if etdi.Digest(sha256.Sum256(p.Definition)).String() == p.Digest {
		return ""
	}
	if d, err := etdi.DigestJSON(p.Definition); err != nil || d.String() != p.Digest {
		return "the stored definition does not have the pinned digest"
	}
	return ""
}

// revocationDisagrees says how rec fails to justify r, or "".
func revocationDisagrees(rec *Record, r *Revocation) string {
	if rec.Type != RecordRevoke {
		return fmt.Sprintf("the record is a %q, not a revocation", rec.Type)
	}
	if rec.Server != r.Server || rec.Tool != r.Tool || rec.Version != r.Version || rec.KeyID != r.KeyID ||
		rec.Digest != r.Digest || (r.Digest != "" && rec.Item != r.Item) || (r.Digest == "" && r.Item != "") {
		return "the record revokes something else"
	}
	// Who, when and why are shown with every finding of the revocation.
	if rec.By != r.By || rec.Message != r.Reason || !rec.Time.Equal(r.At) {
		return "its author, time or reason differ from the record's"
	}
	return ""
}

// checkPin checks p's binding inside tx.
func checkPin(tx *kvTx, p *Pin) error { return checkPinIn(tx, p, nil) }

func checkPinIn(tx *kvTx, p *Pin, decoded map[int64]*Record) error {
	rec, msg := boundRecordIn(tx, p.Binding, decoded)
	if msg == "" {
		msg = pinDisagrees(rec, p)
	}
	if msg != "" {
		idx := p.Record
		if p.Leaf == "" {
			idx = -1
		}
		return &UnjustifiedError{"pin", p.Ref(), idx, msg}
	}
	return nil
}

// revocationOf is the revocation a revoke record records (its key
// fields).
func revocationOf(rec *Record) Revocation {
	r := Revocation{Server: rec.Server, Tool: rec.Tool, Version: rec.Version, KeyID: rec.KeyID, Digest: rec.Digest}
	if r.Digest != "" {
		r.Item = rec.Item
	}
	return r
}

// checkRevocation checks r's binding inside tx.
func checkRevocation(tx *kvTx, r *Revocation) error { return checkRevocationIn(tx, r, nil) }

func checkRevocationIn(tx *kvTx, r *Revocation, decoded map[int64]*Record) error {
	rec, msg := boundRecordIn(tx, r.Binding, decoded)
	if msg == "" {
		msg = revocationDisagrees(rec, r)
	}
	if msg != "" {
		idx := r.Record
		if r.Leaf == "" {
			idx = -1
		}
		return &UnjustifiedError{"revocation", string(r.key()), idx, msg}
	}
	return nil
}

// Disagreement is a pin or revocation that disagrees with the history.
type Disagreement struct {
	What   string `json:"what"` // "pin", "revocation" or "index"
	Ref    string `json:"ref"`
	Record int64  `json:"record"` // the record that should justify it, -1 if none
	Msg    string `json:"message"`
}

func (d Disagreement) String() string {
	if d.Record < 0 {
		return fmt.Sprintf("%s %q: %s", d.What, d.Ref, d.Msg)
	}
	return fmt.Sprintf("%s %q (history record %d): %s", d.What, d.Ref, d.Record, d.Msg)
}

// checkLatest replays the approve and revoke records about server (and
// every key revocation) and refuses a pin or revocation of server that a
// later record replaced (rolled back), and a revocation or pin the history
// holds but the database lost (deleted). Records about other servers and
// findings, most of the history, are skipped without decoding.
func checkLatest(tx *kvTx, server string) error {
	l := &latestCheck{tx: tx, server: server, seen: map[string]bool{}, seenPins: map[string]bool{}}
	if err := l.replay(); err != nil {
		return err
	}
	if err := l.pins(); err != nil {
		return err
	}
	if err := l.revocations(); err != nil {
		return err
	}
	return l.lost()
}

// latestCheck is one run of checkLatest: what the history says is latest
// about the server, and what the database holds of it.
type latestCheck struct {
	tx     *kvTx
	server string

	latest  map[string]int64          // "r" + revocation key -> its latest record
	live    map[string][]liveApproval // pin key -> approvals left (docs/storage.md#approved-variants)
	decoded map[int64]*Record         // the records decoded, by index

	seen     map[string]bool // the ids of latest found in the database
	seenPins map[string]bool // the pin keys found in the database
}

// replay reads the history's records about the server (and every key
// revocation) into l.latest, l.live and l.decoded.
func (l *latestCheck) replay() error {
	l.latest, l.live, l.decoded = map[string]int64{}, map[string][]liveApproval{}, map[int64]*Record{}
	quoted, _ := json.Marshal(l.server)
	serverField := append([]byte(`,"server":`), quoted...)
	serverField = append(serverField, ',')
	n := logSize(l.tx)
	c := l.tx.Bucket(bLog).Bucket(bRecords).Cursor()
	i := int64(0)
	for k, data := c.First(); k != nil && i < n; k, data = c.Next() {
		if !bytes.Equal(k, u64(uint64(i))) {
			return &LogError{i, "missing (deleted)"}
		}
		i++
		if !aboutServer(data, serverField) {
			continue
		}
		rec := new(Record)
		if err := json.Unmarshal(data, rec); err != nil {
			return &LogError{i - 1, "unreadable: " + err.Error()}
		}
		if l.apply(rec, i-1) {
			l.decoded[i-1] = rec
		}
	}
	if i < n {
		return &LogError{i, "missing (deleted)"}
	}
	return nil
}

// apply replays record rec, of index i, and reports whether a pin or a
// revocation may be bound to it.
func (l *latestCheck) apply(rec *Record, i int64) bool {
	server := l.server
	switch {
	case rec.Type == RecordRevoke && (rec.Server == server || rec.KeyID != ""):
		r := revocationOf(rec)
		l.latest["r"+string(r.key())] = i
		if r.Digest != "" && r.KeyID == "" {
			pk := string(pinKeyOf(rec.Server, rec.Item, rec.Tool))
			if l.live[pk] = dropped(l.live[pk], r.Digest); len(l.live[pk]) == 0 {
				delete(l.live, pk)
			}
		}
		return true
	case rec.Type == RecordUnrevoke && (rec.Server == server || rec.KeyID != ""):
		r := revocationOf(rec)
		delete(l.latest, "r"+string(r.key()))
		return false
	case (rec.Type == RecordApprove || rec.Type == RecordReapprove) && rec.Server == server && rec.Tool != "":
		pk := string(pinKeyOf(rec.Server, rec.Item, rec.Tool))
		l.live[pk] = approved(l.live[pk], i, rec.Digest, rec.Variant)
		return true
	}
	return false
}

// check refuses a revocation (what, ref) bound to another record than the
// latest about it (id).
func (l *latestCheck) check(id string, what string, ref []byte, b Binding) error {
	l.seen[id] = true
	if last, ok := l.latest[id]; !ok || last != b.Record {
		msg := "the history holds no record of it"
		if ok {
			msg = fmt.Sprintf("history record %d replaced it (rolled back)", last)
		}
		if what == "pin" {
			return &UnjustifiedError{what, keyRef(ref), b.Record, msg}
		}
		return &UnjustifiedError{what, string(ref), b.Record, msg}
	}
	return nil
}

// pins checks each pin of the server against its records and against the
// approvals the history leaves.
func (l *latestCheck) pins() error {
	prefix := []byte(l.server + "\x00")
	c := l.tx.Bucket(bPins).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var p Pin
		if err := json.Unmarshal(v, &p); err != nil {
			return damagedError("pin", k, err)
		}
		if string(p.key()) != string(k) {
			return &UnjustifiedError{"pin", keyRef(k), p.Record, "the value is the pin of " + p.Ref()}
		}
		if msg := variantShape(&p); msg != "" {
			return &UnjustifiedError{"pin", keyRef(k), p.Record, msg}
		}
		for _, v := range p.All() {
			if err := checkPinIn(l.tx, &v, l.decoded); err != nil {
				return err
			}
		}
		l.seenPins[string(k)] = true
		if msg := variantsDisagree(&p, l.live[string(k)]); msg != "" {
			return &UnjustifiedError{"pin", keyRef(k), p.Record, msg}
		}
	}
	return nil
}

// revocations checks each revocation of the server, and each key
// revocation, against its record and the latest record about it.
func (l *latestCheck) revocations() error {
	rb := l.tx.Bucket(bRevoked)
	for _, pfx := range [][]byte{[]byte(l.server + "/"), []byte("key:")} {
		rc := rb.Cursor()
		for k, v := rc.Seek(pfx); k != nil && bytes.HasPrefix(k, pfx); k, v = rc.Next() {
			var r Revocation
			if err := json.Unmarshal(v, &r); err != nil {
				return damagedError("revocation", k, err)
			}
			if pfx[0] == 'k' && r.KeyID == "" {
				continue // a server whose provider is named "key"
			}
			if string(r.key()) != string(k) {
				return &UnjustifiedError{"revocation", string(k), r.Record, fmt.Sprintf("the value is the revocation of %q", r.key())}
			}
			if err := checkRevocationIn(l.tx, &r, l.decoded); err != nil {
				return err
			}
			if err := l.check("r"+string(k), "revocation", k, r.Binding); err != nil {
				return err
			}
		}
	}
	return nil
}

// lost refuses a pin or revocation the history holds and the database
// lost (deleted).
func (l *latestCheck) lost() error {
	for k, ls := range l.live {
		if !l.seenPins[k] {
			return &UnjustifiedError{"pin", keyRef([]byte(k)), ls[len(ls)-1].index,
				"the history holds it, the database lost it (deleted)"}
		}
	}
	for id, last := range l.latest {
		if !l.seen[id] {
			what := "pin"
			if id[0] == 'r' {
				what = "revocation"
			}
			return &UnjustifiedError{what, strings.Replace(id[1:], "\x00", "/", 1), last,
				"the history holds it, the database lost it (deleted)"}
		}
	}
	return nil
}

// migrate3 binds each pin and revocation of a schema 2 database to the
// latest history record about it. A pin or revocation with no such record
// stays unbound, and one that differs from its record stays bound to it:
// both fail closed on every read, naming what is wrong. It also
// rebuilds the skeletons index with the look-alike table of this schema.
func migrate3(tx *kvTx) error {
	st, err := replay(tx)
	if err != nil {
		return err
	}
	bind := func(key string, m map[string]int64) Binding {
		idx, ok := m[key]
		if !ok {
			return Binding{}
		}
		return leafOf(idx, st.recs[idx])
	}
	latest := make(map[string]int64, len(st.pins))
	for k, live := range st.pins { // one each: schema 2 knew no variants
		latest[k] = live[len(live)-1].index
	}
	pb := tx.Bucket(bPins)
	type kv struct{ k, v []byte }
	var puts []kv
	err = pb.ForEach(func(k, v []byte) error {
		var p Pin
		if err := json.Unmarshal(v, &p); err != nil {
			return nil // stays damaged; every read refuses it
		}
		p.Binding = bind(string(k), latest)
		nv, err := json.Marshal(p)
		puts = append(puts, kv{bytes.Clone(k), nv})
		return err
	})
	if err != nil {
		return err
	}
	rb := tx.Bucket(bRevoked)
	err = rb.ForEach(func(k, v []byte) error {
		var r Revocation
		if err := json.Unmarshal(v, &r); err != nil {
			return nil
		}
		r.Binding = bind(string(k), st.revoked)
		nv, err := json.Marshal(r)
		puts = append(puts, kv{append([]byte{1}, k...), nv})
		return err
	})
	if err != nil {
		return err
	}
	for _, e := range puts {
		b, k := pb, e.k
		if k[0] == 1 {
			b, k = rb, k[1:]
		}
		if err := b.Put(k, e.v); err != nil {
			return err
		}
	}
	if err := tx.DeleteBucket(bSkeletons); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
		return err
	}
	if _, err := tx.CreateBucket(bSkeletons); err != nil {
		return err
	}
	return forEachPin(tx, nil, func(p *Pin) error { return indexPin(tx, p) })
}

// aboutServer reports whether a stored record may approve a tool of the
// server whose field is serverField, or revoke anything (revocations are
// few and always decoded), without decoding it. Records are encoding/json
// output of Record, whose fields come in a fixed order:
// {"index":..,"prev":..,"time":..,"type":"T","server":..; encoding/json
// escapes every quote inside a string, so the patterns only match these
// fields.
// A record of another shape is decoded rather than skipped. With nil
// fields, every record but a finding or a call is.
func aboutServer(data, serverField []byte) bool {
	const typeField = `"type":"`
	head := data[:min(len(data), 160)]
	i := bytes.Index(head, []byte(typeField))
	if i < 0 {
		return true
	}
	rest := data[i+len(typeField):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return true
	}
	typ, rest := string(rest[:j]), rest[j+1:]
	switch typ {
	case RecordFinding, RecordCall:
		return false
	case RecordApprove, RecordReapprove:
		return bytes.HasPrefix(rest, serverField)
	}
	return true
}
