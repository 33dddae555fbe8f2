package gate

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/internal/termtext"
)

// ErrListenAddr is the error (wrapped) of an address [ListenHTTP] refuses:
// it takes HOST:PORT with HOST 127.0.0.1, ::1 or localhost only.
var ErrListenAddr = errors.New("gate: listen on HOST:PORT with HOST 127.0.0.1, ::1 or localhost (loopback only)")

// Defaults of [HTTPOptions].
const (
	DefaultMaxSessions = 16
	DefaultIdleTimeout = 10 * time.Minute
)

// HTTPOptions configure [ListenHTTP].
type HTTPOptions struct {
	// Gate are the options of every session's gate: each host session is
	// relayed by a gate of its own (New), with these options.
	Gate Options
	// Upstream starts the server's side of one host session: a server
	// process (StartServer with a command: one process per session), a
	// Streamable HTTP session with a remote server. It is called once
	// per session, when the host's initialize arrives; the gate closes
	// what it returns when the session ends. An error is answered to the
	// host's initialize (HTTP 500) as it is: mask secrets in it.
	Upstream func(ctx context.Context) (guard.Conn, error)
	// MaxSessions bounds the sessions served at once (default
	// DefaultMaxSessions), counting a session until its server has
	// ended: an initialize beyond it ends the session idle longest and
	// waits for its server to end, or gets 503 when every session is busy.
	MaxSessions int
	// IdleTimeout ends a session that has no open stream and received
	// no request for this long (default DefaultIdleTimeout), even with
	// requests in flight whose streams nobody reads: its gate ends and
	// its server with it.
	IdleTimeout time.Duration
	// Token, if set, must come with every request as "Authorization:
	// Bearer <Token>" (else 401): other users of the machine reach a
	// loopback port too.
	Token string
	// Log, if not nil, receives the endpoint's own lines (sessions that
	// start and end, messages dropped), escaped for a terminal. nil:
	// Gate.Log.
	Log func(line string)
	// Refusal, if not nil, answers every host session itself
	// (ServeRefusal): no gate, and Upstream is never called, so no server
	// starts (Preflight refused it).
	Refusal *Refusal

	// serve, in tests, replaces the gate and Upstream: it relays the
	// session whose host side is host.
	serve func(ctx context.Context, host guard.Conn) error
	// roomWait, in tests, is called when a new session waits for the
	// server of the session ended to make room.
	roomWait func()
}

// HTTPServer serves MCP's Streamable HTTP transport (2025-06-18 and
// 2025-11-25) to hosts at /mcp on a loopback address, each host session
// through a gate of its own (docs/gate.md#runtime-gate, --listen):
//
//   - a POST of initialize without Mcp-Session-Id starts a session: a new
//     id, a new gate, and a new upstream session (Upstream: for a stdio
//     server, a process of its own). At most MaxSessions run at once;
//     beyond, the session idle longest (nothing in flight, no stream
//     open) is ended to make room, and the new one starts once its
//     server ended (as for a session already ending), or, with none
//     idle or ending, 503. Every later request carries the id: missing 400,
//     unknown (ended, expired, never given) 404, so that a host starts a
//     new session. DELETE ends that session only.
//   - a POST carries one JSON-RPC message (at most mcpclient.MaxMessage
//     bytes, no batch). A notification or response gets 202. A request is
//     answered as text/event-stream when the host accepts it, else as
//     application/json: the event stream carries the messages related to
//     that request (below) before its answer, and ends with the answer.
//   - which stream a message of the gate's goes to: a
//     notifications/progress whose progressToken a request in flight set
//     goes to that request's stream; a list_changed or
//     notifications/resources/updated goes to the GET stream; any other
//     request or notification (sampling, elicitation, roots, logging)
//     goes to the stream of the oldest request in flight whose event
//     stream is connected, and to the GET stream when there is none. The
//     GET stream (one per session: a new GET takes over) waits for its
//     host while none is open.
//   - every event has an id, STREAM_N, with STREAM random; a GET with
//     Last-Event-ID of an event of this session's streams replays what
//     followed it on that stream and goes on with it. Each session keeps
//     at most 1,000 events per stream and 64 MiB in all; older events are
//     forgotten (Log is told when one was never delivered), and a
//     Last-Event-ID before what is kept gets 400.
//   - a session with no stream open and no request for IdleTimeout is
//     ended, even with requests in flight (their host left).
//   - against DNS rebinding, a request whose Host header is not a loopback
//     name for this port, or that has an Origin whose host is not
//     localhost, 127.0.0.1 or [::1], gets 403; with a Token, one without
//     it 401.
//
// Close ends every session (their servers are ended) and the listener.
type HTTPServer struct {
	opts   HTTPOptions
	srv    *http.Server
	url    string
	port   string
	ctx    context.Context
	cancel context.CancelFunc
	served chan struct{} // Serve returned
	runs   sync.WaitGroup
	once   sync.Once

	mu       sync.Mutex
	sessions map[string]*httpSession
	count    int  // sessions started so far, to name them in the log
	closing  bool // Close was called
	err      error
}

