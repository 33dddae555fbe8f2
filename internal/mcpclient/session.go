package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// MaxMessage bounds one message of a session (etdi run): a stdio line,
// an HTTP JSON body or one server-sent event. A session has no total
// budget, as a fetch has; each message has this one, §2's limit of a
// document.
const MaxMessage = MaxFetchBytes

// Session is a connection to a server for a whole MCP session, message by
// message: the gate of etdi run reads what the server sends and writes
// what the host (or etdi itself) sends. Read and Write may be called
// concurrently; Close ends the connection and, for a process, reaps it.
type Session interface {
	Read(ctx context.Context) ([]byte, error)
	Write(ctx context.Context, msg []byte) error
	Close() error
}

// StdioSession is a server started over stdio for a session. It runs in
// its own process group, which Close ends (stdin closed and stdout read
// to its end for a grace period, then SIGTERM, then SIGKILL) and reaps,
// as a fetch does.
type StdioSession struct {
	c      *stdioConn
	cancel context.CancelFunc
	once   sync.Once
	stderr string
}

// StartStdio starts argv (env replaces the environment when not nil) in
// dir. What the server writes to stderr is copied to stderr if not nil.
func StartStdio(argv, env []string, dir string, stderr io.Writer) (*StdioSession, error) {
	if len(argv) == 0 {
		return nil, errors.New("no server command")
	}
	ctx, cancel := context.WithCancel(context.Background())
	c, err := startStdio(ctx, argv, env, dir, newBudget(1<<62), stderr, MaxMessage)
	if err != nil {
		cancel()
		return nil, err
	}
	return &StdioSession{c: c, cancel: cancel}, nil
}

// Read returns the next line the server wrote, or an error once it closed
// its stdout (it exited) or wrote a line longer than MaxMessage. The read
// is not interrupted by ctx; Close ends it.
func (s *StdioSession) Read(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.c.readLine()
}

// Write writes one message and its newline, within ctx; a message with
// line breaks is written as one line (oneLine).
func (s *StdioSession) Write(ctx context.Context, msg []byte) error {
	line, err := oneLine(msg)
	if err != nil {
		return err
	}
	return s.c.send(ctx, line, false)
}

// Close ends the server's process group and reaps it; it may be called
// more than once.
func (s *StdioSession) Close() error {
	s.once.Do(func() {
		s.stderr = s.c.close()
		s.cancel()
	})
	return nil
}

// Exit describes how the server process ended ("exit status 3"), or ""
// while it runs or if it was not reaped.
func (s *StdioSession) Exit() string {
	select {
	case <-s.c.reaped:
		if st := s.c.cmd.ProcessState; st != nil {
			return st.String()
		}
	default:
	}
	return ""
}

// Stderr returns the end of what the server wrote to stderr (after Close).
func (s *StdioSession) Stderr() string { return s.stderr }

// StreamConn speaks MCP's stdio transport over any reader and writer:
// one JSON-RPC message per line, each line bounded by MaxMessage. It is
// the host's side of etdi run (its stdin and stdout).
type StreamConn struct {
	lr     *lineReader
	r      io.Reader
	w      io.Writer
	closer func() error
	wmu    sync.Mutex
	rmu    sync.Mutex
	once   sync.Once
}

// NewStreamConn reads messages from r and writes them to w; Close calls
// closer if not nil.
func NewStreamConn(r io.Reader, w io.Writer, closer func() error) *StreamConn {
	lr := newLineReader(r)
	lr.max = MaxMessage
	return &StreamConn{lr: lr, r: r, w: w, closer: closer}
}

// Read returns the next non-empty line. The read itself is not
// interrupted by ctx (a pipe cannot be); Close the reader to end it.
func (c *StreamConn) Read(ctx context.Context) ([]byte, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		line, err := c.lr.next()
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			return line, nil
		}
	}
}

// Write writes msg and a newline, in one write.
func (c *StreamConn) Write(ctx context.Context, msg []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	line, err := oneLine(msg)
	if err != nil {
		return err
	}
	_, err = c.w.Write(append(line[:len(line):len(line)], '\n'))
	return err
}

// oneLine returns msg as one line: a message that came over HTTP (an SSE
// event of several data lines, a JSON body) may hold line breaks between
// its tokens, and written as it is to a stdio peer every line would be a
// message of its own. Such a message is compacted; JSON strings hold no
// raw line break, so nothing else changes.
func oneLine(msg []byte) ([]byte, error) {
	if !bytes.ContainsAny(msg, "\r\n") {
		return msg, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, msg); err != nil {
		return nil, fmt.Errorf("a message that is not JSON: %w", err)
	}
	return b.Bytes(), nil
}

// Close calls the closer once.
func (c *StreamConn) Close() error {
	var err error
	c.once.Do(func() {
		if c.closer != nil {
			err = c.closer()
		}
	})
	return err
}

// sessionConn lets a fetch run over a Session: etdi's own listing of a
// server on a connection it did not open (a go-sdk transport's).
type sessionConn struct {
	s       Session
	answers chan []byte
	ctx     context.Context
}

func (c *sessionConn) send(ctx context.Context, data []byte, _ bool) error {
	return c.s.Write(ctx, data)
}
func (c *sessionConn) recv(ctx context.Context) ([]byte, error) { return c.s.Read(ctx) }

// answer writes an answer to a server request in the background: a server
// that does not read cannot hold the fetch. At most maxPendingAnswers are
// written at once; more are dropped.
func (c *sessionConn) answer(data []byte) {
	select {
	case c.answers <- data: // a place among those being written
		go func() {
			c.s.Write(c.ctx, data)
			<-c.answers
		}()
	default:
	}
}

// ListSession initializes a server over s and lists it, as Stdio and HTTP
// do over connections of their own, within opts.Timeout. s is not closed.
func ListSession(ctx context.Context, s Session, opts Options) (*Listing, error) {
	opts.defaults()
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	c := &sessionConn{s: s, answers: make(chan []byte, maxPendingAnswers), ctx: ctx}
	var initialized func(string)
	if v, ok := s.(interface{ SetProtocolVersion(string) }); ok {
		initialized = v.SetProtocolVersion
	}
	return list(ctx, c, opts, initialized)
}
