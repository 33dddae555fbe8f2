package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/pin"
	"github.com/rogpeppe/go-internal/testscript"
)

// The fixtures of the scripts about hosts: wrapping and unwrapping host
// configurations, reading host entries, etdi init, the environment a
// server is given and the processes it leaves (wrap_, unwrap_, host_,
// init_, env_, orphans_ and firsthour_ scripts).
//
// Commands:
//
//	hosts-etdi VAR             sets VAR to the absolute path of the etdi the
//	                           scripts run, as wrap writes it into entries
//	hosts-which VAR DIRVAR PROG
//	                           sets VAR to the path of PROG on PATH and DIRVAR
//	                           to its directory; fails if PROG is not on PATH
//	hosts-lines MAX            the last command printed at most MAX lines,
//	                           stdout and stderr together
//	hosts-json [-file F] PATH WANT
//	                           the JSON of the last command's stdout (or of
//	                           file F) has WANT, compact JSON, at PATH: member
//	                           names and array indexes separated by dots, # for
//	                           the length of an array or object, * for every
//	                           element of an array (a list of the rest of the
//	                           path's values); ! hosts-json: another value
//	hosts-expand FILE...       replaces each $VAR in each FILE with the
//	                           script's variable, keeping the file's mode; a
//	                           host's placeholders (${VAR}, ${env:VAR}) and
//	                           a shell's $@ stay as written
//	hosts-crlf FILE            rewrites FILE with CRLF line ends, as a
//	                           Windows editor leaves them
//	hosts-hostedit FILE        rewrites the cursor-style FILE (after dropping
//	                           its // comment lines) as a host does: adds the
//	                           server "added" (uvx added-server), the member
//	                           "theme": "dark", "--verbose" to the arguments of
//	                           server "a", and writes it back indented by two
//	                           spaces, LF, keys sorted
//	hosts-session [-clean DIR] METHOD... -- COMMAND [ARGS...]
//	hosts-session [-clean DIR] -entry FILE NAME METHOD...
//	                           speaks to COMMAND (or the command and arguments
//	                           of FILE's mcpServers entry NAME) as a host does
//	                           on stdio: initialize (then notifications/initialized) and
//	                           each further METHOD with {} as parameters, each
//	                           awaiting its answer, which goes to stdout; then
//	                           it closes COMMAND's input and COMMAND must exit
//	                           0. COMMAND runs in the script's directory with
//	                           only HOME, XDG_CONFIG_HOME and PATH of the script;
//	                           -clean DIR: in DIR, with HOME=DIR instead
//	hosts-approvals [-server S] set VAR | want N
//	                           counts the approve and reapprove records in the
//	                           last stdout (etdi pin history --json), of server
//	                           S only with -server: set stores the count in VAR;
//	                           want checks it is N, and ! ... want that it is
//	                           not
//	hosts-keyid VAR PUBFILE N  sets VAR to the first N hex digits (with the
//	                           sha256: prefix) of the key id of PUBFILE
//	hosts-httpecho VAR         serves on 127.0.0.1, until the script ends, an
//	                           MCP server over Streamable HTTP with one tool
//	                           echo_<first path segment> (httpEchoHandler); sets VAR to its URL
//	hosts-gone PIDFILE         the process whose pid PIDFILE holds ends (a
//	                           zombie counts as ended) within a generous bound;
//	                           one still running then is killed and reported
//	hosts-alive PIDFILE        the process whose pid PIDFILE holds runs and is
//	                           no zombie; it is killed when the script ends
func init() {
	scriptCmds["hosts-etdi"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: hosts-etdi VAR")
		}
		path := ""
		for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
			if fi, err := os.Stat(filepath.Join(dir, "etdi")); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				path = filepath.Join(dir, "etdi")
				break
			}
		}
		if path == "" {
			ts.Fatalf("no etdi on PATH")
		}
		real, err := filepath.EvalSymlinks(path)
		ts.Check(err)
		ts.Setenv(args[0], real)
	}
	scriptCmds["hosts-json"] = hostsJSON
	scriptCmds["hosts-lines"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: hosts-lines MAX")
		}
		max, err := strconv.Atoi(args[0])
		ts.Check(err)
		out := strings.TrimSpace(ts.ReadFile("stdout") + ts.ReadFile("stderr"))
		if n := len(strings.Split(out, "\n")); n > max {
			ts.Fatalf("%d lines printed, want at most %d", n, max)
		}
	}
	scriptCmds["hosts-which"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 3 {
			ts.Fatalf("usage: hosts-which VAR DIRVAR PROG")
		}
		for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
			path := filepath.Join(dir, args[2])
			if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				ts.Setenv(args[0], path)
				ts.Setenv(args[1], dir)
				return
			}
		}
		ts.Fatalf("no %s on PATH", args[2])
	}
	scriptCmds["hosts-expand"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) == 0 {
			ts.Fatalf("usage: hosts-expand FILE...")
		}
		for _, f := range args {
			path := ts.MkAbs(f)
			fi, err := os.Stat(path)
			ts.Check(err)
			text := hostsVar.ReplaceAllStringFunc(ts.ReadFile(f), func(v string) string {
				return ts.Getenv(v[1:])
			})
			ts.Check(os.WriteFile(path, []byte(text), fi.Mode().Perm()))
		}
	}
	scriptCmds["hosts-crlf"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: hosts-crlf FILE")
		}
		path := ts.MkAbs(args[0])
		fi, err := os.Stat(path)
		ts.Check(err)
		text := strings.ReplaceAll(ts.ReadFile(args[0]), "\n", "\r\n")
		ts.Check(os.WriteFile(path, []byte(text), fi.Mode().Perm()))
	}
	scriptCmds["hosts-hostedit"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: hosts-hostedit FILE")
		}
		var lines []string
		for _, l := range strings.Split(ts.ReadFile(args[0]), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "//") {
				lines = append(lines, l)
			}
		}
		var doc map[string]any
		ts.Check(json.Unmarshal([]byte(strings.Join(lines, "\n")), &doc))
		servers := doc["mcpServers"].(map[string]any)
		servers["added"] = map[string]any{"command": "uvx", "args": []any{"added-server"}}
		doc["theme"] = "dark"
		a := servers["a"].(map[string]any)
		a["args"] = append(a["args"].([]any), "--verbose")
		out, err := json.MarshalIndent(doc, "", "  ")
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs(args[0]), append(out, '\n'), 0o600))
	}
	scriptCmds["hosts-session"] = hostsSession
	scriptCmds["hosts-approvals"] = hostsApprovals
	scriptCmds["hosts-keyid"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 3 {
			ts.Fatalf("usage: hosts-keyid VAR PUBFILE N")
		}
		k, err := keys.ParsePublicKey([]byte(ts.ReadFile(args[1])))
		ts.Check(err)
		id, err := keys.ID(k)
		ts.Check(err)
		n, err := strconv.Atoi(args[2])
		ts.Check(err)
		ts.Setenv(args[0], id[:len("sha256:")+n])
	}
	scriptCmds["hosts-httpecho"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: hosts-httpecho VAR")
		}
		srv := httptest.NewServer(httpEchoHandler())
		ts.Defer(srv.Close)
		ts.Setenv(args[0], srv.URL)
	}
	scriptCmds["hosts-gone"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: hosts-gone PIDFILE")
		}
		pid := hostsPid(ts, args[0])
		deadline := time.Now().Add(10 * time.Second)
		for hostsAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if hostsAlive(pid) {
			hostsKill(pid)
			ts.Fatalf("process %d outlived etdi", pid)
		}
	}
	scriptCmds["hosts-alive"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: hosts-alive PIDFILE")
		}
		pid := hostsPid(ts, args[0])
		ts.Defer(func() { hostsKill(pid) })
		if !hostsAlive(pid) {
			ts.Fatalf("process %d has ended", pid)
		}
	}
}

