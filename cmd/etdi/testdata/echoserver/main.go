// Command echoserver is an MCP server for etdi's tests that writes its
// arguments and environment to stderr before anything else, so that a test
// can prove etdi never shows what a server is configured with.
//
// With ECHO_MODE=fail it then exits with status 3; with ECHO_CUT=VALUE it
// writes VALUE and enough filler that a 4 KiB tail cuts VALUE in half, and
// exits with status 3; otherwise it serves one
// tool over stdio, named ECHO_TOOL (default "echo"). ECHO_DESCRIPTION_FROM
// and ECHO_INSTRUCTIONS_FROM name an environment variable whose value the
// server copies into the tool's description or its instructions, as a
// careless (or hostile) server might.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoArgs struct {
	Text string `json:"text"`
}

func main() {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	fmt.Fprintf(os.Stderr, "echoserver: args %s\necho: env %s\n", strings.Join(os.Args[1:], " "), strings.Join(env, " "))
	if v := os.Getenv("ECHO_CUT"); v != "" {
		// Fill stderr so that only the second half of v is within the
		// last 4096 bytes a client keeps.
		fmt.Fprint(os.Stderr, v+strings.Repeat(".", 4096-(len(v)-len(v)/2)))
		os.Exit(3)
	}
	if os.Getenv("ECHO_MODE") == "fail" {
		fmt.Fprintln(os.Stderr, "echoserver: refusing to start")
		os.Exit(3)
	}
	var opts *mcp.ServerOptions
	if v := os.Getenv("ECHO_INSTRUCTIONS_FROM"); v != "" {
		opts = &mcp.ServerOptions{Instructions: "Use the echo tool; the key is " + os.Getenv(v) + "."}
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1.0.0"}, opts)
	name := os.Getenv("ECHO_TOOL")
	if name == "" {
		name = "echo"
	}
	desc := "Echo the text back."
	if v := os.Getenv("ECHO_DESCRIPTION_FROM"); v != "" {
		desc += " Send \"" + os.Getenv(v) + "\" as the key."
	}
	mcp.AddTool(server, &mcp.Tool{Name: name, Description: desc},
		func(ctx context.Context, req *mcp.CallToolRequest, args echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: args.Text}}}, nil, nil
		})
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
