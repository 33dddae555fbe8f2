package mcpclient

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/etdi-dev/etdi"
)

// Bounds of one fetch (docs/live.md#fetch-bounds). Everything a server
// sends is hostile: these hold whatever it does.
const (
	// MaxFetchBytes bounds all bytes a server sends in one fetch: every
	// message (answers, requests, notifications) of every page, counted as
	// read (HTTP bodies after gzip is inflated, SSE framing included). It
	// is §2's limit of a tools/list file, so a listing can never be larger
	// than a file etdi would read.
	MaxFetchBytes = etdi.MaxManifestSize
	// MaxFetchNodes bounds the JSON values of all tools/list pages
	// together (§2 bounds one document at strictjson.MaxNodes): the parsed
	// values, not the bytes, are what cost memory and time after the
	// fetch, when every definition is canonicalized, compared, scanned
	// and printed. 250,000 is 20,000 tools of 12 values, or 2,500 of 100.
	MaxFetchNodes = 250_000
	// MaxStrayMessages bounds the messages that are not the awaited answer
	// (notifications, requests from the server, answers to other ids).
	MaxStrayMessages = 1000
	// maxPendingAnswers bounds the answers to server requests waiting to be
	// written; more are dropped rather than waited for.
	maxPendingAnswers = 16
	// maxErrorBody bounds what is read of an HTTP error body.
	maxErrorBody = 4096
	// maxHeaderBytes bounds the HTTP response header.
	maxHeaderBytes = 64 << 10
	// maxErrorText bounds server text quoted in an error.
	maxErrorText = 512
)

// ErrTooLarge reports a server that sent more than MaxFetchBytes.
var ErrTooLarge = fmt.Errorf("the server sent more than %d bytes (the limit of one fetch)", MaxFetchBytes)

// budget counts the bytes a server sent in one fetch against a limit.
type budget struct {
	mu   sync.Mutex
	left int64
}

func newBudget(n int64) *budget { return &budget{left: n} }

// take consumes n bytes; it fails once the budget is spent.
func (b *budget) take(n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left -= int64(n)
	if b.left < 0 {
		return ErrTooLarge
	}
	return nil
}

// reader counts every byte read from r against the budget, so that a
// body is limited while it is read, not after.
func (b *budget) reader(r io.Reader) io.Reader { return &budgetReader{r: r, b: b} }

type budgetReader struct {
	r   io.Reader
	b   *budget
	err error
}

func (br *budgetReader) Read(p []byte) (int, error) {
	if br.err != nil {
		return 0, br.err
	}
	n, err := br.r.Read(p)
	if terr := br.b.take(n); terr != nil {
		br.err = terr
		return 0, terr
	}
	return n, err
}

// lineReader reads newline-terminated lines without ever holding more
// than the budget allows. Each line is a fresh slice.
type lineReader struct {
	r *bufio.Reader
	// max, if set, bounds one line: a longer one is ErrMessageTooLarge.
	max int
}

// ErrMessageTooLarge reports a message longer than a session allows
// (MaxMessage); the connection cannot be read past it.
var ErrMessageTooLarge = fmt.Errorf("the server sent a message longer than %d bytes", MaxMessage)

func newLineReader(r io.Reader) *lineReader { return &lineReader{r: bufio.NewReaderSize(r, 64<<10)} }

// next returns the next line without its end of line (\n or \r\n). At the
// end of the input a last unterminated line is returned; after it, io.EOF.
// The line is gathered in pieces and copied once when complete, so a line
// cut off by the budget never held more than the budget, and a complete
// one at most twice its size for a moment (append's growth would hold up
// to 2.25 times).
func (lr *lineReader) next() ([]byte, error) {
	var p pieces
	for {
		chunk, err := lr.r.ReadSlice('\n')
		p.add(chunk)
		if lr.max > 0 && p.n > lr.max+2 { // the end of line does not count
			return nil, ErrMessageTooLarge
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) && p.n > 0 {
				return p.join(), nil
			}
			return nil, err
		}
		line := p.join()
		return bytes.TrimSuffix(line[:len(line)-1], []byte("\r")), nil
	}
}

// pieces gathers bytes in copies of the reader's buffer.
type pieces struct {
	list [][]byte
	n    int
}

func (p *pieces) add(b []byte) {
	if len(b) > 0 {
		p.list = append(p.list, bytes.Clone(b))
		p.n += len(b)
	}
}

func (p *pieces) join() []byte {
	if len(p.list) == 1 {
		return p.list[0]
	}
	out := make([]byte, 0, p.n)
	for i, b := range p.list {
		out = append(out, b...)
		p.list[i] = nil
	}
	return out
}

// readAll reads r to its end like io.ReadAll, in pieces (see next).
func readAll(r io.Reader) ([]byte, error) {
	var p pieces
	buf := make([]byte, 64<<10)
	for {
		// Whole buffers, however the server trickles its bytes.
		n, err := io.ReadFull(r, buf)
		p.add(buf[:n])
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return p.join(), nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// clip shortens server text quoted in an error.
func clip(s string) string {
	if len(s) > maxErrorText {
		return s[:maxErrorText] + "..."
	}
	return s
}
