package etdi

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/strictjson"
)

// addVectorSeeds adds every file named name under testdata/vectors.
func addVectorSeeds(f *testing.F, name string) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "vectors", "*", name))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

// FuzzParseManifest checks that a manifest that parses signs into a
// statement that parses back with the same tools and digests.
func FuzzParseManifest(f *testing.F) {
	if b, err := os.ReadFile("cmd/etdi/demodata/weather.manifest.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"provider":{"id":"a"},"server":{"name":"s"},"tools":[{"version":"1.0.0","permissions":[],"definition":{"name":"t"}}]}`))
	f.Add([]byte(`{"provider":{"id":"a"},"server":{"name":"s","endpoints":["https://a.example/mcp"],"artifacts":[{"type":"file","name":"s","digest":"sha256:` + hex64 + `"}]},"tools":[{"version":"1.0.0","permissions":[],"definition":{"name":"t"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		issued := time.Unix(1700000000, 0)
		st, err := NewStatement(m, issued, issued.Add(time.Hour), 1)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseStatement(st.Payload())
		if err != nil {
			t.Fatalf("statement of a valid manifest does not parse: %v", err)
		}
		if len(back.Tools) != len(m.Tools) {
			t.Fatal("tool count changed")
		}
		if !slices.Equal(back.Server.Endpoints, m.Server.Endpoints) || !slices.Equal(back.Server.Artifacts, m.Server.Artifacts) {
			t.Fatalf("server binding changed in the statement: %+v, was %+v", back.Server, m.Server)
		}
		for i := range m.Tools {
			if back.Tools[i].Digest != m.Tools[i].Digest || back.Tools[i].Version != m.Tools[i].Version {
				t.Fatalf("tool %d changed in the statement", i)
			}
		}
	})
}

// FuzzParseBundle checks that a bundle that parses re-serializes to a
// bundle with the same content.
func FuzzParseBundle(f *testing.F) {
	addVectorSeeds(f, "bundle.etdi.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBundle(data)
		if err != nil {
			return
		}
		b2, err := ParseBundle(b.Marshal())
		if err != nil {
			t.Fatalf("re-serialized bundle does not parse: %v", err)
		}
		if !bytes.Equal(b2.Envelope.Payload, b.Envelope.Payload) || len(b2.Envelope.Signatures) != len(b.Envelope.Signatures) || b2.IDPToken != b.IDPToken {
			t.Fatal("bundle changed in a round trip")
		}
		if _, err := ParseStatement(b.Envelope.Payload); err == nil {
			_ = err // the statement parser must not panic either
		}
	})
}

// FuzzParseToolsList checks that live tool digests do not depend on the
// serialization: the digest of each tool equals the digest of its
// canonical form.
func FuzzParseToolsList(f *testing.F) {
	addVectorSeeds(f, "tools.json")
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}}`))
	f.Add([]byte(`{"tools":[{"name":"a","enum":[0,[0,{"b":[]}],0]}],"_meta":{"c":[0,0]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tl, err := ParseList(data, ListOptions{})
		if err != nil {
			return
		}
		// Every tool is at least an object and its name; the count is the
		// document's, as a full parse counts it.
		if tl.Nodes < 2*len(tl.Tools) || tl.Nodes > strictjson.MaxNodes || tl.Nodes != countValues(mustParse(t, string(data))) {
			t.Fatalf("%d values counted for %d tools", tl.Nodes, len(tl.Tools))
		}
		for _, lt := range tl.Tools {
			d, err := DigestJSON(lt.Canonical)
			if err != nil || d != lt.Digest {
				t.Fatalf("digest of %q depends on serialization", lt.Name)
			}
		}
	})
}

// countValues counts the JSON values of v, v included.
func countValues(v *strictjson.Value) int {
	n := 1
	for _, e := range v.Elems {
		n += countValues(e)
	}
	for _, m := range v.Members {
		n += countValues(m.Value)
	}
	return n
}

// FuzzParseList: whatever a saved listing or a server's page holds,
// parsing never panics; what it accepts is valid JSON, each list present
// has exactly the entries encoding/json reads, each digest is that of the
// entry's canonical form, and the tools read as the only list are the
// same.
func FuzzParseList(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"a","description":"x"}],"prompts":[{"name":"p"}],"resources":[{"uri":"x://1","name":"one"}],"resourceTemplates":[{"uriTemplate":"x://{n}"}],"nextCursor":"2"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[],"resources":[{"uri":"u"}]}}`))
	f.Add([]byte(`[{"name":"a"}]`))
	f.Add([]byte(`{"tools":[{"name":"a"}],"prompts":[{"nom":"p"}]}`))
	addVectorSeeds(f, "tools.json")
	lists := []List{ListTools, ListPrompts, ListResources, ListTemplates}
	f.Fuzz(func(t *testing.T, data []byte) {
		first, err := ParseList(data, ListOptions{Lists: lists})
		if err != nil {
			return
		}
		pages := append([]*ToolsList{first}, first.Others...)
		if !json.Valid(data) {
			t.Fatalf("accepted input encoding/json rejects: %q", data)
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) == nil {
			if r, ok := obj["result"]; ok && obj["jsonrpc"] != nil {
				obj = nil
				json.Unmarshal(r, &obj)
			}
			for i, l := range lists {
				var arr []json.RawMessage
				raw, present := obj[l.Member]
				if present != (pages[i] != nil) && (i > 0 || !present) {
					t.Fatalf("%s present %v, parsed %v", l.Member, present, pages[i] != nil)
				}
				if present && json.Unmarshal(raw, &arr) == nil && len(arr) != len(pages[i].Tools) {
					t.Fatalf("%s: %d entries, encoding/json reads %d", l.Member, len(pages[i].Tools), len(arr))
				}
			}
		}
		for _, p := range pages {
			if p == nil {
				continue
			}
			for _, e := range p.Tools {
				if v, err := strictjson.Parse(e.Canonical); err != nil || DefinitionDigest(v) != e.Digest {
					t.Fatalf("entry %q does not read back with its digest", e.Name)
				}
			}
		}
		tl, err := ParseList(data, ListOptions{})
		if err != nil || len(tl.Tools) != len(pages[0].Tools) {
			t.Fatalf("ParseList with one list disagrees: %v", err)
		}
	})
}
