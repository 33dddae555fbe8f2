package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"
)

// The fixtures of the scripts about servers: what a server is configured
// with, what it serves and what serves it, and the provider's guards.
// Each server a command starts listens on 127.0.0.1 and is closed when the
// script ends.
//
// Commands:
//
//	servers-http VAR              starts a Streamable HTTP MCP server of one tool,
//	                              named echo_<first path segment>; requests to
//	                              /fail... are answered 401 with the request's URL
//	                              and headers in the body, as a careless server
//	                              might. Sets VAR to its URL (http://127.0.0.1:N)
//	                              and VAR_HOST to its host (127.0.0.1:N)
//	servers-copyhttp VAR          starts a Streamable HTTP MCP server of one tool,
//	                              echo_http, that copies the X-Api-Key header it is
//	                              sent into the tool's description under /desc... and
//	                              the URL's token query parameter into its
//	                              instructions under /instr...; sets VAR to its URL
//	servers-releases VAR BUNDLE   starts an HTTP server of previous releases:
//	                              /v1.etdi.json serves the file BUNDLE, /moved
//	                              redirects there, /elsewhere redirects to plain http
//	                              on another host, /huge announces one byte more
//	                              than a manifest may have, /endless sends more than
//	                              that; sets VAR to its URL
//	servers-subst IN OUT          writes IN to OUT (mode 0600) with $VAR and ${VAR}
//	                              replaced by the script's variables; one the script
//	                              does not set, or sets empty ("$@" of a shell
//	                              script), is left as written
//	servers-json FILE KEY...      prints the JSON values found in FILE by following
//	                              the keys (* stands for every element of an array),
//	                              one a line: a string as it is, anything else as
//	                              compact JSON with members sorted; a last key
//	                              KEY1,KEY2,... prints those members of each object
//	                              found, as JSON on one line ("" for one missing)
//	servers-noleak SECRETS [FILE...]
//	                              fails if a line of the file SECRETS is in the
//	                              standard output or error of the last command, or
//	                              in one of the FILEs
//	servers-jsondel IN KEY OUT    writes the JSON object IN without its member KEY
//	                              to OUT; fails if IN has no member KEY
//	servers-tamper BUNDLE OLD NEW OUT
//	                              writes BUNDLE to OUT with the first OLD in its
//	                              statement replaced by NEW, its signature unchanged
//	servers-host TRANSCRIPT ELICITATION STEPS [--] CMD ARGS...
//	                              runs the scripted MCP host (host-client.mjs) with the
//	                              steps in the file STEPS against CMD ARGS, declaring
//	                              elicitation as ELICITATION (accept, decline, cancel,
//	                              ignore, none); fails unless the host ran to its end.
//	                              Writes the transcript to TRANSCRIPT (without the
//	                              steps' start times, whose digits could match by
//	                              chance), the server's stderr to stderr and to stdout
//	                              one line a step: "listed NAME..." for a listing,
//	                              "ok" for a result, "KIND[POLICIES] ANSWER" for a
//	                              call the gate refused (ANSWER: the person's answer
//	                              to a question, if any), "error CODE MESSAGE" for
//	                              another error
//	servers-sameresults GATED DIRECT
//	                              fails unless every step of the transcript GATED that
//	                              got a result got the very result of the same step in
//	                              the transcript DIRECT: what reached the server is
//	                              what the host sent
//	servers-withdrawn TRANSCRIPT  fails unless the host of TRANSCRIPT was asked a
//	                              question (elicitation) and told of each, with a
//	                              notifications/cancelled naming it, that it is
//	                              withdrawn
//	servers-lockbump FILE PKG VERSION OLDVAR
//	                              records in the npm lockfile FILE a new VERSION and
//	                              integrity of package PKG, and sets OLDVAR to the
//	                              version it recorded before
func init() {
	scriptCmds["servers-http"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: servers-http VAR")
		}
		srv := httptest.NewServer(httpEchoHandler())
		ts.Defer(srv.Close)
		ts.Setenv(args[0], srv.URL)
		ts.Setenv(args[0]+"_HOST", strings.TrimPrefix(srv.URL, "http://"))
	}
	scriptCmds["servers-copyhttp"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: servers-copyhttp VAR")
		}
		srv := httptest.NewServer(copyingHandler())
		ts.Defer(srv.Close)
		ts.Setenv(args[0], srv.URL)
	}
	scriptCmds["servers-releases"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: servers-releases VAR BUNDLE")
		}
		srv := httptest.NewServer(releasesHandler([]byte(ts.ReadFile(args[1]))))
		ts.Defer(srv.Close)
		ts.Setenv(args[0], srv.URL)
	}
	scriptCmds["servers-subst"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: servers-subst IN OUT")
		}
		out := os.Expand(ts.ReadFile(args[0]), func(name string) string {
			if v := ts.Getenv(name); v != "" {
				return v
			}
			return "$" + name
		})
		ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(out), 0o600))
	}
	scriptCmds["servers-json"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) < 2 {
			ts.Fatalf("usage: servers-json FILE KEY...")
		}
		v := decodeJSON(ts, args[0])
		ts.Stdout() // empty when nothing is found
		keys := args[1:]
		if last := keys[len(keys)-1]; strings.Contains(last, ",") {
			for _, found := range jsonFind(v, keys[:len(keys)-1]) {
				obj, _ := found.(map[string]any)
				var fields []string
				for _, k := range strings.Split(last, ",") {
					b := []byte(`""`)
					if m, ok := obj[k]; ok {
						var err error
						b, err = json.Marshal(m)
						ts.Check(err)
					}
					fields = append(fields, string(b))
				}
				fmt.Fprintf(ts.Stdout(), "%s\n", strings.Join(fields, " "))
			}
			return
		}
		for _, found := range jsonFind(v, keys) {
			if s, ok := found.(string); ok {
				fmt.Fprintf(ts.Stdout(), "%s\n", s)
				continue
			}
			b, err := json.Marshal(found)
			ts.Check(err)
			fmt.Fprintf(ts.Stdout(), "%s\n", b)
		}
	}
	scriptCmds["servers-noleak"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) < 1 {
			ts.Fatalf("usage: servers-noleak SECRETS [FILE...]")
		}
		var secrets []string
		for _, line := range strings.Split(ts.ReadFile(args[0]), "\n") {
			if line != "" {
				secrets = append(secrets, line)
			}
		}
		if len(secrets) == 0 {
			ts.Fatalf("%s lists no secret", args[0])
		}
		files := append([]string{"stdout", "stderr"}, args[1:]...)
		for _, f := range files {
			text := ts.ReadFile(f)
			for _, secret := range secrets {
				if strings.Contains(text, secret) {
					ts.Fatalf("%s shows the secret %q", f, secret)
				}
			}
		}
	}
	scriptCmds["servers-jsondel"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 3 {
			ts.Fatalf("usage: servers-jsondel IN KEY OUT")
		}
		m, ok := decodeJSON(ts, args[0]).(map[string]any)
		if !ok || m[args[1]] == nil {
			ts.Fatalf("%s has no member %q", args[0], args[1])
		}
		delete(m, args[1])
		b, err := json.Marshal(m)
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs(args[2]), b, 0o644))
	}
	scriptCmds["servers-tamper"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 4 {
			ts.Fatalf("usage: servers-tamper BUNDLE OLD NEW OUT")
		}
		b, err := etdi.ParseBundle([]byte(ts.ReadFile(args[0])))
		ts.Check(err)
		payload := strings.Replace(string(b.Envelope.Payload), args[1], args[2], 1)
		if payload == string(b.Envelope.Payload) {
			ts.Fatalf("%s: the statement has no %q", args[0], args[1])
		}
		b.Envelope.Payload = []byte(payload)
		ts.Check(os.WriteFile(ts.MkAbs(args[3]), b.Marshal(), 0o644))
	}
	scriptCmds["servers-host"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) < 4 {
			ts.Fatalf("usage: servers-host TRANSCRIPT ELICITATION STEPS [--] CMD ARGS...")
		}
		cmd := args[3:]
		if cmd[0] == "--" {
			cmd = cmd[1:]
		}
		hostArgs := append([]string{hostJS(), "--script", ts.MkAbs(args[2]), "--timeout-ms", "40000", "--elicitation", args[1], "--"}, cmd...)
		if err := ts.Exec("node", hostArgs...); err != nil {
			ts.Fatalf("host: %v", err)
		}
		out := []byte(ts.ReadFile("stdout"))
		var tr transcript
		if err := json.Unmarshal(out, &tr); err != nil {
			ts.Fatalf("host transcript: %v\n%s", err, out)
		}
		ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(stepTimes.ReplaceAllString(string(out), "")), 0o644))
		fmt.Fprint(ts.Stderr(), tr.Stderr)
		if tr.Exit != "ok" {
			ts.Fatalf("host: %s", tr.Exit)
		}
		for _, st := range tr.Steps {
			fmt.Fprintln(ts.Stdout(), stepOutcome(ts, st))
		}
	}
	scriptCmds["servers-sameresults"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: servers-sameresults GATED DIRECT")
		}
		var gated, direct transcript
		ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &gated))
		ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[1])), &direct))
		for i, s := range gated.Steps {
			if s.Error != nil {
				continue
			}
			if i >= len(direct.Steps) || string(s.Result) != string(direct.Steps[i].Result) {
				ts.Fatalf("step %d through the gate: %s\nwithout: %s", i, s.Result, direct.Steps[min(i, len(direct.Steps)-1)].Result)
			}
		}
	}
	scriptCmds["servers-withdrawn"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: servers-withdrawn TRANSCRIPT")
		}
		var tr transcript
		ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &tr))
		if len(tr.Elicitations) == 0 {
			ts.Fatalf("the host was asked nothing")
		}
		for _, e := range tr.Elicitations {
			cancelled := false
			for _, n := range tr.Notifications {
				if n.Method == "notifications/cancelled" && strings.Contains(string(n.Params), string(e.ID)) {
					cancelled = true
				}
			}
			if !cancelled {
				ts.Fatalf("the host was not told question %s was withdrawn", e.ID)
			}
		}
	}
	scriptCmds["servers-lockbump"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 4 {
			ts.Fatalf("usage: servers-lockbump FILE PKG VERSION OLDVAR")
		}
		lock, _ := decodeJSON(ts, args[0]).(map[string]any)
		pkgs, _ := lock["packages"].(map[string]any)
		entry, _ := pkgs["node_modules/"+args[1]].(map[string]any)
		old, _ := entry["version"].(string)
		if old == "" {
			ts.Fatalf("%s records no version of %s", args[0], args[1])
		}
		entry["version"], entry["integrity"] = args[2], "sha512-"+strings.Repeat("A", 86)+"=="
		b, err := json.MarshalIndent(lock, "", "  ")
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs(args[0]), b, 0o644))
		ts.Setenv(args[3], old)
	}
}

