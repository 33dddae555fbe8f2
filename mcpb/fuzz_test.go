package mcpb

import (
	"bytes"
	"testing"
)

// FuzzOpen reads arbitrary bytes as an MCPB file: it never panics, and a
// file it accepts has a manifest, entries inside the archive and a
// signature verdict consistent with its bytes.
func FuzzOpen(f *testing.F) {
	f.Add(goodZip(f))
	c, key := testCert(f, "ACME Weather")
	f.Add(sign(f, goodZip(f), c, key))
	f.Add(buildZip(f, zentry{name: "manifest.json", body: []byte(manifestJSON)}, zentry{name: "../x", body: []byte("1")}))
	f.Add(append(goodZip(f), sigFooter...))
	f.Add([]byte("PK\x05\x06" + string(make([]byte, 18))))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		if file.Manifest == nil || file.Manifest.Name == "" {
			t.Fatal("accepted without a manifest")
		}
		for _, e := range file.Entries {
			if e.Name == "" || e.Name[0] == '/' || bytes.Contains([]byte("/"+e.Name+"/"), []byte("/../")) {
				t.Fatalf("accepted entry %q", e.Name)
			}
		}
		if file.Signature != nil && file.Signature.Err == nil && !bytes.HasSuffix(data, []byte(sigFooter)) {
			t.Fatal("a signature verifies without a block")
		}
	})
}

// FuzzParseManifest parses arbitrary manifest.json text: it never panics,
// and what it accepts builds a launch or an error, never a panic.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(manifestJSON))
	f.Add([]byte(`{"manifest_version":"0.1","name":"a","version":"1","server":{"type":"binary","mcp_config":{"command":"${__dirname}/x","platform_overrides":{"linux":{"args":["${user_config.a}"]}}}},"user_config":{"a":{"default":[1]}}}`))
	f.Add([]byte(`{"dxt_version":"0.2","name":"a","version":"1","server":{"type":"uv","mcp_config":{"command":"uv","args":["${user_config.k}","${"]}},"tools":[{"name":"t"}],"tools_generated":true}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		if m.Name == "" || m.Server.MCPConfig.Command == "" {
			t.Fatal("accepted without a name or command")
		}
		l, err := m.Launch("/ext", map[string]string{"k": "v"})
		if err == nil && l.Command == "" {
			t.Fatal("an empty command")
		}
	})
}