// ListenHTTP listens on addr (HOST:PORT, HOST 127.0.0.1, ::1 or
// localhost; port 0 picks a free one) and serves the MCP endpoint /mcp,
// whose URL is [HTTPServer.URL], until [HTTPServer.Close]. o.Upstream
// is required.
func ListenHTTP(addr string, o HTTPOptions) (*HTTPServer, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrListenAddr, addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 || !loopbackName(host) {
		return nil, fmt.Errorf("%w: %q", ErrListenAddr, addr)
	}
	if o.Upstream == nil && o.serve == nil && o.Refusal == nil {
		return nil, errors.New("gate: ListenHTTP needs HTTPOptions.Upstream")
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.Log == nil {
		o.Log = o.Gate.Log
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ta, ok := ln.Addr().(*net.TCPAddr)
	if !ok || !ta.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("%w: %q is %s", ErrListenAddr, addr, ln.Addr())
	}
	s := &HTTPServer{opts: o, port: strconv.Itoa(ta.Port), served: make(chan struct{}), sessions: map[string]*httpSession{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.url = "http://" + net.JoinHostPort(ta.IP.String(), s.port) + "/mcp"
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10,
		ErrorLog: log.New(io.Discard, "", 0)}
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.mu.Lock()
			s.err = fmt.Errorf("serving hosts: %w", err)
			s.mu.Unlock()
		}
	}()
	return s, nil
}

func loopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback))
}

// URL is the MCP endpoint, http://127.0.0.1:PORT/mcp.
func (s *HTTPServer) URL() string { return s.url }

// Sessions is the number of sessions open (their servers not yet ended).
func (s *HTTPServer) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Done is closed when the listener stopped: after [HTTPServer.Close], or when it
// failed ([HTTPServer.Err] says why).
func (s *HTTPServer) Done() <-chan struct{} { return s.served }

// Err is why the listener stopped, nil after [HTTPServer.Close].
func (s *HTTPServer) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends every session, waits until each gate ended its server (a
// process is reaped), and shuts the listener down: answers still being
// written get at most 1 s.
func (s *HTTPServer) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.mu.Unlock()
		s.cancel()
		s.runs.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if s.srv.Shutdown(ctx) != nil {
			s.srv.Close()
		}
		<-s.served
	})
	return nil
}

func (s *HTTPServer) logf(format string, args ...any) {
	if s.opts.Log != nil {
		s.opts.Log(termtext.Escape(fmt.Sprintf("etdi: "+format, args...)))
	}
}

// ServeHTTP serves the MCP endpoint.
func (s *HTTPServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case !s.loopbackHost(r.Host):
		httpError(w, http.StatusForbidden, "the Host header must name the loopback address of this endpoint")
		return
	case !loopbackOrigin(r.Header):
		httpError(w, http.StatusForbidden, "requests from a web page of another origin are refused")
		return
	case r.URL.Path != "/mcp":
		httpError(w, http.StatusNotFound, "the MCP endpoint is /mcp")
		return
	case s.opts.Token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+s.opts.Token)) != 1:
		w.Header().Set("WWW-Authenticate", "Bearer")
		httpError(w, http.StatusUnauthorized, "this endpoint wants Authorization: Bearer and its token")
		return
	}
	switch r.Method {
	case http.MethodPost:
		s.post(w, r)
	case http.MethodGet:
		if !acceptsEventStream(r.Header) {
			httpError(w, http.StatusNotAcceptable, "the GET stream is text/event-stream")
			return
		}
		if sess := s.session(w, r); sess != nil {
			sess.get(w, r)
		}
	case http.MethodDelete:
		if sess := s.session(w, r); sess != nil {
			sess.end("the host ended it")
			w.WriteHeader(http.StatusNoContent)
		}
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		httpError(w, http.StatusMethodNotAllowed, "use POST, GET or DELETE")
	}
}

// loopbackHost reports whether a Host header names this endpoint by a
// loopback name: a DNS name of an attacker's that resolves to 127.0.0.1
// does not.
func (s *HTTPServer) loopbackHost(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), ""
	}
	return loopbackName(host) && (port == "" || port == s.port)
}

// loopbackOrigin reports whether a request has no Origin, or one of a
// loopback host (any port: a local host may run in a browser).
func loopbackOrigin(hd http.Header) bool {
	vs := hd.Values("Origin")
	if len(vs) == 0 {
		return true
	}
	u, err := url.Parse(vs[0])
	return len(vs) == 1 && err == nil && (u.Scheme == "http" || u.Scheme == "https") && loopbackName(u.Hostname())
}

