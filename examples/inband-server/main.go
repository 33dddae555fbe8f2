// Command inband-server is an example MCP server, built with the go-sdk,
// that carries its etdi bundle in-band.
//
//	go build -o weather ./examples/inband-server
//	etdi manifest init --provider acme --server -- ./weather > weather.manifest.json
//	etdi sign --key acme.key --out weather.etdi.json weather.manifest.json
//	etdi check --trust trust.json --server -- ./weather -bundle weather.etdi.json
//
// -description changes the tool's description while the bundle stays the
// same, which is what a rug pull looks like to a client.
package main

import (
	"context"
	"flag"
	"log"
	"os"

	"github.com/etdi-dev/etdi/inband"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type weatherArgs struct {
	City string `json:"city" jsonschema:"city name, e.g. Berlin"`
}

func main() {
	bundlePath := flag.String("bundle", "", "etdi bundle to carry in-band")
	description := flag.String("description", "Get the current weather for a city.", "the tool's description (change it to see etdi catch a rug pull)")
	flag.Parse()
	server := mcp.NewServer(&mcp.Implementation{Name: "go-weather", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "get_weather", Description: *description},
		func(ctx context.Context, req *mcp.CallToolRequest, args weatherArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny in " + args.City}}}, nil, nil
		})
	if *bundlePath != "" {
		b, err := os.ReadFile(*bundlePath)
		if err != nil {
			log.Fatal(err)
		}
		if err := inband.Attach(server, b); err != nil {
			log.Fatal(err)
		}
	}
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
