package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/etdi-dev/etdi/pin"
	"github.com/rogpeppe/go-internal/testscript"
)

// The fixtures of the scripts of the runtime gate (etdi run, its --listen
// mode, what it refuses to start, and artifact binding).
//
// Commands:
//
//	gate-session [-exit N] [-answers] [VAR=VALUE...] FILE -- COMMAND [ARGS...]
//	gate-session [-answers] [-nostream] [-keep] FILE -url URL
//	    is a host: it starts COMMAND (etdi run ..., or the server itself)
//	    with the script's environment and VAR=VALUE added, speaking
//	    newline-delimited JSON-RPC on its standard input and output, or
//	    connects to URL with the Streamable HTTP transport. It sends the
//	    lines of FILE in order: a request (with an id) after the answer to
//	    the previous one has arrived, a notification at once. A line
//	    {"wait":"METHOD"} waits until a notification of METHOD has arrived
//	    (one more than earlier waits for METHOD consumed); a line
//	    {"pages":"METHOD","id":N} asks for every page of the listing
//	    METHOD, following nextCursor, with ids N, N+1, ...; a line
//	    {"send":MESSAGE} sends MESSAGE without waiting for its answer; a
//	    line {"kill":true} kills COMMAND with SIGKILL and ends the session
//	    (its exit status is not checked). ${VAR} in a line is the script's
//	    variable VAR. Over HTTP the session opens the GET stream after
//	    initialize, unless -nostream. After the last line it closes
//	    COMMAND's input and waits for COMMAND to exit, with status N
//	    (default 0), or ends the HTTP session with DELETE (unless -keep:
//	    the host leaves without it).
//	    Stdout holds every message received, one JSON line each, in the
//	    order received (with -answers only the answers to the host's
//	    requests); stderr holds COMMAND's standard error. A request
//	    from the other side is answered: ping with {}, anything else with
//	    -32601. Every wait is bounded by gateWait, which measures nothing:
//	    a regression that leaves a session waiting fails it instead of
//	    hanging the run.
//	gate-answer FILE ID...
//	    prints the answer with each id ID in FILE (a gate session's stdout),
//	    one line for what a host makes of it: "error CODE ETDI KIND" for
//	    an error (ETDI and KIND from its data, "-" if absent); for a
//	    listing, "tool NAME", "prompt NAME", "resource URI" and
//	    "template URITEMPLATE" lines, one per entry; "text TEXT" for each
//	    text content of a call's result; otherwise "result JSON".
//	gate-calls FILE
//	    prints the call records of FILE (the output of etdi pin history
//	    --json), one line each: "call SERVER/TOOL OUTCOME KIND ARGUMENTS
//	    complete" ("-" for an empty KIND; "lacks:by,digest,duration" or
//	    a part of it instead of "complete" where the record lacks the
//	    caller, the definition digest or, for a forwarded call, a positive
//	    duration).
//	gate-listen VAR [-ready REGEXP] [VAR=VALUE...] -- COMMAND [ARGS...]
//	    starts COMMAND (etdi run --listen 127.0.0.1:0 ..., or a server) in
//	    the background and waits for a line of its stdout or stderr that
//	    REGEXP matches (default: etdi's "etdi: listening on URL"); sets VAR
//	    to the match's first group. The process is killed when the script
//	    ends.
//	gate-port VAR
//	    sets VAR to a TCP port of 127.0.0.1 free when asked.
//	gate-children VAR N
//	    the gate-listen process VAR has exactly N child processes (/proc).
//	gate-stop [-exit N] VAR
//	    sends SIGTERM to the gate-listen process VAR and waits for its exit
//	    with status N (default 0); stderr holds its standard error.
//	gate-sha256 VAR FILE
//	    sets VAR to sha256:HEX of FILE's contents.
//	gate-grab [-json] VAR REGEXP FILE
//	    sets VAR to the first group of REGEXP's first match in FILE
//	    (stdout and stderr name the last command's); -json reads the group
//	    as the inside of a JSON string (its escapes decoded). A pattern
//	    matches the value literally with '...'${VAR@R}'...'.
//	gate-memoryproject DIR MARKER
//	    makes DIR a project that runs the real server-memory package of
//	    $MCPDIR with npx --no-install @modelcontextprotocol/server-memory,
//	    from its own copy of the package, which appends a line to the
//	    file MARKER each time it starts.
//	gate-gone MARKER
//	    waits (within gateWait) until no process has MARKER in its
//	    command line.
func init() {
	scriptCmds["gate-session"] = cmdGateSession
	scriptCmds["gate-listen"] = cmdGateListen
	scriptCmds["gate-children"] = cmdGateChildren
	scriptCmds["gate-stop"] = cmdGateStop
	scriptCmds["gate-sha256"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: gate-sha256 VAR FILE")
		}
		b, err := os.ReadFile(ts.MkAbs(args[1]))
		ts.Check(err)
		sum := sha256.Sum256(b)
		ts.Setenv(args[0], "sha256:"+hex.EncodeToString(sum[:]))
	}
	scriptCmds["gate-grab"] = cmdGateGrab
	scriptCmds["gate-port"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: gate-port VAR")
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		ts.Setenv(args[0], strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
		l.Close()
	}
	scriptCmds["gate-answer"] = cmdGateAnswer
	scriptCmds["gate-memoryproject"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: gate-memoryproject DIR MARKER")
		}
		ts.Check(memoryProject(ts.MkAbs(args[0]), ts.MkAbs(args[1])))
	}
	scriptCmds["gate-calls"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: gate-calls FILE")
		}
		var recs []pin.Record
		ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &recs))
		for _, r := range recs {
			if r.Type != pin.RecordCall {
				continue
			}
			var missing []string
			for what, lacks := range map[string]bool{"digest": r.Digest == "", "by": r.By == "", "duration": r.Outcome == "forwarded" && r.DurationMicros <= 0} {
				if lacks {
					missing = append(missing, what)
				}
			}
			slices.Sort(missing)
			complete := "complete"
			if len(missing) > 0 {
				complete = "lacks:" + strings.Join(missing, ",")
			}
			fmt.Fprintf(ts.Stdout(), "call %s/%s %s %s %s %s\n", r.Server, r.Tool, r.Outcome, cmp.Or(string(r.Kind), "-"), r.Arguments, complete)
		}
	}
	scriptCmds["gate-gone"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: gate-gone MARKER")
		}
		for deadline := time.Now().Add(gateWait); processWith(args[0]); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				ts.Fatalf("a process with %q in its command line still runs after %v", args[0], gateWait)
			}
		}
	}
}

