package mcpclient

import "testing"

// FuzzParseInitialize: whatever a server answers to initialize, parsing
// never panics, and an accepted answer has a protocol version.
func FuzzParseInitialize(f *testing.F) {
	f.Add([]byte(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"},"instructions":"use it"}`))
	f.Add([]byte(`{"protocolVersion":"2025-06-18","instructions":7}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var l Listing
		if err := parseInitialize(data, &l); err != nil {
			return
		}
		if l.ProtocolVersion == "" {
			t.Fatalf("accepted an initialize result without protocolVersion: %q", data)
		}
	})
}
