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

// Bounds of one fetch (SPEC.md §17, "Fetch bounds"). Everything a server
// sends is hostile: these hold whatever it does.
const (
	// MaxFetchBytes bounds all bytes a server sends in one fetch: every
	// message (answers, requests, notifications) of every page, counted as
	// read (HTTP bodies after gzip is inflated, SSE framing included). It
	// is §2's limit of a tools/list file, so a listing can never be larger
	// than a file etdi would read.
	MaxFetchBytes = etdi.MaxManifestSize
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
}

func newLineReader(r io.Reader) *lineReader { return &lineReader{bufio.NewReaderSize(r, 64<<10)} }

// next returns the next line without its end of line (\n or \r\n). At the
// end of the input a last unterminated line is returned; after it, io.EOF.
func (lr *lineReader) next() ([]byte, error) {
	var line []byte
	for {
		chunk, err := lr.r.ReadSlice('\n')
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				return line, nil
			}
			return nil, err
		}
		line = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
		return line, nil
	}
}

// clip shortens server text quoted in an error.
func clip(s string) string {
	if len(s) > maxErrorText {
		return s[:maxErrorText] + "..."
	}
	return s
}