// gateWait bounds every wait of the gate fixtures. It bounds; it measures
// nothing.
const gateWait = 2 * time.Minute

// processWith reports whether a process has marker in its command line.
func processWith(marker string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err == nil && bytes.Contains(b, []byte(marker)) {
			return true
		}
	}
	return false
}

// exitFlag takes a leading -exit N from args.
func exitFlag(ts *testscript.TestScript, args []string) (int, []string) {
	if len(args) >= 2 && args[0] == "-exit" {
		n, err := strconv.Atoi(args[1])
		if err != nil {
			ts.Fatalf("-exit %q: not a number", args[1])
		}
		return n, args[2:]
	}
	return 0, args
}

// scriptEnv is the script's whole environment, as exec would pass it,
// with extra added.
func scriptEnv(ts *testscript.TestScript, extra []string) []string {
	// Read through a file: the test log never shows the environment.
	f, err := os.CreateTemp("", "gate-env-")
	ts.Check(err)
	f.Close()
	defer os.Remove(f.Name())
	ts.Check(ts.Exec("sh", "-c", `env -0 >"$1"`, "sh", f.Name()))
	b, err := os.ReadFile(f.Name())
	ts.Check(err)
	var env []string
	for _, kv := range strings.Split(string(b), "\x00") {
		if kv != "" {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// scriptCommand is cmd of the script's directory and environment (with
// extra), its program found on the script's PATH.
func scriptCommand(ts *testscript.TestScript, ctx context.Context, extra []string, argv []string) *exec.Cmd {
	prog := argv[0]
	if !strings.Contains(prog, "/") {
		for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
			if fi, err := os.Stat(filepath.Join(dir, prog)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				prog = filepath.Join(dir, prog)
				break
			}
		}
	}
	cmd := exec.CommandContext(ctx, prog, argv[1:]...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = scriptEnv(ts, extra)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// exitCode is the exit status of a finished command's err.
func exitCode(ts *testscript.TestScript, err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	ts.Check(err)
	return 0
}

// rpcMessage is what a gate session needs to know of a JSON-RPC message.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Wait   string          `json:"wait"`
	Pages  string          `json:"pages"`
	Send   json.RawMessage `json:"send"`
	Kill   bool            `json:"kill"`
	Result *struct {
		NextCursor *string `json:"nextCursor"`
	} `json:"result"`
}

// gateHost is the host side of one gate session.
type gateHost struct {
	ts          *testscript.TestScript
	send        func(line []byte) // delivers one message
	kill        func()            // kills the other side, nil over HTTP
	killed      bool
	mu          sync.Mutex
	cond        *sync.Cond
	out         bytes.Buffer           // every message received, one line each
	answersOnly bool                   // out holds only answers
	answers     map[string]*rpcMessage // answers, by id
	notes       map[string]int         // notifications received, by method
	waited      map[string]int         // notifications consumed by waits, by method
	ended       bool                   // nothing more will arrive
}

func newGateHost(ts *testscript.TestScript) *gateHost {
	h := &gateHost{ts: ts, answers: map[string]*rpcMessage{}, notes: map[string]int{}, waited: map[string]int{}}
	h.cond = sync.NewCond(&h.mu)
	return h
}

// received records one message from the other side, answering its
// requests.
func (h *gateHost) received(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	var m rpcMessage
	_ = json.Unmarshal(line, &m)
	h.mu.Lock()
	if !h.answersOnly || m.Method == nil {
		h.out.Write(line)
		h.out.WriteByte('\n')
	}
	switch {
	case m.Method == nil && m.ID != nil:
		h.answers[string(m.ID)] = &m
	case m.Method != nil && m.ID == nil:
		h.notes[*m.Method]++
	}
	h.cond.Broadcast()
	h.mu.Unlock()
	if m.Method != nil && m.ID != nil {
		if *m.Method == "ping" {
			h.send([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, m.ID)))
		} else {
			h.send([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID)))
		}
	}
}

// end says nothing more will arrive.
func (h *gateHost) end() {
	h.mu.Lock()
	h.ended = true
	h.cond.Broadcast()
	h.mu.Unlock()
}

// await waits, within gateWait, until cond holds (under h.mu).
func (h *gateHost) await(what string, cond func() bool) {
	timer := time.AfterFunc(gateWait, func() { h.mu.Lock(); h.cond.Broadcast(); h.mu.Unlock() })
	defer timer.Stop()
	deadline := time.Now().Add(gateWait)
	h.mu.Lock()
	for !cond() {
		if h.ended || time.Now().After(deadline) {
			out, ended := h.out.String(), h.ended
			// Unlocked before Fatalf, which ends the script by panicking.
			h.mu.Unlock()
			h.ts.Logf("received:\n%s", out)
			h.ts.Fatalf("%s: %s", what, map[bool]string{true: "the other side ended", false: "nothing within " + gateWait.String()}[ended])
		}
		h.cond.Wait()
	}
	h.mu.Unlock()
}

// scriptVar is ${VAR} in a line of a gate session.
var scriptVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// converse sends the lines of file in order.
func (h *gateHost) converse(file string) {
	for _, line := range strings.Split(h.ts.ReadFile(file), "\n") {
		line = scriptVar.ReplaceAllStringFunc(strings.TrimSpace(line), func(v string) string {
			return h.ts.Getenv(v[2 : len(v)-1])
		})
		if line == "" {
			continue
		}
		var m rpcMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			h.ts.Fatalf("%s: %q: %v", file, line, err)
		}
		if m.Wait != "" {
			h.await("waiting for "+m.Wait, func() bool { return h.notes[m.Wait] > h.waited[m.Wait] })
			h.mu.Lock()
			h.waited[m.Wait]++
			h.mu.Unlock()
			continue
		}
		switch {
		case m.Pages != "":
			h.pages(m.Pages, m.ID)
			continue
		case m.Send != nil:
			h.send(m.Send)
			continue
		case m.Kill:
			if h.kill == nil {
				h.ts.Fatalf("kill: not over HTTP")
			}
			h.kill()
			h.killed = true
			return
		}
		h.send([]byte(line))
		if m.ID != nil && m.Method != nil {
			h.answer(*m.Method, string(m.ID))
		}
	}
}

