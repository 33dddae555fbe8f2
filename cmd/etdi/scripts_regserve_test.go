package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/etdi-dev/etdi/registry"
	"github.com/rogpeppe/go-internal/testscript"
)

// The fixtures of the scripts about etdi registry serve
// (registry_serve_*.txtar). The registry itself is the shared one of
// scripts_registry_test.go ($REGISTRY, registry-publish); etdi registry
// serve is started with gate-listen and stopped with gate-stop.
//
// Commands:
//
//	regserve-host VAR DIR
//	    serves the files of DIR on 127.0.0.1 (as a release page serves a
//	    bundle a server.json names) until the script ends; sets VAR to its
//	    URL, http://127.0.0.1:PORT.
//	regserve-attach SERVERJSON BUNDLE URL OUT
//	    writes to OUT the server.json SERVERJSON naming the bundle at URL
//	    with the digest of the file BUNDLE (dev.etdi, as etdi sign
//	    --server-json writes it).
//	regserve-get URL
//	    GETs URL and prints "status N", then for a listing or an entry
//	    one line per entry, "entry NAME VERSION VERDICT" (VERDICT: the
//	    status under _meta["dev.etdi/verdict"], "-" without one), "next
//	    CURSOR" when the listing continues, and for an error "detail
//	    TEXT".
func init() {
	scriptCmds["regserve-host"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: regserve-host VAR DIR")
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		srv := &http.Server{Handler: http.FileServer(http.Dir(ts.MkAbs(args[1]))), ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		ts.Defer(func() { srv.Close() })
		ts.Setenv(args[0], "http://"+ln.Addr().String())
	}
	scriptCmds["regserve-attach"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 4 {
			ts.Fatalf("usage: regserve-attach SERVERJSON BUNDLE URL OUT")
		}
		doc, err := os.ReadFile(ts.MkAbs(args[0]))
		ts.Check(err)
		bundle, err := os.ReadFile(ts.MkAbs(args[1]))
		ts.Check(err)
		out, err := registry.SetEtdiMeta(doc, registry.EtdiMeta{Bundle: args[2], Digest: registry.Digest(bundle)})
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs(args[3]), out, 0o644))
	}
	scriptCmds["regserve-get"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: regserve-get URL")
		}
		c := &http.Client{Timeout: 2 * time.Minute}
		resp, err := c.Get(args[0])
		ts.Check(err)
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		ts.Check(err)
		fmt.Fprintf(ts.Stdout(), "status %d\n", resp.StatusCode)
		var v struct {
			Servers  []json.RawMessage `json:"servers"`
			Server   json.RawMessage   `json:"server"`
			Meta     json.RawMessage   `json:"_meta"`
			Metadata struct {
				NextCursor string `json:"nextCursor"`
			} `json:"metadata"`
			Detail string `json:"detail"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			ts.Fatalf("answer is not JSON: %v\n%s", err, body)
		}
		entries := v.Servers
		if v.Server != nil {
			entries = []json.RawMessage{body}
		}
		for _, raw := range entries {
			var e struct {
				Server struct{ Name, Version string } `json:"server"`
				Meta   map[string]struct {
					Status string `json:"status"`
				} `json:"_meta"`
			}
			ts.Check(json.Unmarshal(raw, &e))
			verdict := "-"
			if m, ok := e.Meta["dev.etdi/verdict"]; ok {
				verdict = m.Status
			}
			fmt.Fprintf(ts.Stdout(), "entry %s %s %s\n", e.Server.Name, e.Server.Version, verdict)
		}
		if v.Metadata.NextCursor != "" {
			fmt.Fprintf(ts.Stdout(), "next %s\n", v.Metadata.NextCursor)
		}
		if v.Detail != "" {
			fmt.Fprintf(ts.Stdout(), "detail %s\n", strings.ReplaceAll(v.Detail, "\n", `\n`))
		}
	}
}
