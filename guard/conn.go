package guard

import (
	"context"
	"errors"
	"io"

	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Conn carries the JSON-RPC messages of one side of a session, one
// message per Read or Write: the host's side of etdi run (its stdin and
// stdout), or the server's (a process over stdio, a Streamable HTTP
// endpoint). Read and Write may be called concurrently; Close unblocks a
// pending Read.
type Conn interface {
	Read(ctx context.Context) ([]byte, error)
	Write(ctx context.Context, msg []byte) error
	Close() error
}

// StartServer starts the server of a gate session: the command over
// stdio in its own process group (what it writes to stderr is copied to
// stderr if not nil), or a Streamable HTTP session with the URL. Closing
// the [Conn] ends the server; a process is always reaped.
func StartServer(s Launch, stderr io.Writer) (Conn, error) {
	switch {
	case len(s.Command) > 0 && s.URL != "":
		return nil, errors.New("guard: a server has a command or a URL, not both")
	case len(s.Command) > 0:
		return mcpclient.StartStdio(s.Command, s.serverEnv(), s.Dir, stderr)
	case s.URL != "":
		return mcpclient.DialHTTP(s.URL, s.Header)
	}
	return nil, errors.New("guard: a server needs a command or a URL")
}

// StreamConn is the host's side of a session over MCP's stdio transport:
// messages are lines read from r and written to w (etdi run's stdin and
// stdout); Close calls closer if not nil.
func StreamConn(r io.Reader, w io.Writer, closer func() error) Conn {
	return mcpclient.NewStreamConn(r, w, closer)
}

// SDKConn is a go-sdk connection as a [Conn], for [List] or a Gate.
func SDKConn(c mcp.Connection) Conn { return mcpclient.SDKSession(c) }
