package mcpclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"
)

// Stopping a stdio server: its stdin is closed and it has stdinGrace to
// exit by itself, while what it still writes to stdout is read and
// discarded (at most maxDrain bytes), so a last message does not fail with
// EPIPE; then its process group gets SIGTERM and termGrace to end; then
// SIGKILL, and killWait to be reaped. Together with lastWords they keep a
// fetch within --timeout plus 4 s.
const (
	stdinGrace = 2 * time.Second
	termGrace  = 1 * time.Second
	killWait   = 500 * time.Millisecond
	// lastWords is how long the end of a failed server's stderr is waited for.
	lastWords = 200 * time.Millisecond
	// maxDrain bounds what is read of stdout while the server stops: one
	// message's worth. A server that writes more has its stdout closed.
	maxDrain = MaxMessage
)

// stdioConn speaks newline-delimited JSON-RPC with a child process.
//
// It is written here rather than taken from the go-sdk (mcp.CommandTransport)
// because the SDK's connection cannot bound the size of a line it reads,
// does not start the server in its own process group (so a grandchild
// holding stderr survives it and can keep the fetch from ending), and
// writes answers to server requests on the reading path, so a server that
// never reads its stdin blocks the client past any timeout.
type stdioConn struct {
	cmd    *exec.Cmd
	tree   *tree    // the server among those running, and what it leaves
	stdin  *os.File // our ends of the pipes
	stdout *os.File
	stderr *os.File
	tail   *tail

	msgs    chan lineResult
	quit    chan struct{} // closed by close: the goroutines end
	reaped  chan struct{} // closed when the process has been waited for
	errDone chan struct{} // closed when stderr reached its end
	answers chan []byte
	ctx     context.Context // the fetch's context, for answers
	// writing holds a token while a message is written; waiting for it
	// honours the context too (an answer may be stuck on a full pipe).
	writing chan struct{}
	// lines reads stdout directly, in a session (readLine).
	lines   *lineReader
	linesMu sync.Mutex
	// closing is set when close begins: readLine returns errStopped.
	closing atomic.Bool
	// drained is closed when the reading of stdout during close ended.
	drained chan struct{}
}

// errStopped is what a session's Read returns once the server is being
// stopped.
var errStopped = errors.New("the session is closed")

// readLine returns the next non-empty line of a session's stdout, read by
// the caller's goroutine: no hand-off per message. Stopping the server
// (close) ends a read under way: it returns errStopped.
func (c *stdioConn) readLine() ([]byte, error) {
	c.linesMu.Lock()
	defer c.linesMu.Unlock()
	for {
		if c.closing.Load() {
			return nil, errStopped
		}
		line, err := c.lines.next()
		if err != nil {
			if c.closing.Load() {
				return nil, errStopped
			}
			if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
				return nil, errors.New("the server closed the connection (exited?)")
			}
			return nil, err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			return line, nil
		}
	}
}

type lineResult struct {
	line []byte
	err  error
}

