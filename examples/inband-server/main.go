// Command inband-server is an example MCP server, built with the go-sdk,
// that carries its etdi bundle in-band.
//
//	go build -o weather ./examples/inband-server
//	etdi manifest init --provider acme --server -- ./weather > weather.manifest.json
//	etdi sign --key acme.key --out weather.etdi.json weather.manifest.json
//	etdi check --trust trust.json --server -- ./weather -bundle weather.etdi.json
//
// -description changes the tool's description while the bundle stays the
// same, which is what a rug pull looks like to a client. -http ADDR serves
// Streamable HTTP at http://ADDR/mcp instead of stdio (loopback only).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/etdi-dev/etdi/inband"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type weatherArgs struct {
	City string `json:"city" jsonschema:"city name, e.g. Berlin"`
}

// build names the build; set it with -ldflags "-X main.build=NAME" to make
// another binary with the same tools.
var build = "1.0.0"

func main() {
	bundlePath := flag.String("bundle", "", "etdi bundle to carry in-band")
	addr := flag.String("http", "", "serve Streamable HTTP on this loopback address (e.g. 127.0.0.1:0) instead of stdio")
	description := flag.String("description", "Get the current weather for a city.", "the tool's description (change it to see etdi catch a rug pull)")
	flag.Parse()
	server := mcp.NewServer(&mcp.Implementation{Name: "go-weather", Version: build}, nil)
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
	if *addr != "" {
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			log.Fatal(err)
		}
		if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
			log.Fatalf("-http %s: loopback addresses only", *addr)
		}
		fmt.Printf("http://%s/mcp\n", ln.Addr()) // the URL, for whoever started it
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
		mux := http.NewServeMux()
		mux.Handle("/mcp", h)
		log.Fatal(http.Serve(ln, mux))
	}
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
