package etdi

import (
	"strconv"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/strictjson"
)

func TestParseList(t *testing.T) {
	tool := `{"name":"a","inputSchema":{"type":"object"}}`
	for name, in := range map[string]string{
		"result":    `{"tools":[` + tool + `],"nextCursor":"x"}`,
		"jsonrpc":   `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + tool + `]}}`,
		"array":     `[` + tool + `]`,
		"with meta": `{"tools":[` + tool + `],"_meta":{"dev.etdi/bundle":"x"}}`,
	} {
		tl, err := ParseList([]byte(in), ListOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(tl.Tools) != 1 || tl.Tools[0].Name != "a" {
			t.Fatalf("%s: %+v", name, tl)
		}
		want, _ := DigestJSON([]byte(tool))
		if tl.Tools[0].Digest != want {
			t.Errorf("%s: digest differs", name)
		}
	}
	for in, want := range map[string]string{
		`{"tools":[{"description":"no name"}]}`: "tools[0].name: required field is missing",
		`{"tools":[{"name":7}]}`:                "tools[0].name: must be a string",
		`{"tools":{}}`:                          "tools: must be an array",
		`{"result":{"tools":[]}}`:               "tools: required field is missing",
		`{"tools":[],"tools":[]}`:               "duplicate member name",
		`"x"`:                                   "must be an array",
	} {
		if _, err := ParseList([]byte(in), ListOptions{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseList(%s) error %v, want %q", in, err, want)
		}
	}
}

func TestToolsListMetaAndCursor(t *testing.T) {
	tl, err := ParseList([]byte(`{"tools":[{"name":"a","_meta":{"dev.etdi/bundle":{"x":1}}},{"name":"b"}],"nextCursor":"p2"}`), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.ToolMetas) != 1 || tl.ToolMetas[0].Get("dev.etdi/bundle") == nil {
		t.Fatalf("tool metas: %+v", tl.ToolMetas)
	}
	if tl.NextCursor == nil || tl.NextCursor.Str != "p2" {
		t.Fatalf("next cursor: %+v", tl.NextCursor)
	}
	if tl, _ := ParseList([]byte(`[{"name":"a"}]`), ListOptions{}); tl.NextCursor != nil || tl.ToolMetas != nil {
		t.Fatalf("array shape: %+v", tl)
	}
}

func TestInbandBundle(t *testing.T) {
	parse := func(s string) *strictjson.Value { return mustParse(t, s) }
	b, err := InbandBundle([]*strictjson.Value{parse(`{"x":1}`), parse(`{"dev.etdi/bundle":{"b":1,"a":2}}`), parse(`{"dev.etdi/bundle":{"a":2,"b":1}}`)})
	if err != nil || string(b) != `{"a":2,"b":1}` {
		t.Fatalf("same bundle twice: %s %v", b, err)
	}
	if b, err := InbandBundle([]*strictjson.Value{parse(`{"x":1}`)}); b != nil || err != nil {
		t.Fatalf("no bundle: %s %v", b, err)
	}
	if _, err := InbandBundle([]*strictjson.Value{parse(`{"dev.etdi/bundle":{"a":1}}`), parse(`{"dev.etdi/bundle":{"a":2}}`)}); err == nil {
		t.Fatal("two different bundles accepted")
	}
	if _, err := InbandBundle([]*strictjson.Value{parse(`{"dev.etdi/bundle":"text"}`)}); err == nil {
		t.Fatal("a string bundle accepted")
	}
}

// A server's answer is read only as the host reads it: the result object.
// Attack: shapes a host would read another way (a bare array, entries
// under "result", a member differing only in case) are refused.
func TestParseListResult(t *testing.T) {
	served := ListOptions{Result: true}
	tl, err := ParseList([]byte(`{"tools":[{"name":"a"}],"nextCursor":"2","_meta":{"k":1}}`), served)
	if err != nil || len(tl.Tools) != 1 || tl.NextCursor == nil || tl.Meta == nil {
		t.Fatalf("a plain result: %+v, %v", tl, err)
	}
	for in, want := range map[string]string{
		`[{"name":"a"}]`: "must be an object",
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}}`: "tools: required field is missing",
		`{"tools":[],"Tools":[{"name":"evil"}]}`:                     `member "Tools" of the result differs from "tools" only in case`,
		`{"tools":[],"_meta":"x"}`:                                   "_meta: must be an object",
	} {
		if _, err := ParseList([]byte(in), served); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
		if in == `[{"name":"a"}]` {
			if _, err := ParseList([]byte(in), ListOptions{}); err != nil {
				t.Errorf("a saved bare array refused: %v", err)
			}
		}
	}
	// A resources page is keyed by uri, bounded by MaxURILen.
	res := ListOptions{Lists: []List{ListResources}, Result: true}
	if tl, err := ParseList([]byte(`{"resources":[{"uri":"x://1","name":"one"}]}`), res); err != nil || tl.Tools[0].Name != "x://1" {
		t.Fatalf("a resources page: %+v, %v", tl, err)
	}
	long := `{"resources":[{"uri":"` + strings.Repeat("u", MaxURILen+1) + `"}]}`
	if _, err := ParseList([]byte(long), res); err == nil || !strings.Contains(err.Error(), "resources[0].uri: uri longer than 4096 bytes") {
		t.Fatalf("a long uri: %v", err)
	}
}

