package pin

import (
	"encoding/json"
	"strings"
	"testing"
)

// A spool entry is written by any client: parseSpoolEntry never panics,
// and what it accepts holds only findings and calls that carry no index,
// no writer and nothing of an approval, within the size bound.
func FuzzParseSpoolEntry(f *testing.F) {
	f.Add([]byte(`{"v":1,"records":[{"time":"2026-01-01T00:00:00Z","type":"finding","server":"unsigned:x","kind":"new_tool","severity":"error","message":"m"}]}`))
	f.Add([]byte(`{"v":1,"spool":"s","seq":3,"records":[{"time":"2026-01-01T00:00:00Z","type":"call","server":"x","tool":"t","outcome":"forwarded"}]}`))
	f.Add([]byte(`{"v":1,"spool":"s","end":true,"records":[]}`))
	f.Add([]byte(`{"v":1,"v":1,"records":[]}`))
	f.Add([]byte(`{"v":1,"records":[{"type":"approve","signer":{"kind":"none"}}]}`))
	f.Add([]byte(`[` + strings.Repeat(`[`, 100) + `]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := parseSpoolEntry(data)
		if err != nil {
			return
		}
		if len(data) > MaxSpoolEntry || e.V != 1 || (len(e.Records) == 0 && !e.End) {
			t.Fatalf("accepted %q", data)
		}
		for _, r := range e.Records {
			if r.Type != RecordFinding && r.Type != RecordCall || r.Index != 0 || r.Prev != "" || r.Machine != "" || r.User != "" ||
				r.Signer != nil || r.KeyID != "" || len(r.Permissions) > 0 || len(r.Scopes) > 0 || r.Served != "" || r.Replaced != "" {
				t.Fatalf("accepted a record a client may not write: %+v", r)
			}
		}
		if _, err := json.Marshal(e); err != nil {
			t.Fatal(err)
		}
	})
}
