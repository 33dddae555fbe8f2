package guard

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

	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/internal/termtext"
)

// ErrListenAddr is the error (wrapped) of an address ListenHTTP refuses:
// it takes HOST:PORT with HOST 127.0.0.1, ::1 or localhost only.
var ErrListenAddr = errors.New("guard: listen on HOST:PORT with HOST 127.0.0.1, ::1 or localhost (loopback only)")

// Bounds of the messages that wait for the host's GET stream: beyond
// either, the oldest are dropped (a host need not open the stream, and a
// server's notifications must not end its session nor fill the memory).
const (
	maxHostQueue      = 1000
	maxHostQueueBytes = mcpclient.MaxMessage
)

// HTTPHost is the host's side of a session over Streamable HTTP (MCP
// 2025-06-18 and 2025-11-25), served at /mcp on a loopback address:
//
//   - a POST carries one JSON-RPC message (at most mcpclient.MaxMessage
//     bytes, no batch). A request is answered with the gate's answer to
//     it, as application/json; a notification or response gets 202.
//   - the answer to initialize sets Mcp-Session-Id; every later request
//     must carry it (missing: 400, any other: 404). There is one session:
//     a second initialize is refused. DELETE ends it.
//   - what the gate sends that answers no POST (the server's requests and
//     notifications) goes to the GET stream (text/event-stream); a new GET
//     takes over from an open one. While none is open, the messages wait,
//     at most 1,000 of them or 64 MiB; beyond that the oldest are dropped
//     and Log is told.
//   - against DNS rebinding, a request whose Host header is not a loopback
//     name for this port, or that has an Origin whose host is not
//     localhost, 127.0.0.1 or [::1], gets 403.
//
// Read returns the messages the host POSTed, then io.EOF once the host
// ended the session; Write never blocks; Close ends the session and shuts
// the listener down.
type HTTPHost struct {
	// Log, if not nil, receives a line (escaped for a terminal) when
	// messages for the host were dropped. Set it before the session starts.
	Log func(line string)
	// Token, if set, must come with every request as "Authorization:
	// Bearer <Token>" (else 401): other users of the machine reach a
	// loopback port too. Set it before the session starts.
	Token string

	srv    *http.Server
	url    string
	port   string
	sid    string
	in     chan []byte
	ended  chan struct{} // DELETE, Close or a failed listener: Read returns
	closed chan struct{} // Close: the waiting POSTs return
	served chan struct{} // Serve returned
	once   sync.Once

	mu      sync.Mutex
	err     error // why the session ended, if not the host
	started bool  // initialize was received
	pending map[string]chan []byte
	queue   []queued
	qbytes  int
	dropped int
	stream  *sseStream // the open GET stream, if any
}

type queued struct {
	data   []byte
	method string
}

// sseStream is one GET stream: stop is closed when another GET takes over
// or the stream ends; wake tells it a message is queued.
type sseStream struct {
	stop chan struct{}
	wake chan struct{}
}

// ListenHTTP listens on addr (HOST:PORT, HOST 127.0.0.1, ::1 or
// localhost; port 0 picks a free one) and serves the MCP endpoint /mcp,
// whose URL is URL().
func ListenHTTP(addr string) (*HTTPHost, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrListenAddr, addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 || !loopbackName(host) {
		return nil, fmt.Errorf("%w: %q", ErrListenAddr, addr)
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
	h := &HTTPHost{
		port: strconv.Itoa(ta.Port), sid: rand.Text(),
		in: make(chan []byte, 16), ended: make(chan struct{}), closed: make(chan struct{}), served: make(chan struct{}),
		pending: map[string]chan []byte{},
	}
	h.url = "http://" + net.JoinHostPort(ta.IP.String(), h.port) + "/mcp"
	h.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10,
		ErrorLog: log.New(io.Discard, "", 0)}
	go func() {
		defer close(h.served)
		if err := h.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			h.end(fmt.Errorf("serving the host: %w", err))
		}
	}()
	return h, nil
}

func loopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback))
}

// URL is the MCP endpoint, http://127.0.0.1:PORT/mcp.
func (h *HTTPHost) URL() string { return h.url }

