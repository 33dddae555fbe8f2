// Package mcpclient fetches what a live MCP server offers: it connects
// (stdio or Streamable HTTP, through the official go-sdk transports),
// initializes, and follows tools/list pagination to the end. It keeps the
// raw JSON of every result, so no field of a tool definition is lost or
// normalized before etdi digests it.
package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProtocolVersion is the MCP revision etdi asks for.
const ProtocolVersion = "2025-06-18"

// Options bound a fetch.
type Options struct {
	// StartTimeout bounds the time from start to the initialize response
	// (default 20s).
	StartTimeout time.Duration
	// Timeout bounds the whole fetch (default 60s).
	Timeout time.Duration
	// MaxPages bounds tools/list pages (default 200).
	MaxPages int
	// ClientVersion is reported in clientInfo.
	ClientVersion string
}

func (o *Options) defaults() {
	if o.StartTimeout <= 0 {
		o.StartTimeout = 20 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.MaxPages <= 0 {
		o.MaxPages = 200
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "dev"
	}
}

// Listing is what a server offers.
type Listing struct {
	ProtocolVersion string `json:"protocolVersion"`
	// ServerName and ServerVersion come from serverInfo.
	ServerName    string `json:"serverName"`
	ServerVersion string `json:"serverVersion,omitempty"`
	// Instructions are the server's instructions (nil if it sent none).
	Instructions *string `json:"instructions,omitempty"`
	// Tools are all tools of all pages, in order.
	Tools []etdi.LiveTool `json:"-"`
	// Metas are the _meta objects of the tools/list results, one per page
	// that had one (they may carry an in-band bundle).
	Metas []*etdi.Value `json:"-"`
	// ToolMetas are the _meta objects of tools that have one.
	ToolMetas []*etdi.Value `json:"-"`
	Pages     int           `json:"pages"`
}

// ServerError reports a server that could not be listed. Stderr holds the
// end of what the server wrote to standard error, if it is a process.
type ServerError struct {
	Stage  string // "start", "initialize", "tools/list"
	Err    error
	Stderr string
}

func (e *ServerError) Error() string {
	msg := fmt.Sprintf("%s: %v", e.Stage, e.Err)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += "; server stderr: " + s
	}
	return msg
}

func (e *ServerError) Unwrap() error { return e.Err }

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// Stdio starts the command (argv[0] with its arguments; env replaces the
// environment when not nil), lists it, and stops it: stdin is closed, and
// the process is terminated, then killed, if it does not exit, and always
// reaped.
func Stdio(ctx context.Context, argv []string, env []string, dir string, opts Options) (*Listing, error) {
	if len(argv) == 0 {
		return nil, errors.New("no server command")
	}
	opts.defaults()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = dir
	stderr := &tail{max: 4096}
	cmd.Stderr = stderr
	t := &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	l, err := list(ctx, t, opts)
	var se *ServerError
	if errors.As(err, &se) {
		// Give a crashing server a moment to flush its last words.
		time.Sleep(50 * time.Millisecond)
		se.Stderr = stderr.String()
	}
	return l, err
}

type headerTransport struct {
	headers http.Header
	base    http.RoundTripper
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range h.headers {
		r.Header[k] = vs
	}
	return h.base.RoundTrip(r)
}

// HTTP lists a Streamable HTTP server at url, sending headers with every
// request.
func HTTP(ctx context.Context, url string, headers http.Header, opts Options) (*Listing, error) {
	opts.defaults()
	client := &http.Client{Timeout: opts.Timeout, Transport: &headerTransport{headers, http.DefaultTransport}}
	t := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: client, MaxRetries: -1, DisableStandaloneSSE: true}
	return list(ctx, t, opts)
}