// answer waits for the answer with id.
func (h *gateHost) answer(method, id string) *rpcMessage {
	h.await("the answer to "+method+" "+id, func() bool { return h.answers[id] != nil })
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.answers[id]
}

// pages asks for every page of the listing method, the first with id
// first and each next page with the next integer id.
func (h *gateHost) pages(method string, first json.RawMessage) {
	id, err := strconv.Atoi(string(first))
	if err != nil {
		h.ts.Fatalf("pages %s: id %s is not an integer", method, first)
	}
	params := "{}"
	for ; ; id++ {
		h.send([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)))
		a := h.answer(method, strconv.Itoa(id))
		if a.Result == nil || a.Result.NextCursor == nil {
			return
		}
		params = fmt.Sprintf(`{"cursor":%q}`, *a.Result.NextCursor)
	}
}

func cmdGateSession(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! gate-session")
	}
	want, args := exitFlag(ts, args)
	answersOnly := len(args) > 0 && args[0] == "-answers"
	if answersOnly {
		args = args[1:]
	}
	var extra []string
	for len(args) > 0 && strings.Contains(args[0], "=") {
		extra, args = append(extra, args[0]), args[1:]
	}
	nostream, keep := false, false
	for len(args) > 0 && (args[0] == "-nostream" || args[0] == "-keep") {
		nostream, keep = nostream || args[0] == "-nostream", keep || args[0] == "-keep"
		args = args[1:]
	}
	if len(args) == 3 && args[1] == "-url" {
		if want != 0 || len(extra) > 0 {
			ts.Fatalf("gate-session -url: no -exit, no VAR=VALUE")
		}
		gateHTTPSession(ts, args[0], args[2], !nostream, !keep, answersOnly)
		return
	}
	if len(args) < 3 || args[1] != "--" || nostream || keep {
		ts.Fatalf("usage: gate-session [-exit N] [-answers] [VAR=VALUE...] FILE -- COMMAND [ARGS...] | [-answers] [-nostream] [-keep] FILE -url URL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), gateWait)
	defer cancel()
	cmd := scriptCommand(ts, ctx, extra, args[2:])
	in, err := cmd.StdinPipe()
	ts.Check(err)
	out, err := cmd.StdoutPipe()
	ts.Check(err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ts.Check(cmd.Start())
	h := newGateHost(ts)
	h.answersOnly = answersOnly
	var sendMu sync.Mutex
	h.send = func(line []byte) {
		sendMu.Lock()
		defer sendMu.Unlock()
		in.Write(append(line, '\n'))
	}
	h.kill = func() { cmd.Process.Signal(syscall.SIGKILL) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			h.received(sc.Bytes())
		}
		h.end()
	}()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	h.converse(args[0])
	sendMu.Lock()
	in.Close()
	sendMu.Unlock()
	<-done
	err = cmd.Wait()
	fmt.Fprint(ts.Stdout(), h.out.String())
	fmt.Fprint(ts.Stderr(), stderr.String())
	if h.killed {
		return
	}
	if got := exitCode(ts, err); got != want {
		ts.Fatalf("%s exited %d, want %d\n%s", args[2], got, want, stderr.String())
	}
}

// gateHTTPSession is a gate session over Streamable HTTP: each message is
// POSTed, its answers read from the JSON or event-stream response; after
// initialize a GET stream receives what the server sends on its own.
func gateHTTPSession(ts *testscript.TestScript, file, url string, stream, del, answersOnly bool) {
	ctx, cancel := context.WithTimeout(context.Background(), gateWait)
	defer cancel()
	h := newGateHost(ts)
	h.answersOnly = answersOnly
	var session string
	var wg sync.WaitGroup
	post := func(line []byte) *http.Response {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(line))
		ts.Check(err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		ts.Check(err)
		return resp
	}
	read := func(resp *http.Response) {
		defer resp.Body.Close()
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			b, _ := io.ReadAll(resp.Body)
			h.received(b)
			return
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		var data []byte
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				data = append(data, strings.TrimPrefix(d, " ")...)
			} else if sc.Text() == "" && len(data) > 0 {
				h.received(data)
				data = nil
			}
		}
		if len(data) > 0 {
			h.received(data)
		}
	}
	h.send = func(line []byte) {
		resp := post(line)
		if resp.StatusCode/100 != 2 {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ts.Fatalf("POST %s: %s %s", line, resp.Status, b)
		}
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" && session == "" {
			session = id
			if stream {
				// The GET stream, for what the server sends on its own,
				// open before the session goes on.
				get, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				ts.Check(err)
				get.Header.Set("Accept", "text/event-stream")
				get.Header.Set("Mcp-Session-Id", session)
				if resp, err := http.DefaultClient.Do(get); err == nil && resp.StatusCode == http.StatusOK {
					wg.Add(1)
					go func() {
						defer wg.Done()
						read(resp)
					}()
				} else if err == nil {
					resp.Body.Close()
				}
			}
		}
		if resp.StatusCode == http.StatusAccepted {
			resp.Body.Close()
			return
		}
		read(resp)
	}
	h.converse(file)
	if session != "" && del {
		del, err := http.NewRequestWithContext(ctx, http.MethodDelete, url, nil)
		ts.Check(err)
		del.Header.Set("Mcp-Session-Id", session)
		if resp, err := http.DefaultClient.Do(del); err == nil {
			resp.Body.Close()
		}
	}
	cancel()
	wg.Wait()
	h.mu.Lock()
	fmt.Fprint(ts.Stdout(), h.out.String())
	h.mu.Unlock()
}