// Read returns the next message the host POSTed; io.EOF once the host
// ended the session (DELETE) or it was closed.
func (h *HTTPHost) Read(ctx context.Context) ([]byte, error) {
	select {
	case m := <-h.in:
		return m, nil
	default:
	}
	select {
	case m := <-h.in:
		return m, nil
	case <-h.ended:
		select { // what the host sent last comes first
		case m := <-h.in:
			return m, nil
		default:
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.err != nil {
			return nil, h.err
		}
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write delivers msg to the host: an answer to the POST that waits for
// it (dropped if that POST is gone), anything else to the GET stream. It
// does not block.
func (h *HTTPHost) Write(ctx context.Context, msg []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m, err := mcpclient.Decode(msg)
	if err != nil {
		return fmt.Errorf("not a JSON-RPC message: %w", err)
	}
	var logLine string
	h.mu.Lock()
	switch {
	case !m.Request:
		// An answer goes to its POST only: the GET stream carries none.
		if ch, ok := h.pending[m.IDKey()]; ok {
			delete(h.pending, m.IDKey())
			ch <- msg // buffered: the POST may be gone
		}
	case isDone(h.ended):
		// The session is over: nothing more reaches the host.
	default:
		h.queue = append(h.queue, queued{msg, m.Method})
		h.qbytes += len(msg)
		for len(h.queue) > maxHostQueue || h.qbytes > maxHostQueueBytes {
			old := h.queue[0]
			h.queue[0] = queued{}
			h.queue = h.queue[1:]
			h.qbytes -= len(old.data)
			// One line for the first drop and every 1000th: a server that
			// floods a host without a GET stream does not flood the log.
			if h.dropped++; h.dropped == 1 || h.dropped%1000 == 0 {
				logLine = fmt.Sprintf("etdi: dropped a message for the host (%s; %d so far): more than %d messages or %d bytes wait for its GET stream",
					clipText(old.method), h.dropped, maxHostQueue, maxHostQueueBytes)
			}
		}
		if h.stream != nil {
			select {
			case h.stream.wake <- struct{}{}:
			default:
			}
		}
	}
	logf := h.Log
	h.mu.Unlock()
	if logLine != "" && logf != nil {
		logf(termtext.Escape(logLine))
	}
	return nil
}

// Close ends the session and shuts the listener down: answers still
// being written get at most 1 s.
func (h *HTTPHost) Close() error {
	h.once.Do(func() {
		h.end(nil)
		close(h.closed)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if h.srv.Shutdown(ctx) != nil {
			h.srv.Close()
		}
		<-h.served
	})
	return nil
}

// end ends the session (Read returns) for err, or because the host did.
func (h *HTTPHost) end(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if isDone(h.ended) {
		return
	}
	h.err = err
	close(h.ended)
}

func isDone(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// ServeHTTP serves the MCP endpoint.
func (h *HTTPHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case !h.loopbackHost(r.Host):
		httpError(w, http.StatusForbidden, "the Host header must name the loopback address of this endpoint")
		return
	case !loopbackOrigin(r.Header):
		httpError(w, http.StatusForbidden, "requests from a web page of another origin are refused")
		return
	case r.URL.Path != "/mcp":
		httpError(w, http.StatusNotFound, "the MCP endpoint is /mcp")
		return
	case h.Token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+h.Token)) != 1:
		w.Header().Set("WWW-Authenticate", "Bearer")
		httpError(w, http.StatusUnauthorized, "this endpoint wants Authorization: Bearer and its token")
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodGet:
		h.get(w, r)
	case http.MethodDelete:
		if h.session(w, r) {
			h.end(nil)
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
func (h *HTTPHost) loopbackHost(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), ""
	}
	return loopbackName(host) && (port == "" || port == h.port)
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

// session checks the Mcp-Session-Id of a request after initialize: it
// answers a missing one with 400, any other than the session's with 404.
func (h *HTTPHost) session(w http.ResponseWriter, r *http.Request) bool {
	sid := r.Header.Get("Mcp-Session-Id")
	h.mu.Lock()
	started := h.started
	h.mu.Unlock()
	switch {
	case sid == "":
		httpError(w, http.StatusBadRequest, "the Mcp-Session-Id header is missing")
		return false
	case !started || isDone(h.ended) || subtle.ConstantTimeCompare([]byte(sid), []byte(h.sid)) != 1:
		httpError(w, http.StatusNotFound, "no such session")
		return false
	}
	return true
}

func (h *HTTPHost) post(w http.ResponseWriter, r *http.Request) {
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
	if request && m.Method == "initialize" {
		h.mu.Lock()
		again := h.started || isDone(h.ended)
		h.started = true
		h.mu.Unlock()
		if again {
			writeJSON(w, http.StatusBadRequest, mcpclient.EncodeError(m.ID, -32600, "etdi: the session is already initialized: etdi serves one session", nil))
			return
		}
		w.Header().Set("Mcp-Session-Id", h.sid)
	} else {
		h.mu.Lock()
		started := h.started
		h.mu.Unlock()
		// Before initialize (server/discover, which the gate answers with
		// an error) there is no session to name yet.
		if (started || r.Header.Get("Mcp-Session-Id") != "") && !h.session(w, r) {
			return
		}
	}
	if !request {
		if !h.push(r, data) {
			httpError(w, http.StatusNotFound, "the session ended")
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	key := m.IDKey()
	ch := make(chan []byte, 1)
	h.mu.Lock()
	_, inUse := h.pending[key]
	if !inUse {
		h.pending[key] = ch
	}
	h.mu.Unlock()
	if inUse {
		writeJSON(w, http.StatusOK, mcpclient.EncodeError(m.ID, -32600, "etdi: request id "+clipText(string(m.ID))+" is already in use", nil))
		return
	}
	if !h.push(r, data) {
		h.mu.Lock()
		delete(h.pending, key)
		h.mu.Unlock()
		httpError(w, http.StatusNotFound, "the session ended")
		return
	}
	// The answer, when it comes, goes to ch whether or not this POST still
	// waits: a host that left has the answer dropped.
	select {
	case msg := <-ch:
		writeJSON(w, http.StatusOK, msg)
	case <-r.Context().Done():
	case <-h.closed:
		select {
		case msg := <-ch:
			writeJSON(w, http.StatusOK, msg)
		default:
			httpError(w, http.StatusNotFound, "the session ended")
		}
	}
}

// push hands a POSTed message to Read.
func (h *HTTPHost) push(r *http.Request, data []byte) bool {
	if isDone(h.ended) {
		return false
	}
	select {
	case h.in <- data:
		return true
	case <-h.ended:
	case <-r.Context().Done():
	}
	return false
}

// get serves the GET stream until the session ends, the host leaves or
// another GET takes over.
func (h *HTTPHost) get(w http.ResponseWriter, r *http.Request) {
	if !acceptsEventStream(r.Header) {
		httpError(w, http.StatusNotAcceptable, "the GET stream is text/event-stream")
		return
	}
	if !h.session(w, r) {
		return
	}
	s := &sseStream{stop: make(chan struct{}), wake: make(chan struct{}, 1)}
	h.mu.Lock()
	if h.stream != nil {
		close(h.stream.stop)
	}
	h.stream = s
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		if h.stream == s {
			close(s.stop)
			h.stream = nil
		}
		h.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	for {
		h.mu.Lock()
		var next queued
		if len(h.queue) > 0 && h.stream == s && !isDone(h.ended) {
			next = h.queue[0]
			h.queue[0] = queued{}
			h.queue = h.queue[1:]
			h.qbytes -= len(next.data)
		}
		h.mu.Unlock()
		if next.data != nil {
			if _, err := w.Write(sseEvent(next.data)); err != nil || rc.Flush() != nil {
				return
			}
			continue
		}
		select {
		case <-s.wake:
		case <-s.stop:
			return
		case <-h.ended:
			return
		case <-r.Context().Done():
			return
		}
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

// sseEvent is msg as one server-sent event: a data line for each of its
// lines (a message may be pretty-printed JSON).
func sseEvent(msg []byte) []byte {
	out := make([]byte, 0, len(msg)+16)
	msg = bytes.ReplaceAll(msg, []byte("\r\n"), []byte("\n"))
	for line := range bytes.SplitSeq(msg, []byte("\n")) {
		for part := range bytes.SplitSeq(line, []byte("\r")) {
			out = append(append(append(out, "data: "...), part...), '\n')
		}
	}
	return append(out, '\n')
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

// ReadListenToken reads the token an HTTPHost requires (HTTPHost.Token)
// from a file only its owner may read: a file other users can read, or
// that is empty, is refused. The file is the way to pass the token that
// no other process sees: a command line is readable by every local user
// (/proc/PID/cmdline), and an environment by every process of the user
// (/proc/PID/environ); the server etdi starts is never given it
// (ServerEnv).
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
