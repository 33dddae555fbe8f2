// Package hostile holds MCP servers that misbehave on purpose, for the
// tests that prove a fetch stays bounded (docs/live.md#fetch-bounds).
// Test binaries run Stdio as a child process (re-executing themselves
// with MCP_HOSTILE set) and Handler in an httptest server.
package hostile

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Env is the environment variable that names the mode of a stdio server.
// It is not an ETDI_* variable: etdi starts no server with those.
const Env = "MCP_HOSTILE"

// PIDFile, if set, is where the grandchild mode writes its grandchild's
// process id, and the deaf mode its own.
const PIDFile = "MCP_HOSTILE_PIDFILE"

// Modes of Stdio and Handler. Each names what the server does wrong.
const (
	Good         = "good"          // two tools, one page: a server that behaves
	Deaf         = "deaf"          // never reads stdin, writes nothing, ignores SIGTERM
	FloodRequest = "flood-request" // never reads stdin; sends sampling, elicitation and roots/list requests without end
	FloodNotify  = "flood-notify"  // answers nothing; sends notifications without end
	HugeLine     = "huge-line"     // answers tools/list with a line (or JSON body) of 2 GiB
	HugePages    = "huge-pages"    // 50 pages of 15 MiB each
	Loop         = "loop"          // nextCursor is always the same
	EndlessPages = "endless-pages" // a new nextCursor on every page, without end
	ManyTools    = "many-tools"    // 3 pages of 8,000 tools
	StopsReading = "stops-reading" // stops reading stdin after a page whose nextCursor is 1 MiB, ignores SIGTERM
	BigListing   = "big-listing"   // harmless but large: 4 pages of one 15 MiB tool (60 MiB in all)
	ManyBigTools = "many-big"      // harmless but large: 4 pages of 5,000 tools of 3 KB (20,000 tools, 58 MiB)
	Grandchild   = "grandchild"    // starts a grandchild that holds stderr open and outlives it
	// GrandchildSetsid starts a grandchild in a session of its own, out of
	// the server's process group, that outlives it.
	GrandchildSetsid = "grandchild-setsid"
	sleeper          = "sleeper"      // the grandchild
	GzipBomb         = "gzip-bomb"    // HTTP: a 1 MB gzip body that inflates to 1 GiB
	HugeEvent        = "huge-event"   // HTTP: one SSE event of 2 GiB
	HugeError        = "huge-error"   // HTTP: an error status with a 2 GiB body
	SSE              = "sse"          // HTTP: a good server answering in event streams
	DenseArray       = "dense-array"  // one tool whose schema holds an array of 4M zeros (8 MiB)
	DenseObject      = "dense-object" // one tool whose schema holds an object of 4M members (about 50 MiB)
	DeepWide         = "deep-wide"    // one tool whose schema nests 60 arrays, each with 100,000 zeros
	DenseMax         = "dense-max"    // accepted: 5 tools of 49,995 JSON values (distinct words), 249,977 in the page
	DenseMeta        = "dense-meta"   // accepted: 5 tools whose _meta hold 49,990 words each, and a 30 MiB description
	DensePages       = "dense-pages"  // 6 pages, each one tool of 49,995 JSON values (distinct words)
	DenseInit        = "dense-init"   // answers initialize with 2M zeros in an unknown member (4 MiB)
)

// Sizes of the dense modes, at etdi's limits (SPEC.md §2, docs/live.md#live-servers): 50,000
// JSON values per tool definition, 250,000 per listing.
const (
	denseTools = 5
	denseWords = 49_990
)

