package inband_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/inband"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/sign"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// weatherTool is the server's one tool. Its input schema is written out,
// so the manifest below holds the very definition the server lists.
var weatherTool = &mcp.Tool{
	Name:        "get_weather",
	Description: "Get the current weather for a city.",
	InputSchema: json.RawMessage(`{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}`),
}

func getWeather(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny"}}}, nil
}

// weatherManifest is the server's manifest, as "etdi manifest init" starts
// it and the provider completes it (the tool's version and permissions).
const weatherManifest = `{
  "provider": {"id": "acme", "name": "ACME Weather Inc."},
  "server": {"name": "weather", "version": "1.2.0"},
  "tools": [{
    "version": "1.0.0",
    "permissions": [{"scope": "net:fetch", "description": "Calls the ACME weather API"}],
    "definition": {
      "name": "get_weather",
      "description": "Get the current weather for a city.",
      "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    }
  }]
}`

// weatherBundle signs the manifest of the server, as "etdi sign" does,
// with the repository's fixed test key (its password is public). A real
// server reads its published bundle file instead.
func weatherBundle() []byte {
	m, err := etdi.ParseManifest([]byte(weatherManifest))
	if err != nil {
		log.Fatal(err)
	}
	signer, pub, err := keys.LoadSigner(context.Background(), "../testdata/keys/acme-ed25519.key",
		func() ([]byte, error) { return []byte("etdi-test-vectors-only"), nil })
	if err != nil {
		log.Fatal(err)
	}
	b, err := sign.Sign(m, signer, pub, sign.Options{
		IssuedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Expires:  time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC),
		Sequence: 1,
	})
	if err != nil {
		log.Fatal(err)
	}
	return b.Marshal()
}

// A go-sdk server carries its bundle in-band: every tools/list result
// holds the bundle object under _meta["dev.etdi/bundle"], so a client
// verifies the server without fetching a file. Here a client lists the
// tools over an in-memory connection.
func ExampleAttach() {
	server := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1.2.0"}, nil)
	server.AddTool(weatherTool, getWeather)
	if err := inband.Attach(server, weatherBundle()); err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, serverEnd, nil); err != nil {
		log.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1.0.0"}, nil)
	session, err := client.Connect(ctx, clientEnd, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()
	res, err := session.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}

	fmt.Println("tool:", res.Tools[0].Name)
	bundle, ok := res.Meta[etdi.MetaBundleKey].(map[string]any)
	fmt.Printf("_meta[%q] holds a bundle object: %v\n", etdi.MetaBundleKey, ok)
	fmt.Println("mediaType:", bundle["mediaType"])
	// Output:
	// tool: get_weather
	// _meta["dev.etdi/bundle"] holds a bundle object: true
	// mediaType: application/vnd.etdi.bundle.v1+json
}

// A provider's unit test checks that its go-sdk server serves exactly the
// definitions of the manifest it signs: a tool whose description changed
// in the code, and not in the manifest, fails the test with the
// difference, before any client sees a rug pull.
func ExampleCheckServer() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1.2.0"}, nil)
	server.AddTool(weatherTool, getWeather)
	if err := inband.CheckServer(ctx, server, []byte(weatherManifest)); err != nil {
		log.Fatal(err)
	}
	fmt.Println("the server serves the manifest's definitions")

	// The next commit edits the description in the code only.
	edited := *weatherTool
	edited.Description = "Get the current weather for a city, in metric units."
	drifted := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1.2.0"}, nil)
	drifted.AddTool(&edited, getWeather)
	fmt.Println(inband.CheckServer(ctx, drifted, []byte(weatherManifest)))
	// Output:
	// the server serves the manifest's definitions
	// the server does not serve the manifest's definitions (1 changed):
	//   get_weather@1.0.0: served with another definition (description)
	//     /description changed: Get the current weather for a city{+, in metric units+}.
}
