package mcpclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Stopping a stdio server: after its stdin is closed it has stdinGrace to
// exit; then its process group gets SIGTERM and termGrace to end; then
// SIGKILL, and killWait to be reaped. Together with lastWords they keep a
// fetch within --timeout plus 3 s.
const (
	stdinGrace = 1 * time.Second
	termGrace  = 1 * time.Second
	killWait   = 500 * time.Millisecond
	// lastWords is how long the end of a failed server's stderr is waited for.
	lastWords = 200 * time.Millisecond
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
}

// readLine returns the next non-empty line of a session's stdout, read by
// the caller's goroutine: no hand-off per message. Closing stdout (close)
// ends a read under way.
func (c *stdioConn) readLine() ([]byte, error) {
	c.linesMu.Lock()
	defer c.linesMu.Unlock()
	for {
		line, err := c.lines.next()
		if err != nil {
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
		writing: make(chan struct{}, 1)}
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

// close ends the server and its process group and reaps it, within
// stdinGrace + termGrace + killWait + lastWords. It returns the end of
// what the server wrote to stderr.
func (c *stdioConn) close() string {
	// Everything the server started, before it can orphan it: a process
	// that left the group with setsid is ended by pid afterwards.
	family := descendants(c.cmd.Process.Pid)
	close(c.quit)
	c.stdin.Close()
	// Nothing more is read: a server blocked writing stdout gets EPIPE
	// rather than waiting for the grace periods.
	c.stdout.Close()
	select {
	case <-c.reaped:
	case <-time.After(stdinGrace):
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
	select {
	case <-c.errDone:
	case <-time.After(lastWords):
	}
	c.stderr.Close()
	return c.tail.String()
}
