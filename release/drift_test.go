package release

import (
	"errors"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
)

const driftManifest = `{"provider": {"id": "acme"}, "server": {"name": "weather"}, "tools": [
  {"version": "1.0.0", "permissions": [], "definition": {"name": "get_weather", "description": "Get the weather.", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}},
  {"version": "1.1.0", "permissions": [], "definition": {"name": "get_forecast", "inputSchema": {"type": "object"}}}]}`

func servedTools(t *testing.T, list string) []etdi.LiveTool {
	t.Helper()
	tl, err := etdi.ParseList([]byte(list), etdi.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tl.Tools
}

func TestCompareServed(t *testing.T) {
	m, err := etdi.ParseManifest([]byte(driftManifest))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, list, want string
		lines            []string
	}{
		{"the same", `{"tools": [{"name": "get_weather", "description": "Get the weather.", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}, {"name": "get_forecast", "inputSchema": {"type": "object"}}]}`,
			"get_weather:match get_forecast:match", nil},
		{"key order, whitespace, escapes, another order of tools, etdi's _meta", `{"tools": [
			{ "inputSchema" : { "type" : "object" } , "name" : "get_forecast", "_meta": {"dev.etdi/bundle": {}} },
			{"inputSchema": {"properties": {"city": {"type": "string"}}, "type": "object"}, "description": "Get the weather\u002e", "name": "get_weather"}]}`,
			"get_weather:match get_forecast:match", nil},
		{"changed", `[{"name": "get_weather", "description": "Get the weather. <IMPORTANT>x</IMPORTANT>", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}, {"name": "get_forecast", "inputSchema": {"type": "object"}}]`,
			"get_weather:changed get_forecast:match", []string{"(1 changed)", "get_weather@1.0.0: served with another definition (description)", "/description changed: Get the weather.{+ <IMPORTANT>x</IMPORTANT>+}"}},
		{"missing and extra", `[{"name": "get_weather", "description": "Get the weather.", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}, {"name": "delete_city"}]`,
			"get_weather:match get_forecast:missing delete_city:extra", []string{"(1 missing, 1 extra)", "get_forecast@1.1.0: in the manifest, not served", `{"inputSchema":{"type":"object"},"name":"get_forecast"}`, "delete_city: served, not in the manifest", `{"name":"delete_city"}`}},
		{"listed twice", `[{"name": "get_weather"}, {"name": "get_weather"}, {"name": "x"}, {"name": "x"}, {"name": "get_forecast", "inputSchema": {"type": "object"}}]`,
			"get_weather:duplicate get_forecast:match x:duplicate", []string{"(2 duplicate)", "get_weather@1.0.0: served more than once"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			served := servedTools(t, tc.list)
			var got []string
			for _, st := range CompareServed(m, served) {
				got = append(got, st.Name+":"+string(st.Status))
			}
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("got %v, want %s", got, tc.want)
			}
			err := CheckServed(m, served)
			if tc.lines == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var de *DriftError
			if !errors.As(err, &de) {
				t.Fatalf("%v", err)
			}
			for _, l := range tc.lines {
				if !strings.Contains(err.Error(), l) {
					t.Errorf("error lacks %q:\n%s", l, err)
				}
			}
		})
	}
}

// An extra tool's definition is shown in the drift error cut to
// MaxChangeText bytes: a server's hostile text does not flood the report.
func TestDriftErrorBoundsDefinitions(t *testing.T) {
	m, err := etdi.ParseManifest([]byte(driftManifest))
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 3*etdi.MaxChangeText)
	served := servedTools(t, `{"tools": [{"name": "get_weather", "description": "Get the weather.", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}},
		{"name": "get_forecast", "inputSchema": {"type": "object"}}, {"name": "flood", "description": "`+long+`"}]}`)
	err = CheckServed(m, served)
	if err == nil {
		t.Fatal("an extra tool is not drift")
	}
	msg := err.Error()
	if strings.Contains(msg, long[:etdi.MaxChangeText+1]) || !strings.Contains(msg, long[:etdi.MaxChangeText-40]) || !strings.HasSuffix(msg, "...") {
		t.Fatalf("definition not cut to %d bytes: %d bytes of report", etdi.MaxChangeText, len(msg))
	}
}
