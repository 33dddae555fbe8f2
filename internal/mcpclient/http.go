package mcpclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// httpConn speaks Streamable HTTP (MCP 2025-06-18): each message is a
// POST; the answer to a call comes back as a JSON body or in a
// text/event-stream. etdi makes one call at a time and opens no
// standalone stream, so the messages that may answer a call are those of
// its own response, or of the GETs that resume it when it ends first.
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
	sse  *eventStream  // nil for a JSON body
	read bool          // the JSON body was returned
	// resumes counts the GETs that resumed the stream since its last
	// message (maxResumes).
	resumes int

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
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, refused(req.URL, err)
	}
	return resp, nil
}

// RefusedError is a connection to an HTTP server refused: nothing
// listens at the address. It names the scheme, host and port only (the
// path and query of a URL may hold a token) and what to check.
type RefusedError struct {
	// Address is the URL's scheme, host and port.
	Address string
	Err     error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("connection refused by %s: nothing listens there; check that the server is running and listens at this host and port, and that the URL (--url, or the host configuration's url) is the server's", e.Address)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// refused returns err as a *RefusedError when the connection to u was
// refused, else err.
func refused(u *url.URL, err error) error {
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return err
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return &RefusedError{Address: u.Scheme + "://" + net.JoinHostPort(u.Hostname(), port), Err: syscall.ECONNREFUSED}
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
		c.body, c.sse, c.resumes = resp.Body, &eventStream{lr: newLineReader(c.b.reader(resp.Body))}, 0
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
		data, err := c.sse.next()
		if err != nil {
			if errors.Is(err, ErrTooLarge) || ctx.Err() != nil {
				return nil, readErr(ctx, err)
			}
			// The stream ended, or broke, before the answer.
			if err := c.resume(ctx, err); err != nil {
				return nil, err
			}
			continue
		}
		if len(bytes.TrimSpace(data)) > 0 {
			c.resumes = 0
			return data, nil
		}
	}
}

// resume replaces a call's event stream that ended (why) before the
// answer by the GET that resumes it, after the server's reconnection
// time.
func (c *httpConn) resume(ctx context.Context, why error) error {
	ended := errStreamEnded
	if !errors.Is(why, io.EOF) {
		ended += " (" + clip(errText(why)) + ")"
	}
	if reason := c.sse.unresumable(); reason != "" {
		return fmt.Errorf("%s, and %s", ended, reason)
	}
	if c.resumes >= maxResumes {
		return fmt.Errorf("%s %d times in a row, resumed each time with Last-Event-ID; giving up", ended, maxResumes+1)
	}
	c.resumes++
	c.body.Close()
	if err := waitRetry(ctx, c.sse.delay()); err != nil {
		return err
	}
	resp, err := resumeRequest(ctx, c.client, c.endpoint, c.setSession, c.sse.lastID)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s, and resuming it failed: %w", ended, err)
	}
	c.body = resp.Body
	c.sse.lr = newLineReader(c.b.reader(resp.Body))
	return nil
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

// Resuming a server's event stream (MCP Streamable HTTP, "Resumability
// and redelivery"): when a stream that was to carry an answer ends or
// breaks before it, etdi waits the server's reconnection time (its
// "retry" field, at most maxRetry; defaultRetry without one) and asks
// for the rest with a GET carrying the stream's last event id in
// Last-Event-ID, at most maxResumes times in a row without a message.
const (
	// maxEventID bounds an event id etdi sends back; a longer one, or one
	// that is not visible ASCII, makes the stream one that cannot be
	// resumed.
	maxEventID   = 1024
	defaultRetry = time.Second
	maxRetry     = 10 * time.Second
	maxResumes   = 5
)

// eventStream reads server-sent events (WHATWG HTML §9.2) and remembers
// what resuming the stream needs: the id of its last event and the
// reconnection time the server set. An event's id and retry take effect
// when the event ends (its empty line, or the end of the stream), so a
// stream cut off inside an event is resumed from the one before.
type eventStream struct {
	lr     *lineReader
	lastID string
	// badID: the last id cannot be sent back (too long, not visible ASCII).
	badID    bool
	retry    time.Duration
	hasRetry bool
}

// next returns the data of the next event: its "data" fields joined by
// newlines. Events named other than "message" are skipped (their id
// counts); so are comments. The lines come from a bounded reader, so an
// event is bounded while it is read.
func (e *eventStream) next() ([]byte, error) {
	var data []byte
	var has bool
	event := ""
	var id []byte
	var hasID bool
	end := func() {
		if hasID {
			e.setID(id)
		}
		hasID, id = false, nil
	}
	for {
		line, err := e.lr.next()
		if err != nil {
			end()
			if errors.Is(err, io.EOF) && has && (event == "" || event == "message") {
				return data, nil
			}
			return nil, err
		}
		if len(line) == 0 {
			end()
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
		case "id":
			if bytes.IndexByte(value, 0) < 0 { // an id with NUL is ignored
				id, hasID = value, true
			}
		case "retry":
			e.setRetry(value)
		}
	}
}

// setID records the id of an event that ended; an empty one clears it.
func (e *eventStream) setID(id []byte) {
	if len(id) > maxEventID || !visibleASCII(string(id)) {
		e.lastID, e.badID = "", true
		return
	}
	e.lastID, e.badID = string(id), false
}

// setRetry takes a "retry" field of ASCII digits (milliseconds), at most
// maxRetry; any other value is ignored.
func (e *eventStream) setRetry(v []byte) {
	if len(v) == 0 {
		return
	}
	ms := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return
		}
		if ms <= int(maxRetry/time.Millisecond) {
			ms = ms*10 + int(c-'0')
		}
	}
	e.retry, e.hasRetry = min(time.Duration(ms)*time.Millisecond, maxRetry), true
}

// delay is how long to wait before resuming the stream.
func (e *eventStream) delay() time.Duration {
	if e.hasRetry {
		return e.retry
	}
	return defaultRetry
}

// unresumable says why the stream cannot be resumed, or "".
func (e *eventStream) unresumable() string {
	switch {
	case e.badID:
		return fmt.Sprintf("its last event id cannot be sent back to resume it (longer than %d bytes or not visible ASCII)", maxEventID)
	case e.lastID == "":
		return "it gave no event id to resume it from"
	}
	return ""
}

// resumeRequest asks for the rest of a stream after lastID: a GET with
// Last-Event-ID (set adds the session's headers). It returns the new
// stream, or why the server did not resume it.
func resumeRequest(ctx context.Context, client *http.Client, endpoint string, set func(*http.Request), lastID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	set(req)
	req.Header.Set("Last-Event-ID", lastID)
	resp, err := client.Do(req)
	if err != nil {
		return nil, errors.New(errText(err))
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode == http.StatusOK && ct == "text/event-stream" {
		return resp, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil, fmt.Errorf("the server answered the GET that resumes it with content type %q, want text/event-stream", clip(ct))
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	msg := "the server did not resume it: HTTP status " + clip(resp.Status)
	if resp.StatusCode == http.StatusMethodNotAllowed {
		msg = "the server does not resume streams (HTTP 405 for GET)"
	}
	if b := strings.TrimSpace(string(body)); b != "" {
		msg += fmt.Sprintf(": %q", clip(b))
	}
	return nil, errors.New(msg)
}

// errStreamEnded is the start of every error of a stream that ended
// without the answer.
const errStreamEnded = "the server ended its event stream without the answer"

// waitRetry waits d, or until ctx ends.
func waitRetry(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
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
