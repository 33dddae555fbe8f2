package mcpclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// httpConn speaks Streamable HTTP (MCP 2025-06-18): each message is a
// POST; the answer to a call comes back as a JSON body or in a
// text/event-stream. etdi makes one call at a time and opens no
// standalone stream, so the messages that may answer a call are those of
// its own response.
//
// It is written here rather than taken from the go-sdk
// (mcp.StreamableClientTransport) because the SDK reads JSON and error
// bodies whole (io.ReadAll, after gzip is inflated) and SSE events without
// a size limit, so a server decides how much memory the client uses. Here
// every byte read counts against the fetch's budget while it is read, the
// headers given by the user reach only the origin the user named, and a
// redirect to another origin is refused.
type httpConn struct {
	client   *http.Client
	endpoint string
	b        *budget
	mu       sync.Mutex // session and protocol: answers are sent concurrently
	session  string
	protocol string // MCP-Protocol-Version, once initialized

	body io.ReadCloser // the response being read, nil if none
	sse  *lineReader   // nil for a JSON body
	read bool          // the JSON body was returned

	answers chan []byte
	quit    chan struct{}
	ctx     context.Context
}

// origin is the scheme, host and port of u, the unit of trust for
// headers and redirects.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// headerTransport adds the user's headers to requests for the named
// origin only.
type headerTransport struct {
	origin  string
	headers http.Header
	base    http.RoundTripper
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if origin(r.URL) == h.origin && len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, vs := range h.headers {
			r.Header[k] = vs
		}
	}
	return h.base.RoundTrip(r)
}

// newHTTPClient returns the client of one fetch: redirects stay on the
// named origin, the response header is bounded, and the user's headers
// go to the named origin only.
func newHTTPClient(endpoint *url.URL, headers http.Header, timeout time.Duration) *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxResponseHeaderBytes = maxHeaderBytes
	named := origin(endpoint)
	return &http.Client{
		Timeout:   timeout,
		Transport: &headerTransport{origin: named, headers: headers, base: base},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if o := origin(req.URL); o != named {
				return fmt.Errorf("redirect to %q refused: the tools must come from %q, the server named", clip(req.URL.Redacted()), named)
			}
			if len(via) >= 10 {
				return errors.New("more than 10 redirects")
			}
			return nil
		},
	}
}

func startHTTP(ctx context.Context, endpoint string, headers http.Header, timeout time.Duration, b *budget) (*httpConn, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("url %q: want http or https", clip(endpoint))
	}
	c := &httpConn{client: newHTTPClient(u, headers, timeout), endpoint: endpoint, b: b,
		answers: make(chan []byte, maxPendingAnswers), quit: make(chan struct{}), ctx: ctx}
	go c.writeAnswers()
	return c, nil
}

func (c *httpConn) writeAnswers() {
	for {
		select {
		case data := <-c.answers:
			if resp, err := c.post(c.ctx, data); err == nil {
				resp.Body.Close()
			}
		case <-c.quit:
			return
		}
	}
}

func (c *httpConn) answer(data []byte) {
	select {
	case c.answers <- data:
	default:
	}
}

func (c *httpConn) post(ctx context.Context, data []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.setSession(req)
	return c.client.Do(req)
}

// send posts a message. For a call, the response becomes what recv reads.
func (c *httpConn) send(ctx context.Context, data []byte, call bool) error {
	c.endBody()
	resp, err := c.post(ctx, data)
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(c.b.reader(resp.Body), maxErrorBody))
		resp.Body.Close()
		msg := fmt.Sprintf("HTTP status %s", resp.Status)
		if s := strings.TrimSpace(string(body)); s != "" {
			msg += fmt.Sprintf(": %q", clip(s))
		}
		return errors.New(msg)
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		if !visibleASCII(s) {
			resp.Body.Close()
			return fmt.Errorf("session id %q is not visible ASCII", clip(s))
		}
		c.mu.Lock()
		if c.session == "" {
			c.session = s
		}
		c.mu.Unlock()
	}
	if !call {
		resp.Body.Close()
		return nil
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		c.body, c.sse, c.read = resp.Body, nil, false
	case "text/event-stream":
		c.body, c.sse = resp.Body, newLineReader(c.b.reader(resp.Body))
	default:
		resp.Body.Close()
		return fmt.Errorf("the server answered with content type %q, want application/json or text/event-stream", clip(ct))
	}
	return nil
}

// setSession adds the session headers to req.
func (c *httpConn) setSession(req *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	setSessionHeaders(req, c.session, c.protocol)
}

// setSessionHeaders sets a session's id and negotiated protocol version
// on req, each when known.
func setSessionHeaders(req *http.Request, session, protocol string) {
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if protocol != "" {
		req.Header.Set("Mcp-Protocol-Version", protocol)
	}
}

// initialized records the negotiated protocol version, sent with every
// later request.
func (c *httpConn) initialized(version string) {
	c.mu.Lock()
	c.protocol = version
	c.mu.Unlock()
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func (c *httpConn) endBody() {
	if c.body != nil {
		c.body.Close()
		c.body, c.sse = nil, nil
	}
}

// recv returns the next message of the current response. The request's
// context (the caller's) bounds the reading.
func (c *httpConn) recv(ctx context.Context) ([]byte, error) {
	if c.body == nil {
		return nil, errors.New("the server sent no response")
	}
	if c.sse == nil {
		if c.read {
			return nil, errors.New("the server's JSON response was not the answer")
		}
		c.read = true
		data, err := readAll(c.b.reader(c.body))
		if err != nil {
			return nil, readErr(ctx, err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, errors.New("the server answered with an empty body")
		}
		return data, nil
	}
	for {
		data, err := nextEvent(c.sse)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, errors.New("the server ended its event stream without the answer")
			}
			return nil, readErr(ctx, err)
		}
		if len(bytes.TrimSpace(data)) > 0 {
			return data, nil
		}
	}
}

func readErr(ctx context.Context, err error) error {
	if errors.Is(err, ErrTooLarge) {
		return ErrTooLarge
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("reading the response: %w", err)
}

// nextEvent reads one server-sent event (WHATWG HTML §9.2) and returns
// its data: the "data" fields joined by newlines. Events named other than
// "message" are skipped; so are comments, "id" and "retry". The lines come
// from a budgeted reader, so an event is bounded while it is read.
func nextEvent(lr *lineReader) ([]byte, error) {
	var data []byte
	var has bool
	event := ""
	for {
		line, err := lr.next()
		if err != nil {
			if errors.Is(err, io.EOF) && has && (event == "" || event == "message") {
				return data, nil
			}
			return nil, err
		}
		if len(line) == 0 {
			if has && (event == "" || event == "message") {
				return data, nil
			}
			data, has, event = nil, false, ""
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			switch {
			case !has:
				data = value // the line is a fresh slice: no copy
			default:
				data = append(append(data, '\n'), value...)
			}
			has = true
		case "event":
			event = string(value)
		}
	}
}

// close ends the session (DELETE, best effort and bounded) and the
// connections.
func (c *httpConn) close() string {
	close(c.quit)
	c.endBody()
	c.mu.Lock()
	session := c.session
	c.mu.Unlock()
	if session != "" {
		deleteSession(c.client, c.endpoint, c.setSession)
	}
	c.client.CloseIdleConnections()
	return ""
}

// deleteSession tells a server the session is over (DELETE, within 1 s);
// set adds the session's headers. The answer does not matter.
func deleteSession(client *http.Client, endpoint string, set func(*http.Request)) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if req, err := http.NewRequestWithContext(ctx, http.MethodDelete, endpoint, nil); err == nil {
		set(req)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
	}
}