// Several lists in one saved document: the first is required, the others
// are in Others, nil when absent; their values count once against Limit.
func TestParseListOthers(t *testing.T) {
	lists := ListOptions{Lists: []List{ListTools, ListPrompts, ListResources, ListTemplates}}
	tl, err := ParseList([]byte(`{"tools":[{"name":"t"}],"prompts":[{"name":"p"},{"name":"q"}],"resourceTemplates":[]}`), lists)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Tools) != 1 || len(tl.Others) != 3 || len(tl.Others[0].Tools) != 2 || tl.Others[1] != nil || tl.Others[2] == nil || len(tl.Others[2].Tools) != 0 {
		t.Fatalf("lists: %+v", tl)
	}
	if tl.Nodes != 10 { // the object, 3 for tools, 5 for prompts, 1 for resourceTemplates
		t.Fatalf("nodes %d", tl.Nodes)
	}
	for in, want := range map[string]string{
		`{"prompts":[]}`:                          "tools: required field is missing",
		`{"tools":[],"prompts":[{"title":"p"}]}`:  "prompts[0].name: required field is missing",
		`{"tools":[],"resources":{}}`:             "resources: must be an array",
		`{"result":{"tools":[]},"jsonrpc":"2.0"}`: "",
	} {
		_, err := ParseList([]byte(in), lists)
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
	lists.Limit = tl.Nodes - 1
	if _, err := ParseList([]byte(`{"tools":[{"name":"t"}],"prompts":[{"name":"p"},{"name":"q"}],"resourceTemplates":[]}`), lists); err == nil || !strings.Contains(err.Error(), "the listing (all pages together)") {
		t.Fatalf("over the bound: %v", err)
	}
}

// A listing holds at most MaxTools entries per list, in every shape.
// Attack: a server that lists more is refused, not truncated.
func TestParseListMaxTools(t *testing.T) {
	entries := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"name":"t` + strconv.Itoa(i) + `"}`)
		}
		return b.String()
	}
	at, over := entries(MaxTools), entries(MaxTools+1)
	for _, o := range []ListOptions{{}, {Result: true}} {
		if tl, err := ParseList([]byte(`{"tools":[`+at+`]}`), o); err != nil || len(tl.Tools) != MaxTools {
			t.Fatalf("%+v: MaxTools entries refused: %v", o, err)
		}
		_, err := ParseList([]byte(`{"tools":[`+over+`]}`), o)
		if err == nil || err.Error() != "tools: more than 20000 tools" {
			t.Fatalf("%+v: MaxTools+1 entries: %v", o, err)
		}
	}
	_, err := ParseList([]byte(`[`+over+`]`), ListOptions{})
	if err == nil || err.Error() != "more than 20000 tools" {
		t.Fatalf("a bare array of MaxTools+1: %v", err)
	}
}

// A listing document larger than MaxManifestSize is refused before it is
// parsed, whatever it holds.
func TestParseListSize(t *testing.T) {
	doc := []byte(`{"tools":[]}` + strings.Repeat(" ", MaxManifestSize-12))
	if _, err := ParseList(doc, ListOptions{}); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	doc = append(doc, ' ')
	_, err := ParseList(doc, ListOptions{Result: true})
	if err == nil || err.Error() != "tools list larger than 67108864 bytes" {
		t.Fatalf("over the bound: %v", err)
	}
}
