// Package realclients holds etdi's tests with real MCP clients: the
// official conformance suite's server scenarios against its reference
// server, its client scenarios against its test servers (with MCP
// Inspector's CLI as the client), MCP Inspector's CLI one-shot calls, and
// Claude Code's and Gemini CLI's "mcp list", each run directly and
// through etdi run, with the same result required both ways. The clients
// come from npm (testdata/clients, installed with npm ci) and run on the
// Node.js 22 that folder installs. The package has no code of its own.
package realclients
