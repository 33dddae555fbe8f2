package mcpclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"time"
)

// HTTPSession is a Streamable HTTP server for a session (MCP 2025-06-18):
// each message is a POST whose answer comes as a JSON body or in a
// text/event-stream, read concurrently; once initialized, a GET stream
// carries what the server sends on its own (notifications such as
// tools/list_changed, requests). Headers reach the named origin only and
// redirects elsewhere are refused, as for a fetch; each message is bounded
// by MaxMessage.
//
// A request whose answer never comes (the POST fails, the server answers
// with an HTTP error or ends its stream first) is answered by the session
// itself with a JSON-RPC error, so the caller never waits for it forever.
type HTTPSession struct {
	client   *http.Client
	endpoint string

	mu       sync.Mutex
	session  string // Mcp-Session-Id
	protocol string // MCP-Protocol-Version, once initialized
	streamed bool   // the GET stream was started
	answered bool   // the server answered a POST (it set its session id then)

	in     chan []byte
	done   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	// fatal is why the session cannot go on (the server forgot it).
	fatal error
}

// DialHTTP returns a session with the Streamable HTTP server at endpoint;
// nothing is sent until the first Write.
func DialHTTP(endpoint string, headers http.Header) (*HTTPSession, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("url %q: want http or https", clip(endpoint))
	}
	// No overall timeout: a tool call or the GET stream may last; each
	// request is bounded by its context.
	ctx, cancel := context.WithCancel(context.Background())
	return &HTTPSession{client: newHTTPClient(u, headers, 0), endpoint: endpoint,
		in: make(chan []byte, 64), done: make(chan struct{}), ctx: ctx, cancel: cancel}, nil
}

