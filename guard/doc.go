// Package guard decides whether what an MCP server offers may reach a
// host: it fetches a server's listing (or takes one the host received),
// verifies it against the trust policy, compares it with the approved
// pins, records what it found in the history, and reports (SPEC.md §10,
// docs/check.md#check-against-pins, docs/gate.md#runtime-gate). etdi check and etdi run are both built on it, so a Go MCP
// host gets the same decisions in a few lines:
//
//	l, err := guard.Fetch(ctx, guard.Launch{Command: []string{"weather"}}, guard.FetchOptions{})
//	...
//	r, err := guard.Check(ctx, l, guard.Options{Policy: policy, Pins: "pins.db"})
//	...
//	if r.ExitCode() != 0 { ... } // SPEC.md §11: 13 needs approval, 11 a rug pull, ...
//	ok := r.Allowed("get_weather")
//
// Package gate is the runtime gate built on it (etdi run): it puts the
// check between a host and a server for a whole session, so that the host
// only ever sees approved, unchanged tools and cannot call anything else.
//
// Everything a server sends is hostile: listings are parsed under the
// bounds of SPEC.md §2 and docs/live.md#live-servers, a definition that shows a configured
// credential is never compared or recorded, and the pin database is
// opened only for the moment it is read or written, never for a session.
package guard