// Stdio runs the stdio server of mode and exits.
func Stdio(mode string) {
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	switch mode {
	case Deaf:
		signal.Ignore(syscall.SIGTERM)
		if f := os.Getenv(PIDFile); f != "" {
			os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o644)
		}
		for {
			time.Sleep(time.Hour)
		}
	case FloodRequest:
		methods := []string{"sampling/createMessage", "elicitation/create", "roots/list"}
		for i := 1; ; i++ {
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":{}}`+"\n", i, methods[i%3])
			if out.Flush() != nil {
				os.Exit(0)
			}
		}
	case FloodNotify:
		go io.Copy(io.Discard, os.Stdin)
		for {
			out.WriteString(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hello"}}` + "\n")
			if out.Flush() != nil {
				os.Exit(0)
			}
		}
	case sleeper:
		time.Sleep(time.Hour)
		os.Exit(0)
	case Grandchild, GrandchildSetsid:
		exe, _ := os.Executable()
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), Env+"="+sleeper)
		cmd.Stderr = os.Stderr // holds the server's stderr open
		if mode == GrandchildSetsid {
			setsid(cmd)
		}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if f := os.Getenv(PIDFile); f != "" {
			os.WriteFile(f, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
		}
		mode = Good
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			os.Exit(0) // stdin closed: the client is done
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Cursor string `json:"cursor"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &req) != nil || req.ID == nil {
			continue
		}
		if mode == StopsReading && req.Method == "tools/list" {
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[],"nextCursor":"`, req.ID)
			writeFill(out, 1<<20)
			out.WriteString("\"}}\n")
			out.Flush()
			signal.Ignore(syscall.SIGTERM)
			for {
				time.Sleep(time.Hour)
			}
		}
		if mode == HugeLine && req.Method == "tools/list" {
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[],"x":"`, req.ID)
			writeFill(out, 2<<30)
			out.WriteString("\"}}\n")
			out.Flush()
			continue
		}
		writeAnswer(out, mode, req.ID, req.Method, req.Params.Cursor)
		if out.Flush() != nil {
			os.Exit(0)
		}
	}
}

var fill = bytes.Repeat([]byte("a"), 1<<20)