// stepOutcome says what became of a step of a host's script.
func stepOutcome(ts *testscript.TestScript, s hostStep) string {
	if len(s.Pages) > 0 {
		var names []string
		for _, p := range s.Pages {
			var page struct{ Tools []struct{ Name string } }
			ts.Check(json.Unmarshal(p, &page))
			for _, t := range page.Tools {
				names = append(names, t.Name)
			}
		}
		return strings.TrimSpace("listed " + strings.Join(names, " "))
	}
	if s.Error == nil {
		return "ok"
	}
	if s.Error.Code != -32090 {
		return fmt.Sprintf("error %d %s", s.Error.Code, s.Error.Message)
	}
	var d struct {
		Etdi, Kind, Answer string
		Policies           []string
	}
	if err := json.Unmarshal(s.Error.Data, &d); err != nil || d.Etdi != "blocked" {
		ts.Fatalf("step %d: error data %s", s.Step, s.Error.Data)
	}
	out := d.Kind + "[" + strings.Join(d.Policies, ",") + "]"
	if d.Answer != "" {
		out += " " + d.Answer
	}
	return out
}

// decodeJSON reads the JSON document in a script's file (or stdout,
// stderr), numbers kept as written.
func decodeJSON(ts *testscript.TestScript, file string) any {
	d := json.NewDecoder(strings.NewReader(ts.ReadFile(file)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		ts.Fatalf("%s: %v", file, err)
	}
	return v
}

// jsonFind follows keys from v; "*" stands for every element of an array.
func jsonFind(v any, keys []string) []any {
	if len(keys) == 0 {
		return []any{v}
	}
	var out []any
	switch x := v.(type) {
	case []any:
		if keys[0] == "*" {
			for _, e := range x {
				out = append(out, jsonFind(e, keys[1:])...)
			}
		}
	case map[string]any:
		if e, ok := x[keys[0]]; ok {
			out = jsonFind(e, keys[1:])
		}
	}
	return out
}

// copyingHandler is a Streamable HTTP MCP server that shows the model what
// it was sent: under /desc the X-Api-Key header in its tool's
// description, under /instr the token query parameter in its
// instructions.
func copyingHandler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		var opts *mcp.ServerOptions
		if strings.HasPrefix(r.URL.Path, "/instr") {
			opts = &mcp.ServerOptions{Instructions: "Your token is " + r.URL.Query().Get("token")}
		}
		server := mcp.NewServer(&mcp.Implementation{Name: "copy", Version: "1.0.0"}, opts)
		desc := "Echo the text back."
		if strings.HasPrefix(r.URL.Path, "/desc") {
			desc += " Key: " + r.Header.Get("X-Api-Key")
		}
		mcp.AddTool(server, &mcp.Tool{Name: "echo_http", Description: desc},
			func(ctx context.Context, req *mcp.CallToolRequest, args echoArgs) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
		return server
	}, &mcp.StreamableHTTPOptions{JSONResponse: true})
}

// releasesHandler serves a previous release, v1, and the ways fetching
// one goes wrong.
func releasesHandler(v1 []byte) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1.etdi.json", func(w http.ResponseWriter, r *http.Request) { w.Write(v1) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/v1.etdi.json", http.StatusFound)
	})
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://198.51.100.7/v1.etdi.json", http.StatusFound)
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(etdi.MaxManifestSize+1))
	})
	mux.HandleFunc("/endless", func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 1<<20)
		for i := 0; i <= etdi.MaxManifestSize>>20; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	return mux
}
