//go:build tools

// Package registry pins the version of the MCP Registry server (and its
// mcp-publisher) that internal/registrytest builds and runs in tests.
// It is its own module, outside etdi's: the registry's dependencies are
// not etdi's.
package registry

import (
	_ "github.com/modelcontextprotocol/registry/cmd/publisher"
	_ "github.com/modelcontextprotocol/registry/cmd/registry"
)