// gateListener is a process gate-listen started.
type gateListener struct {
	cmd     *exec.Cmd
	stderr  bytes.Buffer
	mu      sync.Mutex
	drained chan struct{}
}

// gateListeners are the gate-listen processes of each running script, by
// variable name.
var gateListeners = struct {
	sync.Mutex
	m map[*testscript.TestScript]map[string]*gateListener
}{m: map[*testscript.TestScript]map[string]*gateListener{}}

func gateListenerOf(ts *testscript.TestScript, name string) *gateListener {
	gateListeners.Lock()
	defer gateListeners.Unlock()
	l := gateListeners.m[ts][name]
	if l == nil {
		ts.Fatalf("no gate-listen %s", name)
	}
	return l
}

func cmdGateListen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: gate-listen VAR [VAR=VALUE...] -- COMMAND [ARGS...]")
	}
	name, args := args[0], args[1:]
	ready := regexp.MustCompile(`^etdi: listening on (\S+)$`)
	if len(args) > 1 && args[0] == "-ready" {
		re, err := regexp.Compile(args[1])
		ts.Check(err)
		ready, args = re, args[2:]
	}
	var extra []string
	for len(args) > 0 && args[0] != "--" {
		extra, args = append(extra, args[0]), args[1:]
	}
	if len(args) < 2 {
		ts.Fatalf("usage: gate-listen VAR [VAR=VALUE...] -- COMMAND [ARGS...]")
	}
	ctx, cancel := context.WithTimeout(context.Background(), gateWait)
	l := &gateListener{cmd: scriptCommand(ts, ctx, extra, args[1:]), drained: make(chan struct{})}
	pipe, err := l.cmd.StderrPipe()
	ts.Check(err)
	outPipe, err := l.cmd.StdoutPipe()
	ts.Check(err)
	ts.Check(l.cmd.Start())
	ts.Defer(func() {
		if l.cmd.ProcessState == nil {
			l.cmd.Process.Kill()
			l.cmd.Wait()
		}
		cancel()
	})
	url := make(chan string, 2)
	scan := func(r io.Reader, log bool) {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if log {
				l.mu.Lock()
				l.stderr.WriteString(sc.Text() + "\n")
				l.mu.Unlock()
			}
			if m := ready.FindStringSubmatch(sc.Text()); len(m) > 1 {
				select {
				case url <- m[1]:
				default:
				}
			}
		}
	}
	go scan(outPipe, false)
	go func() {
		defer close(l.drained)
		scan(pipe, true)
	}()
	select {
	case u := <-url:
		ts.Setenv(name, u)
	case <-l.drained:
		ts.Fatalf("%s ended without a listening line:\n%s", args[1], l.stderr.String())
	case <-ctx.Done():
		ts.Fatalf("no listening line within %v", gateWait)
	}
	gateListeners.Lock()
	if gateListeners.m[ts] == nil {
		gateListeners.m[ts] = map[string]*gateListener{}
		ts.Defer(func() { gateListeners.Lock(); delete(gateListeners.m, ts); gateListeners.Unlock() })
	}
	gateListeners.m[ts][name] = l
	gateListeners.Unlock()
	fmt.Fprint(ts.Stdout(), "") // not the environment scriptEnv read
}

