package gate

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/etdi-dev/etdi/internal/mcpclient"
)

// Bounds of the events a session keeps for its host: at most
// maxHostQueue per stream and maxHostQueueBytes for all its streams;
// beyond either, the oldest are forgotten (a host need not open the GET
// stream, nor come back for an answer, and a server's messages must not
// end its session nor fill the memory). Of the request streams whose
// answer was delivered, the last maxDoneStreams are kept for replay.
const (
	maxHostQueue      = 1000
	maxHostQueueBytes = mcpclient.MaxMessage
	maxDoneStreams    = 32
)

// httpSession is one host session of an HTTPServer: the host's side of
// its gate (a Conn), and its event streams.
type httpSession struct {
	srv *HTTPServer
	id  string
	n   int

	in     chan []byte
	ended  chan struct{} // DELETE, expiry, Close: Read returns
	closed chan struct{} // the gate closed the host's side: streams finish
	gone   chan struct{} // its run returned (its server ended): it no longer counts
	cmu    sync.Once

	mu         sync.Mutex
	reason     string                  // why the session ended, for the log
	pending    map[string]*eventStream // the host's requests in flight, by id key
	progress   map[string]*eventStream // their progress tokens
	streams    map[string]*eventStream // event streams that may be resumed, by id
	standalone *eventStream
	done       []*eventStream // request streams whose answer was delivered, oldest first
	seq        uint64         // orders streams and events
	bytes      int            // bytes of the events kept
	conns      int            // connections open
	dropped    int
	idleGen    int
	idle       *time.Timer
	// idleSince is when the session last became idle (nothing in flight,
	// no stream open); zero while it is not.
	idleSince time.Time
}

// eventStream is one stream of messages to the host: the GET stream, or
// the answer to one request.
type eventStream struct {
	id      string // random: event ids are id_N
	key     string // the id key of the request it answers; "" the GET stream
	seq     uint64 // creation order: "oldest request in flight"
	sse     bool   // text/event-stream (else one application/json answer)
	init    bool   // it answers initialize
	events  []storedEvent
	first   int // number of events[0] (or of the next event, none kept)
	next    int // number of the next event; the first is 1
	sent    int // events before this number were written to a connection
	final   bool
	endsess bool // the session ends once the answer is written (a failed initialize)
	gone    bool // an application/json answer whose POST is gone
	conn    *streamConn
	wake    chan struct{}
}

type storedEvent struct {
	n      int
	seq    uint64
	data   []byte
	method string
}

// streamConn is the HTTP response a stream is written to; stop is closed
// when another takes over.
type streamConn struct{ stop chan struct{} }

func newHTTPSession(srv *HTTPServer, id string, n int) *httpSession {
	s := &httpSession{srv: srv, id: id, n: n, in: make(chan []byte, 16), ended: make(chan struct{}), closed: make(chan struct{}), gone: make(chan struct{}),
		pending: map[string]*eventStream{}, progress: map[string]*eventStream{}, streams: map[string]*eventStream{}}
	s.standalone = s.newStream("", true)
	// Its idle time starts when its initialize is posted: a session being
	// started (its server starting) is never the one that makes room.
	return s
}

// newStream makes a stream (under mu, or before the session is shared).
func (s *httpSession) newStream(key string, sse bool) *eventStream {
	s.seq++
	st := &eventStream{id: rand.Text(), key: key, seq: s.seq, sse: sse, first: 1, next: 1, sent: 1, wake: make(chan struct{}, 1)}
	if sse {
		s.streams[st.id] = st
	}
	return st
}

