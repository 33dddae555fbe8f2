package pin

import (
	"encoding/json"
	"testing"
)

// FuzzAboutServer: the byte-level filter of the per-check replay never
// skips a record that approves or revokes a tool of the server, or
// revokes a key, whatever the strings a server or a person put in it.
func FuzzAboutServer(f *testing.F) {
	f.Add("acme:weather", "acme:weather", "get_weather", "approve", "", `"type":"finding"`)
	f.Add("unsigned:a", "unsigned:a\"", "x", "revoke", "", "")
	f.Add("k", "", "", "revoke", "sha256:ab", "")
	f.Add("a,\"server\":\"b", "b", "t", "reapprove", "", `,"server":"b",`)
	f.Fuzz(func(t *testing.T, target, server, tool, typ, keyID, msg string) {
		rec := Record{Index: 7, Prev: "p", Type: typ, Server: server, Tool: tool, KeyID: keyID, Message: msg, By: msg}
		data, err := json.Marshal(rec)
		if err != nil {
			return
		}
		quoted, _ := json.Marshal(target)
		serverField := append(append([]byte(`,"server":`), quoted...), ',')
		relevant := (typ == RecordApprove || typ == RecordReapprove || typ == RecordRevoke) && server == target && tool != ""
		relevant = relevant || (typ == RecordRevoke && keyID != "")
		if relevant && !aboutServer(data, serverField) {
			t.Fatalf("skipped %s", data)
		}
		if typ == RecordFinding && aboutServer(data, nil) {
			t.Fatalf("decoded a finding %s", data)
		}
	})
}
