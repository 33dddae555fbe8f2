package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/etdi-dev/etdi/gate"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/trust"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Go host puts the gate between its go-sdk client and a server: it sees
// only approved tools, and a call of anything else never reaches the
// server.
func ExampleTransport() {
	dir, _ := os.MkdirTemp("", "guard")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	opts := guard.Options{Policy: &trust.Policy{Unsigned: trust.Warn}, Pins: filepath.Join(dir, "pins.db"), Name: "weather", By: "alice"}

	server := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1.0.0"}, nil)
	server.AddTool(&mcp.Tool{Name: "get_weather", Description: "Get the weather.",
		InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny"}}}, nil
	})
	connect := func() mcp.Transport {
		serverEnd, clientEnd := mcp.NewInMemoryTransports()
		if _, err := server.Connect(ctx, serverEnd, nil); err != nil {
			log.Fatal(err)
		}
		return clientEnd
	}

	// A person approves the server once (etdi check --approve does this).
	conn, _ := connect().Connect(ctx)
	l, _ := guard.List(ctx, guard.SDKConn(conn), guard.FetchOptions{})
	conn.Close()
	r, _ := guard.Check(ctx, l, opts)
	guard.Approve(ctx, r, guard.ApproveOptions{})

	// The host, through the gate.
	client := mcp.NewClient(&mcp.Implementation{Name: "my-host", Version: "1.0.0"}, nil)
	session, err := client.Connect(ctx, &gate.Transport{Inner: connect(), Options: gate.Options{Options: opts}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()
	tools, _ := session.ListTools(ctx, nil)
	for _, t := range tools.Tools {
		fmt.Println("tool", t.Name)
	}
	res, _ := session.CallTool(ctx, &mcp.CallToolParams{Name: "get_weather"})
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// A tool the server does not offer is unknown, as the server would
	// answer (-32602), with etdi's reason in data; one it offers that is
	// not approved as it is now is refused with guard.BlockedCode.
	_, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "delete_everything"})
	var unknown *jsonrpc.Error
	if errors.As(err, &unknown) && unknown.Code == jsonrpc.CodeInvalidParams {
		fmt.Println("unknown:", string(unknown.Data) != "")
	}
	// Output:
	// tool get_weather
	// sunny
	// unknown: true
}
