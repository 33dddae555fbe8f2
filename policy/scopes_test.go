package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/pin"
)

const overlayText = `{
  "etdiScopes": 1,
  "comment": "reviewed 2026-11-20",
  "tools": {
    "files/write_file": ["files:write", "files:read", "files:write"],
    "files/read_file": ["files:read"],
    "memory/delete_entities": ["memory:write"]
  }
}`

func observedTool(name string, signer pin.SignerID) pin.Observed {
	c := []byte(`{"name":"` + name + `"}`)
	d, _ := etdi.DigestJSON(c)
	return pin.Observed{Name: name, Digest: d, Canonical: c, Signer: signer}
}

func filesObservation(names ...string) *pin.Observation {
	o := &pin.Observation{Server: pin.UnsignedServerKey("files"), Name: "files"}
	for _, n := range names {
		o.Tools = append(o.Tools, observedTool(n, pin.Unsigned))
	}
	return o
}

func TestParseScopes(t *testing.T) {
	ov, err := ParseScopes("overlay.json", []byte(overlayText))
	if err != nil {
		t.Fatal(err)
	}
	if got := ov.Servers(); !slices.Equal(got, []string{"files", "memory"}) {
		t.Fatalf("servers %v", got)
	}
	m, err := ov.For(filesObservation("read_file", "write_file", "list_directory"))
	if err != nil || !slices.Equal(m["write_file"], []string{"files:read", "files:write"}) || !slices.Equal(m["read_file"], []string{"files:read"}) || len(m) != 2 {
		t.Fatalf("%v %v", m, err)
	}
	// A server name with '/' (an npm scope) splits at the last '/'.
	ov, err = ParseScopes("x", []byte(`{"etdiScopes":1,"tools":{"@acme/notes/add_note":["notes:write"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := ov.For(&pin.Observation{Name: "@acme/notes", Tools: []pin.Observed{observedTool("add_note", pin.Unsigned)}}); err != nil || len(m["add_note"]) != 1 {
		t.Fatalf("%v %v", m, err)
	}
}

// Every malformed overlay is refused, naming what is wrong.
func TestParseScopesRefused(t *testing.T) {
	for name, c := range map[string]struct{ text, want string }{
		"not JSON":         {`{"etdiScopes":1,`, "scopes overlay"},
		"not an object":    {`[]`, "not a JSON object"},
		"no format":        {`{"tools":{}}`, `"etdiScopes" must be 1`},
		"format 2":         {`{"etdiScopes":2,"tools":{}}`, `"etdiScopes" must be 1`},
		"unknown member":   {`{"etdiScopes":1,"tools":{},"tool":{}}`, `unknown member "tool"`},
		"member twice":     {`{"etdiScopes":1,"tools":{},"tools":{}}`, "scopes overlay"},
		"key twice":        {`{"etdiScopes":1,"tools":{"a/b":["x"],"a/b":["y"]}}`, "scopes overlay"},
		"no slash":         {`{"etdiScopes":1,"tools":{"write_file":["x"]}}`, "is not SERVER/TOOL"},
		"empty tool":       {`{"etdiScopes":1,"tools":{"files/":["x"]}}`, "is not SERVER/TOOL"},
		"control in name":  {`{"etdiScopes":1,"tools":{"fi\u001bles/x":["x"]}}`, "control"},
		"space in tool":    {`{"etdiScopes":1,"tools":{"files/write file":["x"]}}`, "space"},
		"scopes not array": {`{"etdiScopes":1,"tools":{"a/b":"files:write"}}`, "array of strings"},
		"scope not string": {`{"etdiScopes":1,"tools":{"a/b":[1]}}`, "array of strings"},
		"scope with space": {`{"etdiScopes":1,"tools":{"a/b":["files write"]}}`, "printable ASCII"},
		"comment a number": {`{"etdiScopes":1,"tools":{},"comment":1}`, `"comment" is not a string`},
		"invalid UTF-8":    {"{\"etdiScopes\":1,\"tools\":{\"a/\xff\":[\"x\"]}}", "scopes overlay"},
	} {
		_, err := ParseScopes("o.json", []byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	// Valid JSON beyond the bound.
	big := []byte(`{"etdiScopes":1,"tools":{},"comment":"` + strings.Repeat("x", MaxScopesFile) + `"}`)
	if _, err := ParseScopes("big", big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("an overlay beyond the bound: %v", err)
	}
	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, big, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadScopes(path); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("LoadScopes of a large file: %v", err)
	}
}

// An overlay that names the server being approved by another name, or a
// tool it does not offer, is an error: a misspelling would otherwise give
// no scopes.
func TestScopesOverlayUnknown(t *testing.T) {
	ov, err := ParseScopes("o.json", []byte(overlayText))
	if err != nil {
		t.Fatal(err)
	}
	o := filesObservation("read_file", "write_file")
	o.Name, o.Server = "fs", pin.UnsignedServerKey("fs")
	if _, err := ov.For(o); err == nil || !strings.Contains(err.Error(), `names no tool of server "fs"`) || !strings.Contains(err.Error(), "files, memory") {
		t.Fatalf("unknown server: %v", err)
	}
	if _, err := ov.For(filesObservation("read_file")); err == nil || !strings.Contains(err.Error(), "does not offer: write_file") {
		t.Fatalf("unknown tool: %v", err)
	}
	// A prompt of the same name is not a tool.
	o = filesObservation("read_file")
	p := observedTool("write_file", pin.Unsigned)
	p.Item = pin.ItemPrompt
	o.Tools = append(o.Tools, p)
	if _, err := ov.For(o); err == nil {
		t.Fatal("a prompt took a tool's scopes")
	}
}

func TestApprovalScopes(t *testing.T) {
	ov, _ := ParseScopes("o.json", []byte(overlayText))
	o := filesObservation("read_file", "write_file", "list_directory")
	given, all, err := ApprovalScopes(o, ov, nil, []string{"files:list"})
	if err != nil || !slices.Equal(all, []string{"files:list"}) || !slices.Equal(given["read_file"], []string{"files:read", "files:list"}) || given["list_directory"] != nil {
		t.Fatalf("%v %v %v", given, all, err)
	}
	given, all, err = ApprovalScopes(o, nil, []string{"list_directory"}, []string{"files:list"})
	if err != nil || all != nil || len(given) != 1 || !slices.Equal(given["list_directory"], []string{"files:list"}) {
		t.Fatalf("%v %v %v", given, all, err)
	}
	if given, all, err := ApprovalScopes(o, nil, nil, nil); err != nil || given != nil || all != nil {
		t.Fatalf("%v %v %v", given, all, err)
	}
	o.Name = "other"
	if _, _, err := ApprovalScopes(o, ov, nil, nil); err == nil {
		t.Fatal("overlay of other servers accepted")
	}
}

// Given scopes reach the policies of an unsigned tool as a signed tool's
// permissions do, and never a signed tool's.
func TestToolOfApproved(t *testing.T) {
	u := ToolOfApproved("unsigned:files", "", observedTool("write_file", pin.Unsigned), []string{"files:write"})
	if u.Signed || !slices.Equal(u.Scopes, []string{"files:write"}) {
		t.Fatalf("%+v", u)
	}
	s := observedTool("write_file", pin.SignerID{Kind: "key", ID: "sha256:aa"})
	s.Permissions = []etdi.Permission{{Scope: "files:read"}}
	if st := ToolOfApproved("acme:files", "acme", s, []string{"files:none"}); !st.Signed || !slices.Equal(st.Scopes, []string{"files:read"}) {
		t.Fatalf("a signed tool took given scopes: %+v", st)
	}
	p := &pin.Pin{Server: "unsigned:files", Tool: "write_file", Signer: pin.Unsigned, Scopes: []string{"files:write"}}
	if pt := ToolOfPin(p); !slices.Equal(pt.Scopes, []string{"files:write"}) {
		t.Fatalf("%+v", pt)
	}
	set := mustParse(t, "p.cedar", `@id("baseline") permit (principal, action == Etdi::Action::"call", resource);
@id("no-writes") forbid (principal, action == Etdi::Action::"call", resource) when { resource.scopes.contains("files:*") };`)
	if d := set.Authorize(Request{Tool: u}); d.Effect != Forbid || !slices.Equal(d.Policies, []string{"no-writes"}) {
		t.Fatalf("%+v", d)
	}
	if d := set.Authorize(Request{Tool: ToolOf("unsigned:files", "", observedTool("write_file", pin.Unsigned))}); d.Effect != Allow {
		t.Fatalf("%+v", d)
	}
}

// FuzzParseScopes reads arbitrary bytes as a scopes overlay: it never
// panics, and what it accepts gives only valid scopes, sorted and once,
// to valid names.
func FuzzParseScopes(f *testing.F) {
	f.Add([]byte(overlayText))
	f.Add([]byte(`{"etdiScopes":1,"tools":{"@acme/notes/add_note":["notes:write"]}}`))
	f.Add([]byte(`{"etdiScopes":1,"tools":{"a/b":[]}}`))
	f.Add([]byte(`{"etdiScopes":1,"tools":{"a/b":["x"],"a/b":["y"]}}`))
	f.Add([]byte(`{"etdiScopes":1.0,"tools":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ov, err := ParseScopes("fuzz.json", data)
		if err != nil {
			if ov != nil {
				t.Fatal("an overlay with an error")
			}
			return
		}
		for server, tools := range ov.tools {
			if pin.ValidateUnsignedName(server) != nil {
				t.Fatalf("server %q", server)
			}
			for tool, ss := range tools {
				if etdi.ValidateToolName(tool) != nil || !slices.IsSorted(ss) || len(slices.Compact(slices.Clone(ss))) != len(ss) {
					t.Fatalf("%q: %q", tool, ss)
				}
				for _, sc := range ss {
					if etdi.ValidateScope(sc) != nil {
						t.Fatalf("scope %q", sc)
					}
				}
			}
		}
	})
}
