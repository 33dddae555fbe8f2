package gate

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/etdi-dev/etdi/guard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport puts the gate in-process between a go-sdk client and the
// server that Inner connects to (an [mcp.CommandTransport], an
// [mcp.StreamableClientTransport], ...): the client session sees only what
// the gate lets through, exactly as a host behind etdi run does.
//
//	t := &gate.Transport{Inner: &mcp.CommandTransport{Command: exec.Command("weather")},
//		Options: gate.Options{Options: guard.Options{Policy: policy, Pins: pins, Name: "weather"}}}
//	session, err := mcp.NewClient(impl, nil).Connect(ctx, t, nil)
//
// The gate digests the raw JSON of every result the server sends, as the
// connection received it, before the client session decodes it: a typed
// round trip would drop fields the SDK does not know.
type Transport struct {
	Inner   mcp.Transport
	Options Options
	// Err, if not nil, receives why the gate's session ended (nil when the
	// client closed it), once.
	Err chan<- error
}

// Connect connects Inner and returns the client's side of the gate.
func (t *Transport) Connect(ctx context.Context) (mcp.Connection, error) {
	gate, err := New(t.Options)
	if err != nil {
		return nil, err
	}
	inner, err := t.Inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	p := newPipe()
	go func() {
		err := gate.Run(context.Background(), p.gateSide(), guard.SDKConn(inner))
		p.end(err)
		if t.Err != nil {
			t.Err <- err
		}
	}()
	return p, nil
}

// pipe is the client's side of an in-process gate (an mcp.Connection) and,
// through gateSide, the gate's side of the host.
type pipe struct {
	toGate, toClient chan []byte
	done             chan struct{}
	once             sync.Once
	mu               sync.Mutex
	err              error
}

func newPipe() *pipe {
	return &pipe{toGate: make(chan []byte, 16), toClient: make(chan []byte, 16), done: make(chan struct{})}
}

// end closes the pipe, for a reason the client's Read returns.
func (p *pipe) end(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
	p.once.Do(func() { close(p.done) })
}

func (p *pipe) reason() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	return io.EOF
}

// Read returns the next message the gate lets through to the client.
func (p *pipe) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case data := <-p.toClient:
		return jsonrpc.DecodeMessage(data)
	default:
	}
	select {
	case data := <-p.toClient:
		return jsonrpc.DecodeMessage(data)
	case <-p.done:
		select { // what the gate said last comes first
		case data := <-p.toClient:
			return jsonrpc.DecodeMessage(data)
		default:
		}
		return nil, p.reason()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write hands a message of the client to the gate.
func (p *pipe) Write(ctx context.Context, m jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return err
	}
	select {
	case p.toGate <- data:
		return nil
	case <-p.done:
		return p.reason()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close ends the session: the gate ends the server.
func (p *pipe) Close() error {
	p.end(nil)
	return nil
}

func (p *pipe) SessionID() string { return "" }

// gateSide is the host's side as the gate sees it.
func (p *pipe) gateSide() guard.Conn { return hostEnd{p} }

type hostEnd struct{ p *pipe }

func (h hostEnd) Read(ctx context.Context) ([]byte, error) {
	select {
	case data := <-h.p.toGate:
		return data, nil
	case <-h.p.done:
		return nil, io.EOF // the client closed the session
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (h hostEnd) Write(ctx context.Context, data []byte) error {
	select {
	case h.p.toClient <- data:
		return nil
	case <-h.p.done:
		return errors.New("the client closed the session")
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h hostEnd) Close() error {
	h.p.end(nil)
	return nil
}
