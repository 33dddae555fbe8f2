package pin

import (
	"encoding/json"
	"testing"
)

// FuzzMayConcern: the byte-level filter of the look-back for recorded
// findings never skips a finding, approval or re-approval about the
// server, or any revocation, whatever the strings a server or a person
// put in the record; and it never panics on stored bytes.
func FuzzMayConcern(f *testing.F) {
	f.Add("acme:weather", "acme:weather", "get_weather", "finding", "", "new_tool", `"type":"finding"`)
	f.Add("unsigned:a", "unsigned:a\"", "x", "revoke", "", "", "")
	f.Add("k", "", "", "revoke", "sha256:ab", "", "")
	f.Add("a,\"server\":\"b", "b", "t", "reapprove", "", "", `,"server":"b",`)
	f.Add("s", "s", "", "approve", "", "", "")
	f.Add("s", "s2", "t", "finding", "", "rug_pull", `{"type":"finding","server":"s",}`)
	f.Fuzz(func(t *testing.T, target, server, tool, typ, keyID, kind, msg string) {
		rec := Record{Index: 7, Prev: "p", Type: typ, Server: server, Tool: tool, KeyID: keyID, Kind: kind, Message: msg}
		data, err := json.Marshal(rec)
		if err != nil {
			return
		}
		quoted, _ := json.Marshal(target)
		field := append([]byte(`,"server":`), quoted...)
		relevant := (typ == RecordFinding || typ == RecordApprove || typ == RecordReapprove) && server == target
		if (relevant || typ == RecordRevoke) && !mayConcern(data, field) {
			t.Fatalf("skipped %s", data)
		}
		mayConcern([]byte(msg), field)
	})
}
