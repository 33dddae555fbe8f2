package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/strictjson"
)

// wideTool hides text where a shortened display would not show it: past
// 2,048 bytes of a $defs entry and of a vendor object, in the members of
// array items beside their properties, in a required list naming no
// property, in a non-object annotations, in a schema's type, and after
// the 1,000th property.
func wideTool(t *testing.T) map[string]any {
	props := map[string]any{}
	for i := range 1001 {
		props[fmt.Sprintf("p%04d", i)] = map[string]any{"type": "string"}
	}
	tool := map[string]any{"name": "wide_tool", "description": "Harmless.",
		"inputSchema": map[string]any{"type": "object", "required": []string{"a", "PAYLOAD4 required"}, "properties": map[string]any{
			"a": map[string]any{"type": "object", "properties": props},
			"0b": map[string]any{"type": "array", "items": map[string]any{"type": "object", "x-note": "PAYLOAD5 items",
				"properties": map[string]any{"q": map[string]any{"type": "string"}}}},
			"zz": map[string]any{"type": "string", "description": "PAYLOAD1 after the 1000th property"}},
			"$defs": map[string]any{"pad": strings.Repeat("A", 2100), "zz": "PAYLOAD2 in $defs"}},
		"outputSchema": map[string]any{"type": "PAYLOAD6 type"},
		"annotations":  "PAYLOAD7 annotations",
		"x-vendor":     map[string]any{"pad": strings.Repeat("B", 2100), "zz": "PAYLOAD3 in a vendor object"}}
	return tool
}

func describe(t *testing.T, tool map[string]any) string {
	t.Helper()
	b, err := json.Marshal(tool)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strictjson.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	describeTool(&out, strictjson.AppendCanonical(nil, v), nil)
	return out.String()
}

// A person approves what they can see: every text of a tool is shown,
// and what is too big to show is named, with where to see it in full.
func TestDescribeToolShowsEverything(t *testing.T) {
	out := describe(t, wideTool(t))
	for i := 2; i <= 7; i++ {
		if !strings.Contains(out, fmt.Sprintf("PAYLOAD%d", i)) {
			t.Errorf("PAYLOAD%d not shown", i)
		}
	}
	// 1,006 properties: 0b, 0b[], 0b[].q, a, a.p0000 to a.p1000, zz.
	want := "[6 more input properties not shown, after the first 1000; the full definition: j at the approval prompt, or --json]"
	if !strings.Contains(out, want) {
		t.Errorf("no %q in:\n%.3000s", want, out)
	}
	if strings.Contains(out, "...") {
		t.Errorf("a value is cut without saying so")
	}
}

// A value too long to show whole says how many bytes it left out.
func TestDescribeToolSaysWhatItCuts(t *testing.T) {
	out := describe(t, map[string]any{"name": "big", "x-vendor": map[string]any{"pad": strings.Repeat("C", maxShownValue+100)}})
	want := fmt.Sprintf("[%d more bytes not shown; the full definition: j at the approval prompt, or --json]", len(`{"pad":"`)+maxShownValue+100+len(`"}`)-maxShownValue)
	if !strings.Contains(out, want) {
		t.Errorf("no %q", want)
	}
	if out := describe(t, map[string]any{"name": "small", "inputSchema": map[string]any{"type": "object", "required": []string{"city"},
		"properties": map[string]any{"city": map[string]any{"type": "string"}}}}); strings.Contains(out, "not shown") || strings.Contains(out, "required=") {
		t.Errorf("a small tool is described with a cut or a redundant required:\n%s", out)
	}
}