func list(ctx context.Context, t mcp.Transport, opts Options) (l *Listing, err error) {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, &ServerError{Stage: "start", Err: err}
	}
	defer func() {
		if cerr := conn.Close(); cerr != nil && err == nil && !isExit(cerr) {
			err = &ServerError{Stage: "stop", Err: cerr}
		}
	}()
	c := &client{conn: conn}

	ictx, icancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer icancel()
	params := fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"etdi","version":%q}}`, ProtocolVersion, opts.ClientVersion)
	res, err := c.call(ictx, "initialize", json.RawMessage(params))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", opts.StartTimeout)
		}
		return nil, &ServerError{Stage: "initialize", Err: err}
	}
	l = &Listing{}
	if err := parseInitialize(res, l); err != nil {
		return nil, &ServerError{Stage: "initialize", Err: err}
	}
	if err := c.notify(ctx, "notifications/initialized"); err != nil {
		return nil, &ServerError{Stage: "initialize", Err: err}
	}
	seen := map[string]bool{}
	cursor := ""
	for {
		if l.Pages >= opts.MaxPages {
			return nil, &ServerError{Stage: "tools/list", Err: fmt.Errorf("more than %d pages", opts.MaxPages)}
		}
		p := json.RawMessage(`{}`)
		if cursor != "" {
			cb, _ := json.Marshal(map[string]string{"cursor": cursor})
			p = cb
		}
		res, err := c.call(ctx, "tools/list", p)
		if err != nil {
			return nil, &ServerError{Stage: "tools/list", Err: err}
		}
		l.Pages++
		page, err := etdi.ParseToolsList(res)
		if err != nil {
			return nil, &ServerError{Stage: "tools/list", Err: fmt.Errorf("page %d: %w", l.Pages, err)}
		}
		l.Tools = append(l.Tools, page.Tools...)
		if len(l.Tools) > etdi.MaxTools {
			return nil, &ServerError{Stage: "tools/list", Err: fmt.Errorf("more than %d tools", etdi.MaxTools)}
		}
		if page.Meta != nil {
			l.Metas = append(l.Metas, page.Meta)
		}
		l.ToolMetas = append(l.ToolMetas, page.ToolMetas...)
		next := page.NextCursor
		if next == nil || next.Kind == etdi.Null || (next.Kind == etdi.String && next.Str == "") {
			break
		}
		if next.Kind != etdi.String {
			return nil, &ServerError{Stage: "tools/list", Err: fmt.Errorf("page %d: nextCursor is a %s", l.Pages, next.Kind)}
		}
		if seen[next.Str] {
			return nil, &ServerError{Stage: "tools/list", Err: fmt.Errorf("page %d: nextCursor %q repeats: the listing loops", l.Pages, next.Str)}
		}
		seen[next.Str] = true
		cursor = next.Str
	}
	return l, nil
}

func isExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

func parseInitialize(res []byte, l *Listing) error {
	v, err := etdi.ParseJSON(res)
	if err != nil {
		return err
	}
	if v.Kind != etdi.Object {
		return fmt.Errorf("result is a %s", v.Kind)
	}
	if pv := v.Get("protocolVersion"); pv != nil && pv.Kind == etdi.String && pv.Str != "" {
		l.ProtocolVersion = pv.Str
	} else {
		return errors.New("result has no protocolVersion")
	}
	if si := v.Get("serverInfo"); si != nil && si.Kind == etdi.Object {
		if n := si.Get("name"); n != nil && n.Kind == etdi.String {
			l.ServerName = n.Str
		}
		if n := si.Get("version"); n != nil && n.Kind == etdi.String {
			l.ServerVersion = n.Str
		}
	}
	if in := v.Get("instructions"); in != nil {
		if in.Kind != etdi.String {
			return fmt.Errorf("instructions is a %s", in.Kind)
		}
		s := in.Str
		l.Instructions = &s
	}
	return nil
}

// client correlates requests and responses on a raw connection.
type client struct {
	conn   mcp.Connection
	nextID int64
}

func (c *client) notify(ctx context.Context, method string) error {
	return c.conn.Write(ctx, &jsonrpc.Request{Method: method})
}

// call sends a request and returns the raw result of its response. It
// skips notifications, refuses server-to-client requests (etdi offers no
// client capabilities) and rejects error responses.
func (c *client) call(ctx context.Context, method string, params json.RawMessage) ([]byte, error) {
	c.nextID++
	id, err := jsonrpc.MakeID(float64(c.nextID))
	if err != nil {
		return nil, err
	}
	if err := c.conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: params}); err != nil {
		return nil, err
	}
	for {
		msg, err := c.conn.Read(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, errors.New("the server closed the connection (exited?)")
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("reading the response: %w", err)
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			if m.ID.IsValid() {
				resp := &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "etdi does not serve " + m.Method}}
				if err := c.conn.Write(ctx, resp); err != nil {
					return nil, err
				}
			}
		case *jsonrpc.Response:
			if m.ID != id {
				continue
			}
			if m.Error != nil {
				return nil, fmt.Errorf("the server answered %s with an error: %v", method, m.Error)
			}
			if len(bytes.TrimSpace(m.Result)) == 0 {
				return nil, fmt.Errorf("the server answered %s without a result", method)
			}
			return m.Result, nil
		}
	}
}
