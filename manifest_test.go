package etdi

import (
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/strictjson"
)

const goodManifest = `{
  "provider": {"id": "acme", "name": "ACME"},
  "server": {"name": "weather", "version": "1.0.0"},
  "tools": [
    {"version": "1.0.0", "permissions": [{"scope": "net:fetch", "description": "d"}],
     "definition": {"name": "get_weather", "description": "x", "inputSchema": {"type": "object"}, "_meta": {"dev.etdi/x": 1}}},
    {"version": "2.0.0-rc.1", "permissions": [], "definition": {"name": "b", "inputSchema": {"type": "object"}}}
  ]
}`

func TestParseManifest(t *testing.T) {
	m, err := ParseManifest([]byte(goodManifest))
	if err != nil {
		t.Fatal(err)
	}
	if m.Provider.ID != "acme" || m.Server.Name != "weather" || len(m.Tools) != 2 {
		t.Fatalf("unexpected manifest %+v", m)
	}
	w := m.Tool("get_weather")
	if w == nil || w.Version != "1.0.0" || len(w.Permissions) != 1 || w.Permissions[0].Scope != "net:fetch" {
		t.Fatalf("get_weather = %+v", w)
	}
	if w.Definition().Get("_meta") != nil {
		t.Error("etdi _meta material kept in the definition")
	}
	if w.Digest != DefinitionDigest(w.Definition()) {
		t.Error("digest does not match definition")
	}
}

func TestParseManifestErrors(t *testing.T) {
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"missing provider", `"provider": {"id": "acme", "name": "ACME"},`, ``, "provider: required field is missing"},
		{"bad provider id", `"id": "acme"`, `"id": "ac me"`, "provider.id: provider id"},
		{"non-ascii provider id", `"id": "acme"`, `"id": "аcme"`, "provider.id"},
		{"empty server name", `"name": "weather"`, `"name": ""`, "server.name: must not be empty"},
		{"invalid semver", `"version": "1.0.0", "permissions": [{"scope"`, `"version": "1.0", "permissions": [{"scope"`, `tools[0].version: "1.0" is not a semantic version`},
		{"v prefix", `"version": "1.0.0", "permissions": [{"scope"`, `"version": "v1.0.0", "permissions": [{"scope"`, `tools[0].version`},
		{"leading zero", `"version": "2.0.0-rc.1"`, `"version": "02.0.0"`, `tools[1].version`},
		{"missing version", `"version": "2.0.0-rc.1", `, ``, `tools[1].version: required field is missing`},
		{"missing permissions", `"permissions": [], `, ``, `tools[1].permissions: required field is missing`},
		{"missing name", `"name": "b", `, ``, `tools[1].definition.name: required field is missing`},
		{"empty name", `"name": "b"`, `"name": ""`, `tools[1].definition.name: tool name must not be empty`},
		{"name with space", `"name": "b"`, `"name": "b c"`, `tools[1].definition.name`},
		{"duplicate tool", `"name": "b"`, `"name": "get_weather"`, `duplicate tool name "get_weather" (also tools[0])`},
		{"duplicate scope", `[{"scope": "net:fetch", "description": "d"}]`, `[{"scope": "net:fetch"}, {"scope": "net:fetch"}]`, `tools[0].permissions[1].scope: duplicate scope`},
		{"bad scope", `"scope": "net:fetch"`, `"scope": "net fetch"`, `tools[0].permissions[0].scope`},
		{"unknown top-level field", `"server":`, `"sever": {}, "server":`, `unknown field "sever"`},
		{"unknown tool field", `"permissions": [], `, `"permissions": [], "permisions": [], `, `tools[1]: unknown field "permisions"`},
		{"definition not object", `"definition": {"name": "b", "inputSchema": {"type": "object"}}`, `"definition": []`, `tools[1].definition: must be an object`},
		{"no tools", `"tools": [`, `"tools": [], "x": [`, `unknown field "x"`},
		{"duplicate json key", `"server": {"name": "weather",`, `"server": {"name": "weather", "name": "evil",`, `duplicate member name "name"`},
		{"huge integer", `"type": "object"}}`, `"type": "object", "maxItems": 18446744073709551616}}`, `beyond`},
		{"invalid utf-8", `"description": "x"`, "\"description\": \"\xc3\x28\"", `invalid UTF-8`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Replace(goodManifest, tc.from, tc.to, 1)
			if in == goodManifest {
				t.Fatal("edit did not apply")
			}
			_, err := ParseManifest([]byte(in))
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
	if _, err := ParseManifest([]byte(`{"provider":{"id":"a"},"server":{"name":"s"},"tools":[]}`)); err == nil ||
		!strings.Contains(err.Error(), "tools: must list at least one tool") {
		t.Errorf("empty tools: %v", err)
	}
	big := make([]byte, MaxManifestSize+1)
	if _, err := ParseManifest(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized manifest: %v", err)
	}
}