func cmdGateChildren(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: gate-children VAR N")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	l := gateListenerOf(ts, args[0])
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", l.cmd.Process.Pid))
	if len(tasks) == 0 {
		ts.Fatalf("cannot read the children of %d from /proc", l.cmd.Process.Pid)
	}
	var pids []string
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		pids = append(pids, strings.Fields(string(b))...)
	}
	if len(pids) != want {
		ts.Fatalf("%s has children %v, want %d", args[0], pids, want)
	}
}

func cmdGateStop(ts *testscript.TestScript, neg bool, args []string) {
	want, args := exitFlag(ts, args)
	if neg || len(args) != 1 {
		ts.Fatalf("usage: gate-stop [-exit N] VAR")
	}
	l := gateListenerOf(ts, args[0])
	ts.Check(l.cmd.Process.Signal(syscall.SIGTERM))
	<-l.drained
	err := l.cmd.Wait()
	l.mu.Lock()
	log := l.stderr.String()
	l.mu.Unlock()
	fmt.Fprint(ts.Stderr(), log)
	if got := exitCode(ts, err); got != want {
		ts.Fatalf("%s exited %d, want %d\n%s", args[0], got, want, log)
	}
}

func cmdGateGrab(ts *testscript.TestScript, neg bool, args []string) {
	asJSON := len(args) > 0 && args[0] == "-json"
	if asJSON {
		args = args[1:]
	}
	if neg || len(args) != 3 {
		ts.Fatalf("usage: gate-grab [-json] VAR REGEXP FILE")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	m := re.FindStringSubmatch(ts.ReadFile(args[2]))
	if len(m) < 2 {
		ts.Fatalf("no match of %s with a group in %s", args[1], args[2])
	}
	v := m[1]
	if asJSON {
		ts.Check(json.Unmarshal([]byte(`"`+v+`"`), &v))
	}
	ts.Setenv(args[0], v)
}

func cmdGateAnswer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: gate-answer FILE ID...")
	}
	for _, id := range args[1:] {
		gateAnswer(ts, args[0], id)
	}
}