// writeFill writes n bytes of 'a' (stopping early if the writer fails).
func writeFill(w io.Writer, n int64) {
	chunk := fill
	for ; n > 0; n -= int64(len(chunk)) {
		if int64(len(chunk)) > n {
			chunk = chunk[:n]
		}
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// writeRepeat writes s n times.
func writeRepeat(w io.Writer, s string, n int) {
	chunk := strings.Repeat(s, 1<<12)
	for ; n >= 1<<12; n -= 1 << 12 {
		io.WriteString(w, chunk)
	}
	io.WriteString(w, strings.Repeat(s, n))
}

// writeAnswer writes the answer of a server in mode to a request.
func writeAnswer(w io.Writer, mode string, id json.RawMessage, method, cursor string) {
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":`, id)
	switch method {
	case "initialize":
		io.WriteString(w, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}`)
		if mode == DenseInit {
			io.WriteString(w, `,"x":[0`)
			writeRepeat(w, ",0", 2<<20)
			io.WriteString(w, `]`)
		}
		io.WriteString(w, `}`)
	case "tools/list":
		writePage(w, mode, cursor)
	default:
		io.WriteString(w, `{}`)
	}
	io.WriteString(w, "}\n")
}

// writePage writes the tools/list page at cursor of a server in mode,
// by the page writer of the mode, or a well-behaved page of two tools.
func writePage(w io.Writer, mode, cursor string) {
	n, _ := strconv.Atoi(cursor)
	if page := pageWriters[mode]; page != nil {
		page(w, mode, n)
		return
	}
	io.WriteString(w, `{"tools":[{"name":"get_weather","description":"Get the weather.","inputSchema":{"type":"object"}},{"name":"get_forecast","description":"Get the forecast.","inputSchema":{"type":"object"}}]}`)
}

// pageWriters write page n of the tools/list answer of each mode whose
// listing is hostile.
var pageWriters = map[string]func(w io.Writer, mode string, n int){
	HugePages:    writeHugePage,
	BigListing:   writeHugePage,
	Loop:         writeLoopPage,
	EndlessPages: writeEndlessPage,
	ManyBigTools: writeManyBigToolsPage,
	DenseArray:   writeDenseArrayPage,
	DenseObject:  writeDenseObjectPage,
	DeepWide:     writeDeepWidePage,
	DensePages:   writeDensePage,
	DenseMax:     writeDenseMaxPage,
	DenseMeta:    writeDenseMaxPage,
	ManyTools:    writeManyToolsPage,
}

// writeHugePage writes one tool per page, its description 15 MiB, and
// a next page up to the mode's page count.
func writeHugePage(w io.Writer, mode string, n int) {
	fmt.Fprintf(w, `{"tools":[{"name":"tool_%d","inputSchema":{"type":"object"},"description":"`, n)
	writeFill(w, 15<<20)
	io.WriteString(w, `"}]`)
	if pages := map[string]int{HugePages: 50, BigListing: 4}[mode]; n+1 < pages {
		fmt.Fprintf(w, `,"nextCursor":"%d"`, n+1)
	}
	io.WriteString(w, `}`)
}

// writeLoopPage writes a page whose next cursor is always the same.
func writeLoopPage(w io.Writer, _ string, n int) {
	fmt.Fprintf(w, `{"tools":[{"name":"tool_%d","inputSchema":{"type":"object"}}],"nextCursor":"same"}`, n)
}

// writeEndlessPage writes an empty page that always has a next one.
func writeEndlessPage(w io.Writer, _ string, n int) {
	fmt.Fprintf(w, `{"tools":[],"nextCursor":"%d"}`, n+1)
}

// writeManyBigToolsPage writes 5,000 tools of 3,000-byte descriptions
// per page, four pages.
func writeManyBigToolsPage(w io.Writer, _ string, n int) {
	io.WriteString(w, `{"tools":[`)
	for i := 0; i < 5000; i++ {
		if i > 0 {
			io.WriteString(w, ",")
		}
		fmt.Fprintf(w, `{"name":"t%d_%d","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}},"description":"`, n, i)
		writeFill(w, 3000)
		io.WriteString(w, `"}`)
	}
	io.WriteString(w, `]`)
	if n+1 < 4 {
		fmt.Fprintf(w, `,"nextCursor":"%d"`, n+1)
	}
	io.WriteString(w, `}`)
}

// writeDenseArrayPage writes one tool whose schema holds an array of
// 4 Mi numbers.
func writeDenseArrayPage(w io.Writer, _ string, _ int) {
	io.WriteString(w, `{"tools":[{"name":"dense","inputSchema":{"type":"object","enum":[0`)
	writeRepeat(w, ",0", 4<<20)
	io.WriteString(w, `]}}]}`)
}

// writeDenseObjectPage writes one tool whose schema holds an object of
// 4 Mi members.
func writeDenseObjectPage(w io.Writer, _ string, _ int) {
	io.WriteString(w, `{"tools":[{"name":"dense","inputSchema":{"type":"object","properties":{"0":0`)
	for i := 1; i < 4<<20; i++ {
		fmt.Fprintf(w, `,"%x":0`, i)
	}
	io.WriteString(w, `}}}]}`)
}

// writeDeepWidePage writes one tool whose schema nests 60 arrays, each
// of 100,000 numbers.
func writeDeepWidePage(w io.Writer, _ string, _ int) {
	io.WriteString(w, `{"tools":[{"name":"dense","inputSchema":{"type":"object","enum":`)
	for range 60 {
		io.WriteString(w, `[0`)
		writeRepeat(w, ",0", 100_000)
		io.WriteString(w, `,`)
	}
	io.WriteString(w, `0`)
	for range 60 {
		io.WriteString(w, `]`)
	}
	io.WriteString(w, `}}]}`)
}

// writeDensePage writes one tool of denseWords distinct words per page,
// always with a next page.
func writeDensePage(w io.Writer, _ string, n int) {
	fmt.Fprintf(w, `{"tools":[{"name":"dense_%d","inputSchema":{"type":"object","enum":[`, n)
	for i := range denseWords {
		if i > 0 {
			io.WriteString(w, ",")
		}
		fmt.Fprintf(w, `"w_%d_%d"`, n, i)
	}
	fmt.Fprintf(w, `]}}],"nextCursor":"%d"}`, n+1)
}

// writeDenseMaxPage writes denseTools tools, each of object, name,
// inputSchema, type, and an array of denseWords distinct words: 5 +
// 99,990 = 99,995 values. In [DenseMeta] the words are in _meta and the
// first tool's description is 30 MiB.
func writeDenseMaxPage(w io.Writer, mode string, _ int) {
	io.WriteString(w, `{"tools":[`)
	for t := range denseTools {
		if t > 0 {
			io.WriteString(w, ",")
		}
		if mode == DenseMax {
			fmt.Fprintf(w, `{"name":"dense_%d","inputSchema":{"type":"object","enum":[`, t)
		} else {
			fmt.Fprintf(w, `{"name":"dense_%d","_meta":{"words":[`, t)
		}
		for i := range denseWords {
			if i > 0 {
				io.WriteString(w, ",")
			}
			fmt.Fprintf(w, `"w_%d_%d"`, t, i)
		}
		if mode == DenseMax {
			io.WriteString(w, `]}}`)
		} else if t == 0 {
			io.WriteString(w, `]},"description":"`)
			writeFill(w, 30<<20)
			io.WriteString(w, `"}`)
		} else {
			io.WriteString(w, `]},"description":"d"}`)
		}
	}
	io.WriteString(w, `]}`)
}

// writeManyToolsPage writes 8,000 small tools per page, three pages.
func writeManyToolsPage(w io.Writer, _ string, n int) {
	io.WriteString(w, `{"tools":[`)
	for i := 0; i < 8000; i++ {
		if i > 0 {
			io.WriteString(w, ",")
		}
		fmt.Fprintf(w, `{"name":"t%d_%d","inputSchema":{"type":"object"}}`, n, i)
	}
	io.WriteString(w, `]`)
	if n+1 < 3 {
		fmt.Fprintf(w, `,"nextCursor":"%d"`, n+1)
	}
	io.WriteString(w, `}`)
}

var (
	bombOnce sync.Once
	bomb     []byte
)

// gzipBomb returns a gzip stream of about 1 MB that inflates to a JSON-RPC
// answer padded with 1 GiB of spaces: 1,024 gzip members of 1 MiB each
// (a gzip reader reads concatenated members as one stream).
func gzipBomb(id json.RawMessage) []byte {
	bombOnce.Do(func() {
		var m bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&m, gzip.BestCompression)
		zw.Write(bytes.Repeat([]byte(" "), 1<<20))
		zw.Close()
		bomb = bytes.Repeat(m.Bytes(), 1024)
	})
	var head bytes.Buffer
	zw := gzip.NewWriter(&head)
	fmt.Fprintf(zw, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[]`, id)
	zw.Close()
	return append(head.Bytes(), bomb...)
}

// Handler serves Streamable HTTP in mode. For the redirect test, see
// Redirect.
func Handler(mode string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Cursor string `json:"cursor"`
			} `json:"params"`
		}
		json.Unmarshal(body, &req)
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Mcp-Session-Id", "s-1")
		flusher, _ := w.(http.Flusher)
		if req.Method == "tools/list" {
			switch mode {
			case HugeLine:
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[],"x":"`, req.ID)
				writeFill(w, 2<<30)
				return
			case GzipBomb:
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Encoding", "gzip")
				w.Write(gzipBomb(req.ID))
				return
			case HugeEvent:
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "event: message\ndata: ")
				writeFill(w, 2<<30)
				return
			case HugeError:
				w.WriteHeader(http.StatusInternalServerError)
				writeFill(w, 2<<30)
				return
			case FloodNotify:
				w.Header().Set("Content-Type", "text/event-stream")
				for {
					if _, err := io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n"); err != nil {
						return
					}
				}
			case FloodRequest:
				w.Header().Set("Content-Type", "text/event-stream")
				for i := 1000; ; i++ {
					if _, err := fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"sampling/createMessage\",\"params\":{}}\n\n", i); err != nil {
						return
					}
				}
			}
		}
		var out bytes.Buffer
		writeAnswer(&out, mode, req.ID, req.Method, req.Params.Cursor)
		if mode == SSE || mode == HugePages {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, ": keep-alive\n\nevent: message\nid: 1\ndata: ")
			w.Write(bytes.TrimSpace(out.Bytes()))
			io.WriteString(w, "\n\n")
			if flusher != nil {
				flusher.Flush()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(out.Bytes())
	})
}

// Redirect answers every request with a 307 redirect to target, another
// origin.
func Redirect(target string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	})
}

// Recorder is a good server that records the header name of every request
// it receives.
type Recorder struct {
	Header string
	mu     sync.Mutex
	got    []string
}

func (rec *Recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.mu.Lock()
	rec.got = append(rec.got, r.Header.Get(rec.Header))
	rec.mu.Unlock()
	Handler(Good).ServeHTTP(w, r)
}

// Received returns the values of the header in the requests received
// ("" when absent).
func (rec *Recorder) Received() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]string(nil), rec.got...)
}