func TestStatementRoundTrip(t *testing.T) {
	m, err := ParseManifest([]byte(goodManifest))
	if err != nil {
		t.Fatal(err)
	}
	issued := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st, err := NewStatement(m, issued, issued.Add(time.Hour), 7)
	if err != nil {
		t.Fatal(err)
	}
	payload := st.Payload()
	if c, err := strictjson.Canonicalize(payload); err != nil || string(c) != string(payload) {
		t.Fatal("payload is not canonical JSON")
	}
	for _, want := range []string{`"_type":"https://in-toto.io/Statement/v1"`, `"predicateType":"https://etdi.dev/ToolManifest/v1"`,
		`"name":"get_weather@1.0.0"`, `"name":"b@2.0.0-rc.1"`, `"sequence":7`, `"issuedAt":"2026-01-02T03:04:05Z"`} {
		if !strings.Contains(string(payload), want) {
			t.Errorf("payload lacks %s", want)
		}
	}
	got, err := ParseStatement(payload)
	if err != nil {
		t.Fatal(err)
	}
	if got.Provider != m.Provider || got.Sequence != 7 || !got.IssuedAt.Equal(issued) || len(got.Tools) != 2 {
		t.Fatalf("round trip: %+v", got)
	}
	for i := range m.Tools {
		if got.Tools[i].Digest != m.Tools[i].Digest {
			t.Errorf("tool %d digest changed in round trip", i)
		}
	}
	if _, err := NewStatement(m, issued, issued, 1); err == nil {
		t.Error("expiry equal to issue time accepted")
	}
}

func TestParseStatementErrors(t *testing.T) {
	m, _ := ParseManifest([]byte(goodManifest))
	issued := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st, _ := NewStatement(m, issued, issued.Add(time.Hour), 7)
	payload := string(st.Payload())
	for _, tc := range []struct{ name, from, to, want string }{
		{"wrong _type", `"https://in-toto.io/Statement/v1"`, `"https://in-toto.io/Statement/v0.1"`, "_type"},
		{"wrong predicateType", `"https://etdi.dev/ToolManifest/v1"`, `"https://slsa.dev/provenance/v1"`, "predicateType"},
		{"subject missing", `"name":"b@2.0.0-rc.1"`, `"name":"b@2.0.0"`, `matches no tool`},
		{"name mismatch", `"name":"b","permissions"`, `"name":"c","permissions"`, `does not match definition.name`},
		{"negative sequence", `"sequence":7`, `"sequence":-7`, "non-negative integer"},
		{"fractional sequence", `"sequence":7`, `"sequence":7.5`, "non-negative integer"},
		{"bad time", `"issuedAt":"2026-01-02T03:04:05Z"`, `"issuedAt":"yesterday"`, "RFC 3339"},
		{"expires before issued", `"expires":"2026-01-02T04:04:05Z"`, `"expires":"2026-01-01T04:04:05Z"`, "not after issuedAt"},
		{"extra predicate field", `"sequence":7`, `"sequence":7,"x":1`, `unknown field "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Replace(payload, tc.from, tc.to, 1)
			if in == payload {
				t.Fatal("edit did not apply")
			}
			if _, err := ParseStatement([]byte(in)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v does not contain %q", err, tc.want)
			}
		})
	}
}