// startStdio starts the server with its three pipes. Everything it writes
// to stderr is kept (the last 4 KiB) and, if stderr is not nil, copied
// there. With maxLine set (a session), stdout is read by whoever calls
// readLine, each line bounded by maxLine; otherwise a goroutine reads it
// for recv.
func startStdio(ctx context.Context, argv, env []string, dir string, b *budget, stderr io.Writer, maxLine int) (*stdioConn, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = dir
	inOwnGroup(cmd)
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (*os.File, *os.File, error) {
		r, w, err := os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	// The child holds its ends now.
	inR.Close()
	outW.Close()
	errW.Close()
	c := &stdioConn{cmd: cmd, tree: watch(cmd), stdin: inW, stdout: outR, stderr: errR, tail: &tail{max: 4096},
		msgs: make(chan lineResult), quit: make(chan struct{}), reaped: make(chan struct{}),
		errDone: make(chan struct{}), answers: make(chan []byte, maxPendingAnswers), ctx: ctx,
		writing: make(chan struct{}, 1), drained: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(c.reaped)
	}()
	go func() {
		var w io.Writer = c.tail
		if stderr != nil {
			w = io.MultiWriter(c.tail, stderr)
		}
		io.Copy(w, errR)
		close(c.errDone)
	}()
	if maxLine > 0 {
		c.lines = newLineReader(outR)
		c.lines.max = maxLine
	} else {
		go c.readLines(b.reader(outR), maxLine)
	}
	go c.writeAnswers()
	return c, nil
}

func (c *stdioConn) readLines(r io.Reader, maxLine int) {
	lr := newLineReader(r)
	lr.max = maxLine
	for {
		line, err := lr.next()
		if err == nil && len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		select {
		case c.msgs <- lineResult{line, err}:
		case <-c.quit:
			return
		}
		if err != nil {
			return
		}
	}
}

func (c *stdioConn) writeAnswers() {
	for {
		select {
		case data := <-c.answers:
			c.send(c.ctx, data, false)
		case <-c.quit:
			return
		}
	}
}

// send writes one message and its newline; it gives up when ctx ends,
// even if the server never reads.
func (c *stdioConn) send(ctx context.Context, data []byte, _ bool) error {
	select {
	case c.writing <- struct{}{}:
		defer func() { <-c.writing }()
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// When ctx ends, a write blocked on a full pipe returns at once. (Where
	// pipes take no deadline, closing stdin in close unblocks it.)
	stop := context.AfterFunc(ctx, func() { c.stdin.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	_, err := c.stdin.Write(append(data[:len(data):len(data)], '\n'))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return context.DeadlineExceeded
		}
		return errors.New("the server does not read its standard input (exited?): " + err.Error())
	}
	return nil
}

func (c *stdioConn) recv(ctx context.Context) ([]byte, error) {
	select {
	case r := <-c.msgs:
		if errors.Is(r.err, io.EOF) {
			return nil, errors.New("the server closed the connection (exited?)")
		}
		return r.line, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// answer queues an answer to a server request; if too many are pending
// (the server does not read them), it is dropped.
func (c *stdioConn) answer(data []byte) {
	select {
	case c.answers <- data:
	default:
	}
}

// drain stops the reading of stdout for messages and goes on reading it
// in the background, discarding what comes, until its end, maxDrain bytes,
// or stdout is closed: a server that answers or logs once more while it
// stops is not met with EPIPE (Node.js prints a stack trace for it). Where
// a pipe takes no read deadline (Windows), a read under way cannot be
// ended otherwise, and stdout is closed at once.
func (c *stdioConn) drain() {
	c.closing.Store(true)
	if err := c.stdout.SetReadDeadline(time.Unix(1, 0)); err != nil {
		c.stdout.Close()
		close(c.drained)
		return
	}
	go func() {
		defer close(c.drained)
		// A session's reader, woken by the deadline, has left readLine.
		c.linesMu.Lock()
		defer c.linesMu.Unlock()
		c.stdout.SetReadDeadline(time.Time{})
		io.CopyN(io.Discard, c.stdout, maxDrain)
		// The end, or more than a stopping server has to say: a write
		// now fails.
		c.stdout.Close()
	}()
}

// close ends the server and its process group and reaps it, within
// stdinGrace + termGrace + killWait + lastWords. It returns the end of
// what the server wrote to stderr.
func (c *stdioConn) close() string {
	// Everything the server started, before it can orphan it: a process
	// that left the group with setsid is ended by pid afterwards.
	family := descendants(c.cmd.Process.Pid)
	close(c.quit)
	// The end of its input asks the server to exit (MCP's stdio shutdown);
	// its output is still read meanwhile.
	c.stdin.Close()
	c.drain()
	select {
	case <-c.reaped:
	case <-time.After(stdinGrace):
		// A server that ignored the end of its input may have started
		// more in its grace (a process in a session of its own): it is
		// still their parent, so they are found now, before it is ended.
		select {
		case <-c.reaped: // its pid may be another's by now
		default:
			family = append(family, descendants(c.cmd.Process.Pid)...)
		}
	}
	if groupAlive(c.cmd) {
		terminateGroup(c.cmd)
		deadline := time.Now().Add(termGrace)
		for groupAlive(c.cmd) && time.Now().Before(deadline) {
			time.Sleep(25 * time.Millisecond)
		}
		if groupAlive(c.cmd) {
			killGroup(c.cmd)
		}
	}
	killEscaped(family)
	// What left the group and the family before the server was stopped
	// (setsid and a double fork), adopted by etdi (AdoptOrphans).
	killed := time.Now().Add(killWait)
	c.tree.end(killed)
	select {
	case <-c.reaped:
	case <-time.After(time.Until(killed)):
		// Not reaped after SIGKILL (uninterruptible): leave the waiting
		// goroutine behind rather than hang.
	}
	c.tree.forget()
	// A process that still holds stdout (one beyond every reach above)
	// does not keep the drain going.
	c.stdout.Close()
	<-c.drained
	select {
	case <-c.errDone:
	case <-time.After(lastWords):
	}
	c.stderr.Close()
	return c.tail.String()
}
