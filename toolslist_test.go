package etdi

import (
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/strictjson"
)

func TestParseToolsList(t *testing.T) {
	tool := `{"name":"a","inputSchema":{"type":"object"}}`
	for name, in := range map[string]string{
		"result":    `{"tools":[` + tool + `],"nextCursor":"x"}`,
		"jsonrpc":   `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + tool + `]}}`,
		"array":     `[` + tool + `]`,
		"with meta": `{"tools":[` + tool + `],"_meta":{"dev.etdi/bundle":"x"}}`,
	} {
		tl, err := ParseToolsList([]byte(in))
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
		if _, err := ParseToolsList([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseToolsList(%s) error %v, want %q", in, err, want)
		}
	}
}

func TestToolsListMetaAndCursor(t *testing.T) {
	tl, err := ParseToolsList([]byte(`{"tools":[{"name":"a","_meta":{"dev.etdi/bundle":{"x":1}}},{"name":"b"}],"nextCursor":"p2"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.ToolMetas) != 1 || tl.ToolMetas[0].Get("dev.etdi/bundle") == nil {
		t.Fatalf("tool metas: %+v", tl.ToolMetas)
	}
	if tl.NextCursor == nil || tl.NextCursor.Str != "p2" {
		t.Fatalf("next cursor: %+v", tl.NextCursor)
	}
	if tl, _ := ParseToolsList([]byte(`[{"name":"a"}]`)); tl.NextCursor != nil || tl.ToolMetas != nil {
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
