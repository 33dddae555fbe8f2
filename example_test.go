package etdi_test

import (
	"crypto/sha256"
	"fmt"
	"log"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/strictjson"
)

// A manifest is what a provider writes and signs: who publishes the
// tools, the server they belong to, and for each tool a version, the
// permissions it needs and its MCP definition. Each tool gets the digest
// of its definition.
func ExampleParseManifest() {
	m, err := etdi.ParseManifest([]byte(`{
  "provider": {"id": "acme", "name": "ACME Weather Inc."},
  "server": {"name": "weather", "version": "1.2.0"},
  "tools": [{
    "version": "2.1.0",
    "permissions": [{"scope": "net:fetch", "description": "Calls the ACME weather API"}],
    "definition": {
      "name": "get_forecast",
      "description": "Daily forecast for up to 7 days.",
      "inputSchema": {"type": "object", "properties": {"days": {"type": "integer", "minimum": 1, "maximum": 7}}}
    }
  }]
}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("provider %s, server %s %s\n", m.Provider.ID, m.Server.Name, m.Server.Version)
	for _, t := range m.Tools {
		fmt.Println(etdi.SubjectName(t.Name, t.Version), t.Permissions[0].Scope)
		fmt.Println(t.Digest)
	}
	// Output:
	// provider acme, server weather 1.2.0
	// get_forecast@2.1.0 net:fetch
	// sha256:88a9457b0471ab3af77b4a231002d5c41e14b3eecd9b00ae87c0665efafffc35
}

// Errors name the place in the document that is wrong.
func ExampleParseManifest_error() {
	_, err := etdi.ParseManifest([]byte(`{
  "provider": {"id": "acme"},
  "server": {"name": "weather"},
  "tools": [{"version": "1.0", "permissions": [], "definition": {"name": "get_weather"}}]
}`))
	fmt.Println(err)
	// Output:
	// tools[0].version: "1.0" is not a semantic version (want MAJOR.MINOR.PATCH)
}

// The definition digest of a tool is the SHA-256 of the RFC 8785
// canonical form of its MCP tool object: members sorted by name, no
// whitespace, numbers and strings in one fixed spelling (1.0 becomes 1).
func ExampleCanonicalize() {
	tool := []byte(`{
  "name": "get_forecast",
  "description": "Daily forecast for up to 7 days.",
  "inputSchema": {"type": "object", "properties": {"days": {"type": "integer", "minimum": 1.0, "maximum": 7}}}
}`)
	canonical, err := strictjson.Canonicalize(tool)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(canonical))

	d, err := etdi.DigestJSON(tool)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d)
	fmt.Println(d == sha256.Sum256(canonical))
	// Output:
	// {"description":"Daily forecast for up to 7 days.","inputSchema":{"properties":{"days":{"maximum":7,"minimum":1,"type":"integer"}},"type":"object"},"name":"get_forecast"}
	// sha256:88a9457b0471ab3af77b4a231002d5c41e14b3eecd9b00ae87c0665efafffc35
	// true
}

// Key order and whitespace do not change a digest, so a server may
// serialize its tools as it likes. Any change of a value does.
func ExampleDigestJSON() {
	for _, def := range []string{
		// Compact, in the order a server might send it.
		`{"name":"get_forecast","description":"Daily forecast for up to 7 days.","inputSchema":{"type":"object","properties":{"days":{"type":"integer","minimum":1,"maximum":7}}}}`,
		// Indented, members in another order.
		`{
		  "inputSchema": {
		    "properties": {"days": {"maximum": 7, "minimum": 1, "type": "integer"}},
		    "type": "object"
		  },
		  "description": "Daily forecast for up to 7 days.",
		  "name": "get_forecast"
		}`,
		// One value changed: 14 days instead of 7.
		`{"name":"get_forecast","description":"Daily forecast for up to 14 days.","inputSchema":{"type":"object","properties":{"days":{"type":"integer","minimum":1,"maximum":14}}}}`,
	} {
		d, err := etdi.DigestJSON([]byte(def))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(d.Short())
	}
	// Output:
	// 88a9457b0471
	// 88a9457b0471
	// 1de789ce3c67
}

// A client parses what a server really lists, here a whole JSON-RPC
// response to tools/list, and gets the definition digest of each live
// tool, computed exactly as for a manifest.
func ExampleParseList() {
	live, err := etdi.ParseList([]byte(`{"jsonrpc": "2.0", "id": 2, "result": {"tools": [
  {"name": "get_weather", "description": "Get the current weather for a city.",
   "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
  {"name": "get_forecast", "description": "Daily forecast for up to 7 days.",
   "inputSchema": {"type": "object", "properties": {"days": {"type": "integer", "minimum": 1, "maximum": 7}}}}
]}}`), etdi.ListOptions{})

	if err != nil {
		log.Fatal(err)
	}
	for _, t := range live.Tools {
		fmt.Println(t.Digest.Short(), t.Name)
	}
	// Output:
	// 0e1f9f5d833a get_weather
	// 88a9457b0471 get_forecast
}

// A live tool matches its signed definition when the digests are equal.
// etdi's own _meta material, such as an in-band bundle, is left out of
// the digest (and _meta with it when nothing else remains), so carrying
// a bundle does not change the definitions it signs.
func ExampleLiveTool() {
	live, err := etdi.ParseList([]byte(`{"tools": [{
  "name": "get_forecast",
  "description": "Daily forecast for up to 7 days.",
  "inputSchema": {"type": "object", "properties": {"days": {"type": "integer", "minimum": 1, "maximum": 7}}},
  "_meta": {"dev.etdi/bundle": {"mediaType": "application/vnd.etdi.bundle.v1+json"}}
}]}`), etdi.ListOptions{})

	if err != nil {
		log.Fatal(err)
	}
	t := live.Tools[0]
	fmt.Println(string(t.Canonical))

	signed, err := etdi.ParseDigest("sha256:88a9457b0471ab3af77b4a231002d5c41e14b3eecd9b00ae87c0665efafffc35")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("matches the signed definition:", t.Digest == signed)
	// Output:
	// {"description":"Daily forecast for up to 7 days.","inputSchema":{"properties":{"days":{"maximum":7,"minimum":1,"type":"integer"}},"type":"object"},"name":"get_forecast"}
	// matches the signed definition: true
}
