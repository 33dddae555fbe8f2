// Package testgen builds synthetic manifests and tools/list results of any
// size for benchmarks and load tests.
package testgen

import (
	"encoding/json"
	"fmt"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/sign"
	"github.com/etdi-dev/etdi/trust"
)

// Definition returns a realistic MCP tool definition (about 1 KB) for tool i.
func Definition(i int) map[string]any {
	return map[string]any{
		"name":        fmt.Sprintf("tool_%05d", i),
		"title":       fmt.Sprintf("Tool number %d", i),
		"description": fmt.Sprintf("Tool %d fetches records from the inventory service and returns them as JSON. Use it when the user asks about stock levels, prices or locations of items.", i),
		"inputSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"query":  map[string]any{"type": "string", "description": "Free-text search", "maxLength": 256},
				"limit":  map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
				"filter": map[string]any{"type": "object", "properties": map[string]any{"warehouse": map[string]any{"type": "string"}, "inStock": map[string]any{"type": "boolean"}}},
			},
			"required": []any{"query"},
		},
		"outputSchema": map[string]any{"type": "object", "properties": map[string]any{"items": map[string]any{"type": "array"}}},
		"annotations":  map[string]any{"readOnlyHint": true, "openWorldHint": false},
	}
}

// Manifest returns a manifest with n tools.
func Manifest(n int) []byte {
	tools := make([]any, n)
	for i := range tools {
		tools[i] = map[string]any{
			"version":     "1.0.0",
			"permissions": []any{map[string]any{"scope": "inventory:read", "description": "Reads inventory"}},
			"definition":  Definition(i),
		}
	}
	b, err := json.Marshal(map[string]any{
		"provider": map[string]any{"id": "acme", "name": "ACME"},
		"server":   map[string]any{"name": "inventory", "version": "3.0.0"},
		"tools":    tools,
	})
	if err != nil {
		panic(err)
	}
	return b
}

// ToolsList returns a tools/list result with the same n tools.
func ToolsList(n int) []byte {
	tools := make([]any, n)
	for i := range tools {
		tools[i] = Definition(i)
	}
	b, err := json.Marshal(map[string]any{"tools": tools})
	if err != nil {
		panic(err)
	}
	return b
}

// Signed returns an n-tool manifest signed with a new Ed25519 key as a
// bundle, and a trust policy that trusts that key for provider "acme".
func Signed(n int) (bundle []byte, p *trust.Policy, err error) {
	priv, err := keys.Generate(keys.Ed25519)
	if err != nil {
		return nil, nil, err
	}
	s, err := keys.Signer(priv)
	if err != nil {
		return nil, nil, err
	}
	m, err := etdi.ParseManifest(Manifest(n))
	if err != nil {
		return nil, nil, err
	}
	b, err := sign.Sign(m, s, priv.Public(), sign.Options{})
	if err != nil {
		return nil, nil, err
	}
	p = trust.New()
	if _, err := p.AddKey("acme", trust.Key{PublicKey: priv.Public()}); err != nil {
		return nil, nil, err
	}
	return b.Marshal(), p, nil
}
