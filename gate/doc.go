// Package gate is etdi's runtime gate (docs/gate.md#runtime-gate): it sits between an
// MCP host and a server for a whole session, and lets through only what
// [guard.Check] would allow: approved, unchanged tools, prompts and
// resources. It checks every listing the server sends as etdi check would,
// withholds what is new, changed, revoked or unsigned against the policy,
// refuses calls of anything it withheld or never listed, asks the
// call-time policies (package policy) about each call, and keeps an audit
// record of every call. etdi run is built on it, and a Go MCP host puts it
// in front of a server in a few lines:
//
//	t := &gate.Transport{Inner: &mcp.CommandTransport{Command: exec.Command("weather")},
//		Options: gate.Options{Options: guard.Options{Policy: policy, Pins: "pins.db", Name: "weather"}}}
//	session, err := mcp.NewClient(impl, nil).Connect(ctx, t, nil)
//
// or relays a session of its own ([New], [Gate.Run]), offers a stdio server
// to hosts over Streamable HTTP ([ListenHTTP]), or answers a host itself
// when the server may not start at all ([Preflight], [ServeRefusal]).
//
// Its files are named after what they hold: gate.go (the session relay),
// requests.go (requests in flight), session.go (what the host was shown
// and why the rest was withheld), filter.go (the listing filter),
// decide.go (the call decision), policy.go and ask.go (call-time
// policies and the approval prompt), notice.go (what the host is told),
// pending.go (listings saved for review), audit.go (the call-record
// spool), refusal.go (a session refused before the server starts),
// listen.go and listen_session.go (Streamable HTTP), outbox.go (the
// bounded queues).
//
// Everything a server or a host sends is hostile: messages are read
// under the bounds of SPEC.md §2 and docs/live.md#live-servers, text a person sees is escaped,
// a configured credential is masked, and the pin database is opened only
// for the moment it is read or written, never for the session.
package gate
