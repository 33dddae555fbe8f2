package inband_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/inband"
	"github.com/etdi-dev/etdi/release"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// forecastTool is a second tool of the weather server.
var forecastTool = &mcp.Tool{
	Name:        "get_forecast",
	Title:       "Forecast",
	Description: "Daily forecast for up to 7 days.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city"]}`),
	Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
}

// twoToolManifest defines both tools, written as a person writes JSON:
// members in another order than the server sends them, other whitespace,
// an escape the server does not use (\u0020). None of it is a difference.
// The annotations are as the go-sdk serializes mcp.ToolAnnotations, with
// idempotentHint false: what counts is what the server sends, which is
// why "etdi manifest init" writes a manifest from the running server.
const twoToolManifest = `{"provider": {"id": "acme"}, "server": {"name": "weather"},
  "tools": [
    {"version": "1.0.0", "permissions": [{"scope": "net:fetch"}],
     "definition": {
        "inputSchema": {"required": ["city"], "type": "object",
                        "properties": {"city": {"type": "string"}}},
        "description": "Get the current weather for a city.",
        "name": "get_weather"}},
    {"version": "2.1.0", "permissions": [{"scope": "net:fetch"}, {"scope": "geo:read"}],
     "definition": {
        "annotations": {"readOnlyHint": true, "idempotentHint": false},
        "name": "get_forecast",
        "title": "Forecast",
        "description": "Daily\u0020forecast for up to 7 days.",
        "inputSchema": {"type": "object", "required": ["city"],
          "properties": {"days": {"maximum": 7, "type": "integer", "minimum": 1}, "city": {"type": "string"}}}}}
  ]}`

func newServer(tools ...*mcp.Tool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1.2.0"}, nil)
	for _, t := range tools {
		s.AddTool(t, getWeather)
	}
	return s
}

func TestCheckServerMatches(t *testing.T) {
	ctx := context.Background()
	if err := inband.CheckServer(ctx, newServer(weatherTool, forecastTool), []byte(twoToolManifest)); err != nil {
		t.Fatalf("a server that serves the manifest's definitions: %v", err)
	}
	// The bundle the server carries in-band is etdi's own material, not
	// part of any definition.
	s := newServer(weatherTool, forecastTool)
	if err := inband.Attach(s, weatherBundle()); err != nil {
		t.Fatal(err)
	}
	if err := inband.CheckServer(ctx, s, []byte(twoToolManifest)); err != nil {
		t.Fatalf("with the bundle in-band: %v", err)
	}
}

func TestCheckServerDrifts(t *testing.T) {
	ctx := context.Background()
	nested := *forecastTool
	nested.InputSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":365}},"required":["city"]}`)
	annotated := *forecastTool
	annotated.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: false, Title: "Forecast"}
	extra := &mcp.Tool{Name: "delete_city", Description: "Deletes a city.", InputSchema: json.RawMessage(`{"type":"object"}`)}

	for _, tc := range []struct {
		name   string
		server *mcp.Server
		want   map[string]release.ServedStatus
		lines  []string
	}{
		{"nested schema value", newServer(weatherTool, &nested),
			map[string]release.ServedStatus{"get_forecast": release.ServedChanged},
			[]string{"get_forecast@2.1.0: served with another definition (inputSchema)", "/inputSchema/properties/days/maximum changed: 7 -> 365"}},
		{"annotations", newServer(weatherTool, &annotated),
			map[string]release.ServedStatus{"get_forecast": release.ServedChanged},
			[]string{"(annotations)", "/annotations/readOnlyHint changed: true -> false", `/annotations/title added: "Forecast"`}},
		{"a tool missing", newServer(weatherTool),
			map[string]release.ServedStatus{"get_forecast": release.ServedMissing},
			[]string{"(1 missing)", "get_forecast@2.1.0: in the manifest, not served"}},
		{"an extra tool", newServer(weatherTool, forecastTool, extra),
			map[string]release.ServedStatus{"delete_city": release.ServedExtra},
			[]string{"(1 extra)", "delete_city: served, not in the manifest", `"description":"Deletes a city."`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := inband.CheckServer(ctx, tc.server, []byte(twoToolManifest))
			var de *release.DriftError
			if !errors.As(err, &de) {
				t.Fatalf("want a *release.DriftError, got %v", err)
			}
			got := map[string]release.ServedStatus{}
			for _, d := range de.Tools {
				got[d.Name] = d.Status
			}
			if len(got) != len(tc.want) {
				t.Fatalf("drift %v, want %v", got, tc.want)
			}
			for n, s := range tc.want {
				if got[n] != s {
					t.Fatalf("drift %v, want %v", got, tc.want)
				}
			}
			for _, l := range tc.lines {
				if !strings.Contains(err.Error(), l) {
					t.Errorf("error lacks %q:\n%s", l, err)
				}
			}
		})
	}
}

func TestCheckServerBadManifest(t *testing.T) {
	err := inband.CheckServer(context.Background(), newServer(weatherTool), []byte(`{"provider": {"id": "acme"}}`))
	var de *release.DriftError
	if err == nil || errors.As(err, &de) || !strings.Contains(err.Error(), "inband: manifest: server: required field is missing") {
		t.Fatalf("a manifest that does not parse: %v", err)
	}
}

// A server whose listing fails is an error that says so, never a drift
// report nor a pass: nothing was compared.
func TestCheckServerListingFails(t *testing.T) {
	s := newServer(weatherTool, forecastTool)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				return nil, errors.New("the tool registry is down")
			}
			return next(ctx, method, req)
		}
	})
	err := inband.CheckServer(context.Background(), s, []byte(twoToolManifest))
	var de *release.DriftError
	if err == nil || errors.As(err, &de) || !strings.Contains(err.Error(), "inband: listing the server") || !strings.Contains(err.Error(), "the tool registry is down") {
		t.Fatalf("a server whose listing fails: %v", err)
	}
}
