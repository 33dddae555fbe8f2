package mcpclient

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SDKSession is a go-sdk connection (one end of mcp.NewInMemoryTransports,
// an mcp.CommandTransport's, ...) as a Session: messages are encoded as
// the SDK encodes them, with each result's raw JSON untouched, so that
// ListSession digests what the server sent, not a typed round trip of it.
func SDKSession(c mcp.Connection) Session { return &sdkSession{c} }

type sdkSession struct{ c mcp.Connection }

func (s *sdkSession) Read(ctx context.Context) ([]byte, error) {
	m, err := s.c.Read(ctx)
	if err != nil {
		return nil, err
	}
	return jsonrpc.EncodeMessage(m)
}

func (s *sdkSession) Write(ctx context.Context, data []byte) error {
	m, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return err
	}
	return s.c.Write(ctx, m)
}

func (s *sdkSession) Close() error { return s.c.Close() }
