package pin

import (
	"bytes"
	"encoding/json"

	"github.com/etdi-dev/etdi/finding"
)

// findingKey is what makes two findings the same finding in the history
// (docs/storage.md#history-and-checkpoints): kind, severity, server, tool, version, live digest and
// message. The message carries the rest of the evidence (the approved
// version, the signers, the servers a name is approved on, where
// suspicious text sits), so a finding that differs in any of it is
// another finding. Who ran the check and when are not part of it.
type findingKey struct {
	kind, severity, server, item, tool, version, digest, message string
}

func keyOfFinding(server string, f *finding.Finding) findingKey {
	return findingKey{string(f.Kind), string(f.Severity), server, f.Item, f.Tool, f.Version, f.Live, f.Message}
}

func keyOfRecord(r *Record) findingKey {
	return findingKey{r.Kind, r.Severity, r.Server, r.Item, r.Tool, r.Version, r.Digest, r.Message}
}

// unrecorded returns the error and warning findings of server that the
// history does not already hold since the last approval, re-approval or
// revocation that concerns them, in their order. A finding seen on every
// check (a tool that keeps needing approval, a rug pull nobody resolved)
// is recorded once; one that differs in anything, or that comes back
// after a decision, is recorded again. A finding listed n times in one
// check needs n records.
//
// The history is read backwards from its end and only until every
// finding is settled, so the usual case, a finding recorded by the
// previous check, costs a few records. Records about other servers are
// skipped without decoding.
func unrecorded(tx *kvTx, server string, findings []finding.Finding) ([]finding.Finding, error) {
	need := map[findingKey]int{}
	for i := range findings {
		if findings[i].Severity != finding.Info {
			need[keyOfFinding(server, &findings[i])]++
		}
	}
	if len(need) == 0 {
		return nil, nil
	}
	found := map[findingKey]int{}
	pending := len(need)
	quoted, err := json.Marshal(server)
	if err != nil {
		return nil, err
	}
	serverField := append([]byte(`,"server":`), quoted...)
	// A cursor walks the records in key order, from the last one.
	c := tx.Bucket(bLog).Bucket(bRecords).Cursor()
	last := logSize(tx) - 1
	k, data := c.Seek(u64(uint64(last)))
	for i := last; i >= 0 && pending > 0; i-- {
		if i < last {
			k, data = c.Prev()
		}
		if !bytes.Equal(k, u64(uint64(i))) {
			return nil, &LogError{i, "missing (deleted)"}
		}
		if !mayConcern(data, serverField) {
			continue
		}
		var rec Record
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, &LogError{i, "unreadable: " + err.Error()}
		}
		pending -= settle(&rec, server, need, found)
	}
	var out []finding.Finding
	for i := range findings {
		f := findings[i]
		if f.Severity == finding.Info {
			continue
		}
		k := keyOfFinding(server, &f)
		if found[k] > 0 {
			found[k]--
			continue
		}
		out = append(out, f)
	}
	return out, nil
}

// mayConcern reports whether a stored record may be a finding, approval
// or re-approval about the server whose field is serverField
// (`,"server":` and the quoted key), or a revocation, without decoding it. Records are encoding/json output of
// Record, whose fields come in a fixed order ({"index":..,"prev":..,
// "time":..,"type":"T","server":..), and encoding/json escapes every
// quote inside a string, so the patterns only match these fields. A
// record of another shape is decoded rather than skipped.
func mayConcern(data, serverField []byte) bool {
	const typeField = `"type":"`
	i := bytes.Index(data[:min(len(data), 160)], []byte(typeField))
	if i < 0 {
		return true
	}
	rest := data[i+len(typeField):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return true
	}
	switch string(rest[:j]) {
	case RecordCall:
		return false // a call is neither a finding nor a decision
	case RecordFinding, RecordApprove, RecordReapprove:
		rest = rest[j+1:]
		n := len(serverField)
		return bytes.HasPrefix(rest, serverField) && len(rest) > n && (rest[n] == ',' || rest[n] == '}')
	}
	return true
}

// settle counts record rec, read from the newest back, against the
// findings about server still looked for: a finding record as one found
// (found), a decision about the item, the whole server or a key as the end
// of what is found of it (need drops to found). It returns how many keys
// it settled.
func settle(rec *Record, server string, need, found map[findingKey]int) int {
	settled := 0
	switch rec.Type {
	case RecordFinding:
		if rec.Server != server {
			return 0
		}
		k := keyOfRecord(rec)
		if n, ok := need[k]; ok && found[k] < n {
			if found[k]++; found[k] == n {
				settled++
			}
		}
	case RecordApprove, RecordReapprove, RecordRevoke, RecordUnrevoke:
		keyRevoked := (rec.Type == RecordRevoke || rec.Type == RecordUnrevoke) && rec.KeyID != ""
		if rec.Server != server && !keyRevoked {
			return 0
		}
		// A decision about the tool, about the whole server, or a key
		// revocation: what came before it is not the current state.
		for k, n := range need {
			if found[k] < n && (keyRevoked || rec.Tool == "" || k.tool == "" || (k.item == rec.Item && k.tool == rec.Tool)) {
				need[k] = found[k]
				settled++
			}
		}
	}
	return settled
}