// hostsVar is a variable hosts-expand replaces: $NAME, not a host's
// ${NAME} nor a shell's $@.
var hostsVar = regexp.MustCompile(`\$[A-Za-z_][A-Za-z0-9_]*`)

// hostsPid reads the pid a file holds.
func hostsPid(ts *testscript.TestScript, file string) int {
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(file)))
	if err != nil || pid <= 0 {
		ts.Fatalf("%s holds no pid", file)
	}
	return pid
}

// hostsKill kills pid.
func hostsKill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

// hostsAlive says whether pid runs and is no zombie.
func hostsAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		p, err := os.FindProcess(pid)
		return err == nil && p.Signal(syscall.Signal(0)) == nil
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

func hostsJSON(ts *testscript.TestScript, neg bool, args []string) {
	src := "stdout"
	if len(args) > 0 && args[0] == "-file" {
		if len(args) < 2 {
			ts.Fatalf("usage: hosts-json [-file F] PATH WANT")
		}
		src, args = args[1], args[2:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: hosts-json [-file F] PATH WANT")
	}
	var doc any
	if err := json.Unmarshal([]byte(ts.ReadFile(src)), &doc); err != nil {
		ts.Fatalf("%s is not JSON: %v", src, err)
	}
	var path []string
	if args[0] != "" && args[0] != "." {
		path = strings.Split(args[0], ".")
	}
	v, err := hostsJSONAt(doc, path)
	if err != nil {
		ts.Fatalf("%s: %s: %v", src, args[0], err)
	}
	got, err := json.Marshal(v)
	ts.Check(err)
	var want any
	if err := json.Unmarshal([]byte(args[1]), &want); err != nil {
		ts.Fatalf("want %s: not JSON: %v", args[1], err)
	}
	wantJSON, _ := json.Marshal(want)
	if (string(got) == string(wantJSON)) == neg {
		ts.Fatalf("%s at %s is %s, want %s%s", src, args[0], got, map[bool]string{true: "not "}[neg], wantJSON)
	}
}

// hostsJSONAt is the value at path in v (see hosts-json).
func hostsJSONAt(v any, path []string) (any, error) {
	if len(path) == 0 {
		return v, nil
	}
	seg, rest := path[0], path[1:]
	switch x := v.(type) {
	case map[string]any:
		if seg == "#" && len(rest) == 0 {
			return len(x), nil
		}
		m, ok := x[seg]
		if !ok {
			return nil, fmt.Errorf("no member %q", seg)
		}
		return hostsJSONAt(m, rest)
	case []any:
		switch seg {
		case "#":
			if len(rest) != 0 {
				return nil, fmt.Errorf("# is the end of a path")
			}
			return len(x), nil
		case "*":
			out := []any{}
			for _, e := range x {
				r, err := hostsJSONAt(e, rest)
				if err != nil {
					return nil, err
				}
				out = append(out, r)
			}
			return out, nil
		}
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(x) {
			return nil, fmt.Errorf("no element %q of %d", seg, len(x))
		}
		return hostsJSONAt(x[i], rest)
	}
	return nil, fmt.Errorf("%q of a %T", seg, v)
}

func hostsSession(ts *testscript.TestScript, neg bool, args []string) {
	usage := "usage: hosts-session [-clean DIR] {METHOD... -- COMMAND [ARGS...] | -entry FILE NAME METHOD...}"
	if neg {
		ts.Fatalf("%s", usage)
	}
	clean := ""
	if len(args) > 1 && args[0] == "-clean" {
		clean, args = ts.MkAbs(args[1]), args[2:]
	}
	var methods, command []string
	if len(args) > 2 && args[0] == "-entry" {
		var file struct {
			MCPServers map[string]struct {
				Command string   `json:"command"`
				Args    []string `json:"args"`
			} `json:"mcpServers"`
		}
		ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[1])), &file))
		entry, ok := file.MCPServers[args[2]]
		if !ok || entry.Command == "" {
			ts.Fatalf("%s has no command entry %q", args[1], args[2])
		}
		methods, command = args[3:], append([]string{entry.Command}, entry.Args...)
	} else {
		i := 0
		for i < len(args) && args[i] != "--" {
			i++
		}
		if i+1 >= len(args) {
			ts.Fatalf("%s", usage)
		}
		methods, command = args[:i], args[i+1:]
	}
	if len(methods) == 0 || methods[0] != "initialize" {
		ts.Fatalf("%s", usage)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	if clean != "" {
		ts.Check(os.MkdirAll(clean, 0o755))
		cmd.Dir = clean
		cmd.Env = testEnv("HOME="+clean, "XDG_CONFIG_HOME="+filepath.Join(clean, ".config"), "PATH="+ts.Getenv("PATH"))
	} else {
		cmd.Dir = ts.MkAbs(".")
		cmd.Env = testEnv("HOME="+ts.Getenv("HOME"), "XDG_CONFIG_HOME="+ts.Getenv("XDG_CONFIG_HOME"), "PATH="+ts.Getenv("PATH"))
	}
	// A process the server left behind may hold a pipe: do not wait for
	// it long after the command exited.
	cmd.WaitDelay = 10 * time.Second
	in, err := cmd.StdinPipe()
	ts.Check(err)
	out, err := cmd.StdoutPipe()
	ts.Check(err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ts.Check(cmd.Start())
	lines := make(chan []byte, 64)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			lines <- bytes.Clone(sc.Bytes())
		}
		close(lines)
	}()
	w := ts.Stdout()
	for n, method := range methods {
		params := `{}`
		if method == "initialize" {
			params = `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw-host","version":"1"}}`
		}
		fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", n+1, method, params)
		for answered := false; !answered; {
			select {
			case line, ok := <-lines:
				if !ok {
					cmd.Wait()
					ts.Fatalf("%s: %s ended before answering\n%s", method, command[0], stderr.Bytes())
				}
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method *string         `json:"method"`
				}
				if json.Unmarshal(line, &m) == nil && m.Method == nil && string(m.ID) == strconv.Itoa(n+1) {
					fmt.Fprintf(w, "%s\n", line)
					answered = true
				}
			case <-ctx.Done():
				cmd.Process.Kill()
				cmd.Wait()
				ts.Fatalf("%s: no answer\n%s", method, stderr.Bytes())
			}
		}
		if method == "initialize" {
			fmt.Fprint(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
		}
	}
	in.Close()
	go io.Copy(io.Discard, out)
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		ts.Fatalf("%s: %v\n%s", command[0], err, stderr.Bytes())
	}
}

func hostsApprovals(ts *testscript.TestScript, neg bool, args []string) {
	usage := "usage: hosts-approvals [-server S] set VAR | want N"
	server := ""
	if len(args) > 1 && args[0] == "-server" {
		server, args = args[1], args[2:]
	}
	if len(args) != 2 || neg && args[0] != "want" {
		ts.Fatalf("%s", usage)
	}
	var recs []pin.Record
	if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &recs); err != nil {
		ts.Fatalf("pin history: %v", err)
	}
	n := 0
	for _, rec := range recs {
		if (server == "" || rec.Server == server) && (rec.Type == pin.RecordApprove || rec.Type == pin.RecordReapprove) {
			n++
		}
	}
	switch args[0] {
	case "set":
		ts.Setenv(args[1], strconv.Itoa(n))
	case "want":
		want, err := strconv.Atoi(args[1])
		if err != nil {
			ts.Fatalf("want %q: not a number", args[1])
		}
		if (n == want) == neg {
			ts.Fatalf("%d approvals in the history, want %s%d", n, map[bool]string{true: "not "}[neg], want)
		}
	default:
		ts.Fatalf("%s", usage)
	}
}