// Read returns the next message the server sent, in any of its streams.
func (s *HTTPSession) Read(ctx context.Context) ([]byte, error) {
	select {
	case m := <-s.in:
		return m, nil
	case <-s.done:
		s.mu.Lock()
		err := s.fatal
		s.mu.Unlock()
		if err == nil {
			err = errors.New("the session is closed")
		}
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// push hands a message to Read, unless the session is closed.
func (s *HTTPSession) push(m []byte) {
	select {
	case s.in <- m:
	case <-s.done:
	}
}

// end closes the session for a reason Read returns.
func (s *HTTPSession) end(err error) {
	s.mu.Lock()
	if s.fatal == nil {
		s.fatal = err
	}
	s.mu.Unlock()
	s.once.Do(func() { close(s.done); s.cancel() })
}

// SetProtocolVersion records the negotiated protocol version, sent with
// every later request, and opens the GET stream.
func (s *HTTPSession) SetProtocolVersion(v string) {
	if !visibleASCII(v) || len(v) > 64 {
		return
	}
	s.mu.Lock()
	s.protocol = v
	start := !s.streamed
	s.streamed = true
	s.mu.Unlock()
	if start {
		s.wg.Add(1)
		go s.stream()
	}
}

func (s *HTTPSession) setHeaders(req *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	setSessionHeaders(req, s.session, s.protocol)
}

// Write posts one message. A request's answer is read in the background
// and returned by Read; a failure to deliver a request becomes an error
// answer to it. Write fails only when the session cannot go on.
//
// Until the server has answered once (it may set the session id), Write
// waits for the whole exchange; after that it returns once the request is
// sent, so a tool call that takes minutes does not hold back the messages
// behind it (a cancellation, another call), which still reach the server
// in the order they were written. The exchange ends with the session, or
// with ctx: a request of etdi's own is bounded by its listing's timeout.
func (s *HTTPSession) Write(ctx context.Context, msg []byte) error {
	select {
	case <-s.done:
		_, err := s.Read(ctx)
		return err // why it ended
	default:
	}
	m, err := decodeMessage(msg)
	if err != nil {
		return fmt.Errorf("not a message: %w", err)
	}
	reqCtx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	sent := make(chan struct{})
	var once sync.Once
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(sent) }) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(reqCtx, trace), http.MethodPost, s.endpoint, bytes.NewReader(msg))
	if err != nil {
		stop()
		cancel()
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	s.setHeaders(req)
	s.mu.Lock()
	answered := s.answered
	s.mu.Unlock()
	done := make(chan error, 1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		defer stop()
		done <- s.exchange(req, m)
		once.Do(func() { close(sent) })
	}()
	if !answered {
		select {
		case err := <-done:
			return err
		case <-s.done:
			return nil
		}
	}
	select {
	case <-sent:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// exchange posts req, the message m, and hands what answers it to Read.
// It returns an error only when the session cannot go on.
func (s *HTTPSession) exchange(req *http.Request, m *message) error {
	request := m.isRequest && m.id != nil
	fail := func(reason string) error {
		if request {
			s.push(EncodeError(m.id, -32603, "etdi: the server's answer did not arrive: "+clip(reason), nil))
		}
		return nil
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return fail(errText(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound && req.Header.Get("Mcp-Session-Id") != "" {
		err := errors.New("the server ended the session (HTTP 404 for its session id)")
		s.end(err)
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		reason := "HTTP status " + resp.Status
		if b := strings.TrimSpace(string(body)); b != "" {
			reason += ": " + b
		}
		return fail(reason)
	}
	s.mu.Lock()
	s.answered = true
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" && visibleASCII(id) && s.session == "" {
		s.session = id
	}
	s.mu.Unlock()
	if !request {
		return nil
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		data, err := readAll(io.LimitReader(resp.Body, MaxMessage+1))
		switch {
		case err != nil:
			return fail(errText(err))
		case len(data) > MaxMessage:
			return fail(ErrMessageTooLarge.Error())
		}
		s.push(data)
		return nil
	case "text/event-stream":
		if reason := s.answerStream(req.Context(), resp.Body, m.id); reason != "" {
			return fail(reason)
		}
		return nil
	}
	return fail(fmt.Sprintf("content type %q, want application/json or text/event-stream", clip(ct)))
}

// answerStream reads the event stream of the request id until its
// answer; a stream that ends or breaks first is resumed (a GET with
// Last-Event-ID after the server's reconnection time), at most
// maxResumes times in a row without a message. It returns "" once the
// answer came, else why it did not.
func (s *HTTPSession) answerStream(ctx context.Context, body io.ReadCloser, id []byte) string {
	es := &eventStream{}
	for resumes := 0; ; resumes++ {
		es.lr = newLineReader(body)
		es.lr.max = MaxMessage
		answered, msgs, err := s.events(es, id)
		body.Close()
		if answered {
			return ""
		}
		if msgs > 0 {
			resumes = 0
		}
		ended := errStreamEnded
		switch {
		case ctx.Err() != nil:
			return ended
		case errors.Is(err, ErrMessageTooLarge):
			return ErrMessageTooLarge.Error()
		case !errors.Is(err, io.EOF):
			ended += " (" + errText(err) + ")"
		}
		if reason := es.unresumable(); reason != "" {
			return ended + ", and " + reason
		}
		if resumes >= maxResumes {
			return fmt.Sprintf("%s %d times in a row, resumed each time with Last-Event-ID; giving up", ended, maxResumes+1)
		}
		if waitRetry(ctx, es.delay()) != nil {
			return ended
		}
		resp, err := resumeRequest(ctx, s.client, s.endpoint, s.setHeaders, es.lastID)
		if err != nil {
			return ended + ", and resuming it failed: " + err.Error()
		}
		body = resp.Body
	}
}

// events reads server-sent events from es and pushes each message; with
// id set, it stops after the answer to that request and reports whether
// it came. It returns how many messages it pushed and the error that
// ended the stream.
func (s *HTTPSession) events(es *eventStream, id []byte) (answered bool, msgs int, err error) {
	want := IDKey(id)
	for {
		data, err := es.next()
		if err != nil {
			return false, msgs, err
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		s.push(data)
		msgs++
		if want != "" {
			if m, err := decodeMessage(data); err == nil && !m.isRequest && IDKey(m.id) == want {
				return true, msgs, nil
			}
		}
	}
}

// stream keeps the GET stream open while the session lasts: a server
// that offers none (405) is left alone; one that ends it is asked again,
// with Last-Event-ID once the stream had an event id, after the server's
// reconnection time (its "retry", at most maxRetry) or, without one, at
// most every 30 s. A GET with Last-Event-ID that fails is asked again
// without it.
func (s *HTTPSession) stream() {
	defer s.wg.Done()
	wait := time.Second
	es := &eventStream{}
	for {
		req, err := http.NewRequestWithContext(s.ctx, http.MethodGet, s.endpoint, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		s.setHeaders(req)
		resuming := es.unresumable() == ""
		if resuming {
			req.Header.Set("Last-Event-ID", es.lastID)
		}
		resp, err := s.client.Do(req)
		msgs := 0
		if err == nil {
			ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			switch {
			case resp.StatusCode == http.StatusMethodNotAllowed:
				resp.Body.Close()
				return
			case resp.StatusCode == http.StatusOK && ct == "text/event-stream":
				es.lr = newLineReader(resp.Body)
				es.lr.max = MaxMessage
				_, msgs, _ = s.events(es, nil)
			default:
				if resuming {
					es.lastID = "" // the server does not know it: start afresh
				}
			}
			resp.Body.Close()
		}
		// A stream that brought messages is asked again after the
		// server's reconnection time; one that brought none, or failed,
		// after no less, and at least twice as long as the last time.
		next := wait
		switch {
		case msgs > 0 && es.hasRetry:
			next, wait = es.retry, time.Second
		case msgs > 0:
			next, wait = time.Second, time.Second
		case es.hasRetry:
			next = max(wait, es.retry)
		}
		select {
		case <-s.done:
			return
		case <-time.After(next):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// Close ends the session: the server is told (DELETE, within 1 s), the
// streams are closed.
func (s *HTTPSession) Close() error {
	s.mu.Lock()
	session := s.session
	s.mu.Unlock()
	s.end(errors.New("the session is closed"))
	if session != "" {
		deleteSession(s.client, s.endpoint, s.setHeaders)
	}
	s.wg.Wait()
	s.client.CloseIdleConnections()
	return nil
}

// errText is the text of an HTTP client error without the request's URL,
// which may hold a token in its query: the text may reach the host in an
// error answer.
func errText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + " request: " + ue.Err.Error()
	}
	return err.Error()
}