// Read returns the next message the host POSTed; io.EOF once the session
// ended.
func (s *httpSession) Read(ctx context.Context) ([]byte, error) {
	select {
	case m := <-s.in:
		return m, nil
	default:
	}
	select {
	case m := <-s.in:
		return m, nil
	case <-s.ended:
		select { // what the host sent last comes first
		case m := <-s.in:
			return m, nil
		default:
		}
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write delivers msg to the host: an answer to the stream of its request
// (dropped when none waits), anything else to the stream routeLocked
// picks. It does not block.
func (s *httpSession) Write(ctx context.Context, msg []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m, err := mcpclient.Decode(msg)
	if err != nil {
		return fmt.Errorf("not a JSON-RPC message: %w", err)
	}
	var lines []string
	s.mu.Lock()
	if !m.Request {
		st := s.pending[m.IDKey()]
		switch {
		case st == nil:
		case st.gone:
			s.finishLocked(st) // its POST is gone: the answer has nowhere to go
		default:
			s.finishLocked(st)
			if st.init && m.Error {
				// The host cannot use a session whose initialize failed:
				// its server is ended at once, not at expiry.
				st.endsess = true
			}
			lines = s.appendLocked(st, msg, "")
		}
		if st != nil {
			s.armIdleLocked() // the request is no longer in flight
		}
	} else {
		// What the server sends is no sign of the host: it does not keep
		// the session from expiring.
		lines = s.appendLocked(s.routeLocked(m), msg, m.Method)
	}
	s.mu.Unlock()
	for _, l := range lines {
		s.srv.logf("%s", l)
	}
	return nil
}

// Close ends the session: the streams write what they hold and end.
func (s *httpSession) Close() error {
	s.close()
	return nil
}

func (s *httpSession) close() {
	s.end("")
	s.cmu.Do(func() { close(s.closed) })
}

// end ends the session (Read returns io.EOF); why is for the log.
func (s *httpSession) end(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if isDone(s.ended) {
		return
	}
	if why == "" {
		why = "its server ended or etdi is ending"
	}
	s.reason = why
	if s.idle != nil {
		s.idle.Stop()
	}
	close(s.ended)
}

// idleFor is how long the session has been idle: nothing in flight, no
// stream open (false while it is not).
func (s *httpSession) idleFor(now time.Time) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idleSince.IsZero() || len(s.pending) > 0 || s.conns > 0 || isDone(s.ended) {
		return 0, false
	}
	return now.Sub(s.idleSince), true
}

func (s *httpSession) why() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// relatedUnrelated are the notifications that concern no request: they go
// to the GET stream.
func unrelatedNotification(method string) bool {
	return method == "notifications/resources/updated" ||
		(strings.HasPrefix(method, "notifications/") && strings.HasSuffix(method, "/list_changed"))
}

// routeLocked picks the stream of a request or notification for the
// host (docs/gate.md#runtime-gate, --listen): the request stream whose progress token a
// progress notification names; the GET stream for list_changed and
// resources/updated; else the oldest request in flight whose event stream
// is connected, or the GET stream when there is none.
func (s *httpSession) routeLocked(m *mcpclient.Message) *eventStream {
	if m.Method == "notifications/progress" {
		if st := s.progress[progressTokenKey(m.Params, "")]; st != nil {
			return st
		}
	}
	if unrelatedNotification(m.Method) {
		return s.standalone
	}
	var oldest *eventStream
	for _, st := range s.pending {
		if st.sse && st.conn != nil && (oldest == nil || st.seq < oldest.seq) {
			oldest = st
		}
	}
	if oldest != nil {
		return oldest
	}
	return s.standalone
}

// progressTokenKey is the key of the progress token in params (a
// request's _meta.progressToken, or a progress notification's
// progressToken), "" if none.
func progressTokenKey(params []byte, in string) string {
	var p struct {
		Meta struct {
			Token json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
		Token json.RawMessage `json:"progressToken"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil {
		return ""
	}
	tok := p.Token
	if in == "_meta" {
		tok = p.Meta.Token
	}
	if len(tok) == 0 || (tok[0] != '"' && (tok[0] < '0' || tok[0] > '9') && tok[0] != '-') {
		return ""
	}
	return mcpclient.IDKey(tok)
}

// finishLocked takes st's request out of those in flight.
func (s *httpSession) finishLocked(st *eventStream) {
	delete(s.pending, st.key)
	for k, v := range s.progress {
		if v == st {
			delete(s.progress, k)
		}
	}
	st.final = true
	if st.sse {
		s.retireLocked(st)
	}
}

// retireLocked keeps a request stream whose request was answered for
// replay: of those, the last maxDoneStreams not being written are kept.
func (s *httpSession) retireLocked(st *eventStream) {
	s.done = append(s.done, st)
	for len(s.done) > maxDoneStreams {
		i := 0
		for i < len(s.done)-1 && s.done[i].conn != nil {
			i++
		}
		if i == len(s.done)-1 {
			return // all but st are being written: st itself is kept
		}
		old := s.done[i]
		s.done = append(s.done[:i], s.done[i+1:]...)
		delete(s.streams, old.id)
		for _, e := range old.events {
			s.bytes -= len(e.data)
		}
		old.events = nil
	}
}

// appendLocked adds msg to st and forgets the oldest events beyond the
// bounds; it returns the lines to log.
func (s *httpSession) appendLocked(st *eventStream, msg []byte, method string) []string {
	s.seq++
	st.events = append(st.events, storedEvent{n: st.next, seq: s.seq, data: msg, method: method})
	st.next++
	s.bytes += len(msg)
	var lines []string
	for len(st.events) > maxHostQueue {
		lines = append(lines, s.dropLocked(st)...)
	}
	for s.bytes > maxHostQueueBytes {
		var oldest *eventStream
		for _, o := range s.allStreamsLocked() {
			if len(o.events) > 0 && (o != st || len(o.events) > 1) && (oldest == nil || o.events[0].seq < oldest.events[0].seq) {
				oldest = o
			}
		}
		if oldest == nil {
			break
		}
		lines = append(lines, s.dropLocked(oldest)...)
	}
	select {
	case st.wake <- struct{}{}:
	default:
	}
	return lines
}

// allStreamsLocked are the streams that hold events.
func (s *httpSession) allStreamsLocked() []*eventStream {
	all := make([]*eventStream, 0, len(s.streams)+len(s.pending)+1)
	for _, st := range s.streams {
		all = append(all, st)
	}
	for _, st := range s.pending {
		if !st.sse {
			all = append(all, st)
		}
	}
	return all
}

// dropLocked forgets the oldest event of st.
func (s *httpSession) dropLocked(st *eventStream) []string {
	old := st.events[0]
	st.events[0] = storedEvent{}
	st.events = st.events[1:]
	st.first = old.n + 1
	s.bytes -= len(old.data)
	if st.final && len(st.events) == 0 {
		delete(s.streams, st.id)
	}
	if old.n < st.sent {
		return nil // delivered: only its replay is lost
	}
	// One line for the first drop and every 1000th: a server that floods
	// a host that reads nothing does not flood the log.
	if s.dropped++; s.dropped == 1 || s.dropped%1000 == 0 {
		what := old.method
		if what == "" {
			what = "an answer"
		}
		return []string{fmt.Sprintf("session %d: dropped a message for the host (%s; %d so far): more than %d messages on one stream or %d bytes in all wait for it",
			s.n, clipText(what), s.dropped, maxHostQueue, maxHostQueueBytes)}
	}
	return nil
}

// seen records a request of the host to the session: the idle time
// starts again.
func (s *httpSession) seen() {
	s.mu.Lock()
	s.armIdleLocked()
	s.mu.Unlock()
}

func (s *httpSession) armIdle() {
	s.mu.Lock()
	s.armIdleLocked()
	s.mu.Unlock()
}

// armIdleLocked (re)starts the idle timer when no stream is open, and
// stops it otherwise. A request in flight whose stream no connection
// reads does not stop it: a host resumes a broken stream within seconds,
// and one that left must not keep the session and its server forever
// because the server never answers. Such a session is not idle for
// making room (idleSince), only for expiry.
func (s *httpSession) armIdleLocked() {
	s.idleGen++
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	s.idleSince = time.Time{}
	if s.conns > 0 || isDone(s.ended) {
		return
	}
	if len(s.pending) == 0 {
		s.idleSince = time.Now()
	}
	gen, d := s.idleGen, s.srv.opts.IdleTimeout
	s.idle = time.AfterFunc(d, func() {
		s.mu.Lock()
		expired, waiting := gen == s.idleGen && s.conns == 0, len(s.pending)
		s.mu.Unlock()
		switch {
		case !expired:
		case waiting > 0:
			s.end(fmt.Sprintf("it expired (no request and no stream open for %v; %d requests were in flight, their streams unread)", d, waiting))
		default:
			s.end(fmt.Sprintf("it expired (no request for %v)", d))
		}
	})
}

// post relays one message the host POSTed to an open session.
func (s *httpSession) post(w http.ResponseWriter, r *http.Request, m *mcpclient.Message, data []byte) {
	if !m.Request || m.ID == nil {
		if m.Request && m.Method == "notifications/cancelled" {
			// A cancelled request gets no answer: its stream ends, and the
			// session can expire.
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			if json.Unmarshal(m.Params, &p) == nil && len(p.RequestID) > 0 {
				s.mu.Lock()
				if st := s.pending[mcpclient.IDKey(p.RequestID)]; st != nil {
					s.finishLocked(st)
					select {
					case st.wake <- struct{}{}:
					default:
					}
					s.armIdleLocked()
				}
				s.mu.Unlock()
			}
		}
		if !s.push(r, data) {
			httpError(w, http.StatusNotFound, "no such session: it ended")
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	key := m.IDKey()
	sse := acceptsEventStream(r.Header)
	s.mu.Lock()
	if _, inUse := s.pending[key]; inUse {
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, mcpclient.EncodeError(m.ID, -32600, "etdi: request id "+clipText(string(m.ID))+" is already in use", nil))
		return
	}
	st := s.newStream(key, sse)
	st.init = m.Method == "initialize"
	s.pending[key] = st
	if tok := progressTokenKey(m.Params, "_meta"); tok != "" && sse {
		if _, taken := s.progress[tok]; !taken {
			s.progress[tok] = st
		}
	}
	s.armIdleLocked()
	s.mu.Unlock()
	if !s.push(r, data) {
		s.mu.Lock()
		s.finishLocked(st)
		delete(s.streams, st.id)
		s.armIdleLocked()
		s.mu.Unlock()
		httpError(w, http.StatusNotFound, "no such session: it ended")
		return
	}
	if sse {
		prime := protocolAtLeast(r.Header.Get("Mcp-Protocol-Version"), "2025-11-25")
		s.serveStream(w, r, st, 1, prime)
		return
	}
	s.serveJSON(w, r, st)
}

// protocolAtLeast reports whether a protocol version (a date) is v or
// later, before the 2026-07-28 revision, which has no resumable streams.
func protocolAtLeast(version, v string) bool {
	return len(version) == 10 && version >= v && version < "2026-07-28"
}

// push hands a POSTed message to Read.
func (s *httpSession) push(r *http.Request, data []byte) bool {
	if isDone(s.ended) {
		return false
	}
	select {
	case s.in <- data:
		return true
	case <-s.ended:
	case <-r.Context().Done():
	}
	return false
}

// attach makes c the connection st is written to.
func (s *httpSession) attach(st *eventStream) *streamConn {
	c := &streamConn{stop: make(chan struct{})}
	s.mu.Lock()
	if st.conn != nil {
		close(st.conn.stop)
	}
	st.conn = c
	s.conns++
	s.armIdleLocked()
	s.mu.Unlock()
	return c
}

func (s *httpSession) detach(st *eventStream, c *streamConn) {
	s.mu.Lock()
	if st.conn == c {
		st.conn = nil
	}
	s.conns--
	s.armIdleLocked()
	s.mu.Unlock()
}

// serveJSON answers a request as application/json: no event can go to
// it but the answer, which is dropped if the host left.
func (s *httpSession) serveJSON(w http.ResponseWriter, r *http.Request, st *eventStream) {
	c := s.attach(st)
	defer s.detach(st, c)
	for {
		s.mu.Lock()
		var answer []byte
		final, endsess := st.final, st.endsess
		if final && len(st.events) > 0 {
			answer = st.events[len(st.events)-1].data
			s.bytes -= len(answer)
			st.events = nil
		}
		s.mu.Unlock()
		if final {
			if answer == nil {
				w.WriteHeader(http.StatusAccepted) // cancelled, or lost beyond the bounds
				return
			}
			writeJSON(w, http.StatusOK, answer)
			if endsess {
				s.end("its initialize failed")
			}
			return
		}
		select {
		case <-st.wake:
		case <-s.closed:
			s.mu.Lock()
			final = st.final
			s.mu.Unlock()
			if !final {
				httpError(w, http.StatusNotFound, "no such session: it ended")
				return
			}
		case <-r.Context().Done():
			// The host left: the answer has nowhere to go.
			s.mu.Lock()
			for _, e := range st.events {
				s.bytes -= len(e.data)
			}
			st.events, st.gone = nil, true
			s.mu.Unlock()
			return
		}
	}
}

// get serves a GET: the GET stream, or with Last-Event-ID the rest of
// the stream of that event.
func (s *httpSession) get(w http.ResponseWriter, r *http.Request) {
	last := r.Header.Values("Last-Event-ID")
	if len(last) == 0 {
		s.mu.Lock()
		from := s.standalone.sent
		s.mu.Unlock()
		s.serveStream(w, r, s.standalone, from, false)
		return
	}
	sid, n, ok := parseEventID(last[0])
	if len(last) != 1 || !ok {
		httpError(w, http.StatusBadRequest, "Last-Event-ID is not an event id of this endpoint")
		return
	}
	s.mu.Lock()
	st := s.streams[sid]
	var msg string
	switch {
	case st == nil:
		msg = "Last-Event-ID names no stream of this session that is kept"
	case n >= st.next:
		msg = "Last-Event-ID names an event that was never sent"
	case n+1 < st.first:
		msg = fmt.Sprintf("the events after %s are no longer kept (at most %d per stream and %d bytes per session are)", last[0], maxHostQueue, maxHostQueueBytes)
	}
	s.mu.Unlock()
	if msg != "" {
		httpError(w, http.StatusBadRequest, msg)
		return
	}
	s.serveStream(w, r, st, n+1, false)
}

// parseEventID reads an event id of ours, STREAM_N (N >= 0).
func parseEventID(id string) (stream string, n int, ok bool) {
	stream, num, ok := strings.Cut(id, "_")
	if !ok || stream == "" || len(num) == 0 || len(num) > 9 || strings.Trim(num, "0123456789") != "" {
		return "", 0, false
	}
	n, err := strconv.Atoi(num)
	return stream, n, err == nil
}

// serveStream writes st to the response as text/event-stream, from event
// number from on, until its answer was written, another connection takes
// it over, the host leaves or the session ends.
func (s *httpSession) serveStream(w http.ResponseWriter, r *http.Request, st *eventStream, from int, prime bool) {
	c := s.attach(st)
	defer s.detach(st, c)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if prime {
		// An id before any message: a host that loses the stream at once
		// can still resume it (MCP 2025-11-25).
		w.Write([]byte("id: " + st.id + "_0\ndata: \n\n"))
	}
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	cursor := from
	closing := false
	for {
		s.mu.Lock()
		if st.conn != c {
			s.mu.Unlock()
			return
		}
		if cursor < st.first {
			cursor = st.first
		}
		var batch []storedEvent
		if i := cursor - st.first; i < len(st.events) {
			batch = append(batch, st.events[i:]...)
		}
		final, endsess := st.final, st.endsess
		s.mu.Unlock()
		var buf bytes.Buffer
		for _, e := range batch {
			buf.Write(sseEvent(st.id+"_"+strconv.Itoa(e.n), e.data))
		}
		if buf.Len() > 0 {
			if _, err := w.Write(buf.Bytes()); err != nil || rc.Flush() != nil {
				return
			}
			cursor = batch[len(batch)-1].n + 1
			s.mu.Lock()
			if cursor > st.sent {
				st.sent = cursor
			}
			s.mu.Unlock()
			continue
		}
		if final && st.key != "" {
			if endsess {
				s.end("its initialize failed")
			}
			return
		}
		if closing {
			return
		}
		select {
		case <-st.wake:
		case <-c.stop:
			return
		case <-s.closed:
			closing = true // what is held is written, then the stream ends
		case <-r.Context().Done():
			return
		}
	}
}

// sseEvent is msg as one server-sent event with an id: a data line for
// each of its lines (a message may be pretty-printed JSON).
func sseEvent(id string, msg []byte) []byte {
	out := make([]byte, 0, len(msg)+len(id)+16)
	out = append(append(append(out, "id: "...), id...), '\n')
	msg = bytes.ReplaceAll(msg, []byte("\r\n"), []byte("\n"))
	for line := range bytes.SplitSeq(msg, []byte("\n")) {
		for part := range bytes.SplitSeq(line, []byte("\r")) {
			out = append(append(append(out, "data: "...), part...), '\n')
		}
	}
	return append(out, '\n')
}