// gateAnswer prints the answer with id in file.
func gateAnswer(ts *testscript.TestScript, file, id string) {
	for _, line := range strings.Split(ts.ReadFile(file), "\n") {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
			Error  *struct {
				Code int `json:"code"`
				Data struct {
					Etdi, Kind string
				} `json:"data"`
			} `json:"error"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(line), &m) != nil || m.Method != nil || string(m.ID) != id {
			continue
		}
		w := ts.Stdout()
		if m.Error != nil {
			fmt.Fprintf(w, "error %d %s %s\n", m.Error.Code, cmp.Or(m.Error.Data.Etdi, "-"), cmp.Or(m.Error.Data.Kind, "-"))
			return
		}
		type entry struct{ Name, URI, URITemplate string }
		var r struct {
			Tools, Prompts, Resources, ResourceTemplates *[]entry
			Content                                      []struct{ Type, Text string }
		}
		ts.Check(json.Unmarshal(m.Result, &r))
		listed := false
		for _, l := range []struct {
			what    string
			entries *[]entry
		}{{"tool", r.Tools}, {"prompt", r.Prompts}, {"resource", r.Resources}, {"template", r.ResourceTemplates}} {
			if l.entries != nil {
				listed = true
				for _, e := range *l.entries {
					fmt.Fprintf(w, "%s %s\n", l.what, cmp.Or(e.URI, e.URITemplate, e.Name))
				}
			}
		}
		for _, c := range r.Content {
			if c.Type == "text" {
				listed = true
				fmt.Fprintf(w, "text %s\n", c.Text)
			}
		}
		if !listed {
			fmt.Fprintf(w, "result %s\n", m.Result)
		}
		return
	}
	ts.Fatalf("no answer with id %s in %s", id, file)
}