// session is the open session a request names in Mcp-Session-Id: a
// missing id is answered with 400, one of no open session with 404 (the
// host starts a new session).
func (s *HTTPServer) session(w http.ResponseWriter, r *http.Request) *httpSession {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		httpError(w, http.StatusBadRequest, "the Mcp-Session-Id header is missing: a session begins with initialize")
		return nil
	}
	s.mu.Lock()
	sess := s.sessions[sid]
	s.mu.Unlock()
	if sess == nil || isDone(sess.ended) {
		httpError(w, http.StatusNotFound, "no such session: it ended or expired; initialize starts a new one")
		return nil
	}
	sess.seen()
	return sess
}

func (s *HTTPServer) post(w http.ResponseWriter, r *http.Request) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		httpError(w, http.StatusUnsupportedMediaType, "a message is POSTed as application/json")
		return
	}
	if r.ContentLength > mcpclient.MaxMessage {
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("a message is at most %d bytes", mcpclient.MaxMessage))
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, mcpclient.MaxMessage+1))
	switch {
	case err != nil:
		httpError(w, http.StatusBadRequest, "reading the message: "+err.Error())
		return
	case len(data) > mcpclient.MaxMessage:
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("a message is at most %d bytes", mcpclient.MaxMessage))
		return
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		httpError(w, http.StatusBadRequest, "a POST carries one JSON-RPC message, not a batch")
		return
	}
	m, err := mcpclient.Decode(data)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, mcpclient.EncodeError(nil, -32700, "etdi: not a JSON-RPC message: "+clipText(err.Error()), nil))
		return
	}
	request := m.Request && m.ID != nil
	if r.Header.Get("Mcp-Session-Id") == "" {
		switch {
		case request && m.Method == "initialize":
			s.start(w, r, m, data)
		case request && (m.Method == "server/discover" || m.Method == "subscriptions/listen"):
			// The stateless handshake of MCP 2026-07-28 has no initialize
			// for a gate to check first: the host falls back to it.
			writeJSON(w, http.StatusOK, mcpclient.EncodeError(m.ID, -32601, "etdi: "+m.Method+" is not relayed: a session through etdi begins with initialize", nil))
		default:
			httpError(w, http.StatusBadRequest, "the Mcp-Session-Id header is missing: a session begins with initialize")
		}
		return
	}
	sess := s.session(w, r)
	if sess == nil {
		return
	}
	if request && m.Method == "initialize" {
		writeJSON(w, http.StatusBadRequest, mcpclient.EncodeError(m.ID, -32600, "etdi: this session is already initialized: an initialize without Mcp-Session-Id starts a new one", nil))
		return
	}
	sess.post(w, r, m, data)
}

// start starts a session for the host's initialize and relays it.
func (s *HTTPServer) start(w http.ResponseWriter, r *http.Request, m *mcpclient.Message, data []byte) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		writeJSON(w, http.StatusServiceUnavailable, mcpclient.EncodeError(m.ID, -32000, "etdi: the endpoint is shutting down", nil))
		return
	}
	if len(s.sessions) >= s.opts.MaxSessions {
		// Hosts often leave without a DELETE: the session idle longest
		// (nothing in flight, no stream open) makes room, as its expiry
		// would later. It counts against the bound until its server has
		// ended (a process may take its grace to exit), so that sessions
		// started and ended in a row never run more servers than the
		// bound. Only when every session is busy is the host refused.
		evicted := s.longestIdleLocked()
		if evicted != nil {
			evicted.end(fmt.Sprintf("it was the session idle longest when a new session needed room (the bound is %d sessions)", s.opts.MaxSessions))
		} else {
			// A session already ending (DELETE, expiry) makes room too,
			// once its server has ended.
			evicted = s.endingLocked()
		}
		if evicted != nil {
			s.mu.Unlock()
			if s.opts.roomWait != nil {
				s.opts.roomWait()
			}
			select {
			case <-evicted.gone:
				s.start(w, r, m, data)
			case <-r.Context().Done():
			case <-s.ctx.Done():
				writeJSON(w, http.StatusServiceUnavailable, mcpclient.EncodeError(m.ID, -32000, "etdi: the endpoint is shutting down", nil))
			}
			return
		}
	}
	if len(s.sessions) >= s.opts.MaxSessions {
		n := len(s.sessions)
		s.mu.Unlock()
		s.logf("refused a new session: %d sessions are open, the most this endpoint serves at once", n)
		w.Header().Set("Retry-After", "5")
		writeJSON(w, http.StatusServiceUnavailable, mcpclient.EncodeError(m.ID, -32000,
			fmt.Sprintf("etdi: %d sessions are open, the most this endpoint serves at once (its bound on sessions): end one (DELETE), or wait until an idle one expires (after %v)", n, s.opts.IdleTimeout), nil))
		return
	}
	s.count++
	sess := newHTTPSession(s, rand.Text(), s.count)
	s.sessions[sess.id] = sess
	s.runs.Add(1)
	s.mu.Unlock()

	run, err := s.relay(sess)
	if err != nil {
		s.remove(sess)
		close(sess.gone)
		s.runs.Done()
		s.logf("session %d: not started: %s", sess.n, clipText(err.Error()))
		writeJSON(w, http.StatusInternalServerError, mcpclient.EncodeError(m.ID, -32603, "etdi: "+clipText(err.Error()), nil))
		return
	}
	s.logf("session %d started (%d open)", sess.n, s.Sessions())
	go func() {
		defer s.runs.Done()
		err := run()
		sess.close()
		s.remove(sess)
		close(sess.gone)
		why := sess.why()
		switch {
		case err != nil && !errors.Is(err, context.Canceled):
			why = err.Error()
		case err != nil:
			why = "etdi is ending"
		}
		s.logf("session %d ended: %s", sess.n, clipText(why))
	}()
	w.Header().Set("Mcp-Session-Id", sess.id)
	sess.post(w, r, m, data)
}

