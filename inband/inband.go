// Package inband lets a Go MCP server built with the official go-sdk
// carry its etdi bundle in-band, so clients verify it without fetching a
// file: the bundle is added to the _meta of every tools/list result under
// the key "dev.etdi/bundle" (SPEC.md §15).
//
//	bundle, _ := os.ReadFile("weather.etdi.json")
//	server := mcp.NewServer(&mcp.Implementation{Name: "weather"}, nil)
//	mcp.AddTool(server, tool, handler)
//	if err := inband.Attach(server, bundle); err != nil { ... }
//
// The bundle covers the tool definitions as the server serves them: sign a
// manifest made with "etdi manifest init" from this very server.
package inband

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/etdi-dev/etdi"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Middleware returns go-sdk receiving middleware that adds bundle to the
// _meta of tools/list results. The bundle is checked for form first.
func Middleware(bundle []byte) (mcp.Middleware, error) {
	if _, err := etdi.ParseBundle(bundle); err != nil {
		return nil, fmt.Errorf("inband: not an etdi bundle: %w", err)
	}
	raw := json.RawMessage(bundle)
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil || method != "tools/list" {
				return res, err
			}
			if lr, ok := res.(*mcp.ListToolsResult); ok {
				if lr.Meta == nil {
					lr.Meta = mcp.Meta{}
				}
				lr.Meta[etdi.MetaBundleKey] = raw
			}
			return res, err
		}
	}, nil
}

// Attach adds the bundle middleware to server.
func Attach(server *mcp.Server, bundle []byte) error {
	mw, err := Middleware(bundle)
	if err != nil {
		return err
	}
	server.AddReceivingMiddleware(mw)
	return nil
}
