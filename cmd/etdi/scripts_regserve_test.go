package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// The fixtures of the scripts about etdi registry serve
// (registry_serve_*.txtar). The registry itself is the shared one of
// scripts_registry_test.go ($REGISTRY, registry-publish); etdi registry
// serve is started with gate-listen and stopped with gate-stop; bundles
// are served with release-host and named with release-attach.
//
// Commands:
//
//	regserve-get URL
//	    GETs URL and prints "status N", then for a listing or an entry
//	    one line per entry, "entry NAME VERSION VERDICT" (VERDICT: the
//	    status under _meta["dev.etdi/verdict"], "-" without one), "next
//	    CURSOR" when the listing continues, and for an error "detail
//	    TEXT".
func init() {
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