// relay prepares the gate and the upstream session of sess; run relays
// the session until it ends.
func (s *HTTPServer) relay(sess *httpSession) (run func() error, err error) {
	if s.opts.serve != nil {
		return func() error { return s.opts.serve(s.ctx, sess) }, nil
	}
	if s.opts.Refusal != nil {
		return func() error { return ServeRefusal(s.ctx, sess, s.opts.Refusal, s.opts.Gate.Log) }, nil
	}
	gate, err := New(s.opts.Gate)
	if err != nil {
		return nil, err
	}
	up, err := s.opts.Upstream(s.ctx)
	if err != nil {
		return nil, fmt.Errorf("starting the server: %w", err)
	}
	return func() error { return gate.Run(s.ctx, sess, up) }, nil
}

// longestIdleLocked is the open session idle longest, or nil when every
// one has a request in flight or a stream open (under mu).
func (s *HTTPServer) longestIdleLocked() *httpSession {
	now := time.Now()
	var best *httpSession
	var bestFor time.Duration
	for _, sess := range s.sessions {
		if d, ok := sess.idleFor(now); ok && (best == nil || d > bestFor || (d == bestFor && sess.n < best.n)) {
			best, bestFor = sess, d
		}
	}
	return best
}

// endingLocked is a session that ended but whose server has not yet
// ended, or nil (under mu).
func (s *HTTPServer) endingLocked() *httpSession {
	for _, sess := range s.sessions {
		if isDone(sess.ended) {
			return sess
		}
	}
	return nil
}

func (s *HTTPServer) remove(sess *httpSession) {
	s.mu.Lock()
	if s.sessions[sess.id] == sess {
		delete(s.sessions, sess.id)
	}
	s.mu.Unlock()
}

func isDone(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// acceptsEventStream reports whether an Accept header allows
// text/event-stream.
func acceptsEventStream(hd http.Header) bool {
	for _, v := range hd.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil && (mt == "text/event-stream" || mt == "text/*" || mt == "*/*") {
				return true
			}
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, status int, msg []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(msg)))
	w.WriteHeader(status)
	w.Write(msg)
}

// httpError answers with status and a JSON-RPC error without id, as MCP
// servers do.
func httpError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, mcpclient.EncodeError(nil, -32600, "etdi: "+msg, nil))
}

// maxListenToken bounds a --listen token file.
const maxListenToken = 4096

// ReadListenToken reads the token an HTTP listener requires ([HTTPOptions.Token])
// from a file only its owner may read: a file other users can read, or
// that is empty, is refused. The file is the way to pass the token that
// no other process sees: a command line is readable by every local user
// (/proc/PID/cmdline), and an environment by every process of the user
// (/proc/PID/environ); the server etdi starts is never given it
// ([guard.ServerEnv]).
func ReadListenToken(path string) (string, error) {
	// A named pipe would block the open: only a regular file is opened,
	// and the file opened must be the one looked at.
	before, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !before.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || !os.SameFile(before, fi) {
		return "", fmt.Errorf("%s was replaced while it was read", path)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s can be read by other users (mode %04o): chmod 600 %s", path, fi.Mode().Perm(), termtext.ShellQuote(path))
	}
	b, err := io.ReadAll(io.LimitReader(f, maxListenToken+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxListenToken {
		return "", fmt.Errorf("%s: larger than %d bytes", path, maxListenToken)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	if strings.ContainsAny(tok, "\r\n") || !utf8.ValidString(tok) {
		return "", fmt.Errorf("%s: the token is one line of text", path)
	}
	return tok, nil
}
