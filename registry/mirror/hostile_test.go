package mirror_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/internal/registrytest"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/registry/mirror"
)

// hostileEntry is an entry as a hostile upstream may send it: with its
// own dev.etdi/verdict and a status.
func hostileEntry(name, version, status string) string {
	return fmt.Sprintf(`{"server":{"$schema":%q,"name":%q,"description":"x","version":%q},"_meta":{"io.modelcontextprotocol.registry/official":{"status":%q,"statusChangedAt":"2025-01-01T00:00:00Z","publishedAt":"2025-01-01T00:00:00Z","isLatest":true},%q:{"status":"approved","provider":"acme"}}}`,
		registrytest.SchemaURL, name, version, status, mirror.VerdictKey)
}

// hostileMirror serves a mirror of an upstream answering every listing
// with page, judged by j.
func hostileMirror(t *testing.T, j mirror.Judge, handler http.HandlerFunc) (*httptest.Server, func() []string) {
	t.Helper()
	up := httptest.NewServer(handler)
	t.Cleanup(up.Close)
	c, err := registry.NewClient(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	h := mirror.New(c, j)
	h.RequestTimeout = time.Minute
	var mu sync.Mutex
	var logs []string
	h.Log = func(l string) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, l)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), logs...)
	}
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestAttackHostileUpstream: what an upstream registry says is not
// trusted: a verdict it puts in an entry's _meta is replaced by the
// judge's (and the entry left out when the judge does not approve it), a
// deleted entry is never served even when the judge approves it, and an
// upstream that repeats its cursor, hands back a cursor too long to
// carry, or answers another server than asked is a 502, not a loop.
func TestAttackHostileUpstream(t *testing.T) {
	const name = "io.github.hostile/forged"
	var judged, longs atomic.Int64
	judge := func(_ context.Context, e registry.Entry) mirror.Verdict {
		judged.Add(1)
		if e.Server.Version == "2.0.0" || e.Server.Version == "3.0.0" {
			return mirror.Verdict{Approved: true, Status: "approved", Provider: "ours", CheckedAt: time.Now()}
		}
		return mirror.Verdict{Status: "unsigned", CheckedAt: time.Now()}
	}
	page := `{"servers":[` + hostileEntry(name, "1.0.0", "active") + `,` + hostileEntry(name, "2.0.0", "active") + `,` + hostileEntry(name, "3.0.0", "deleted") + `],"metadata":{"count":3}}`
	srv, logs := hostileMirror(t, judge, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v0.1/servers" && r.URL.Query().Get("search") == "loop":
			fmt.Fprint(w, `{"servers":[],"metadata":{"nextCursor":"again","count":0}}`)
		case r.URL.Path == "/v0.1/servers" && r.URL.Query().Get("search") == "long":
			// A new cursor each time: only its length gives it away.
			fmt.Fprintf(w, `{"servers":[],"metadata":{"nextCursor":"%s%d","count":0}}`, strings.Repeat("c", 5000), longs.Add(1))
		case r.URL.Path == "/v0.1/servers":
			fmt.Fprint(w, page)
		case strings.HasSuffix(r.URL.EscapedPath(), "/versions/9.9.9"):
			fmt.Fprint(w, hostileEntry("io.github.hostile/other", "9.9.9", "active"))
		default:
			http.NotFound(w, r)
		}
	})

	status, body := get(t, srv.URL+"/v0.1/servers")
	if status != 200 {
		t.Fatalf("listing: %d %s", status, body)
	}
	var p struct {
		Servers []struct {
			Server struct{ Version string }
			Meta   map[string]struct{ Status, Provider string } `json:"_meta"`
		}
	}
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Servers) != 1 || p.Servers[0].Server.Version != "2.0.0" {
		t.Fatalf("served %s", body)
	}
	if v := p.Servers[0].Meta[mirror.VerdictKey]; v.Provider != "ours" {
		t.Fatalf("the upstream's verdict was kept: %+v", v)
	}
	if n := judged.Load(); n != 2 {
		t.Fatalf("judged %d entries, want 2 (never the deleted one)", n)
	}
	for _, q := range []string{"search=loop", "search=long"} {
		if status, body := get(t, srv.URL+"/v0.1/servers?"+q); status != http.StatusBadGateway {
			t.Errorf("%s: %d %s", q, status, body)
		}
	}
	if status, body := get(t, srv.URL+"/v0.1/servers/"+strings.ReplaceAll(name, "/", "%2F")+"/versions/9.9.9"); status != http.StatusBadGateway {
		t.Errorf("another server than asked: %d %s", status, body)
	}
	// The log has one line per request, what the client chose escaped.
	get(t, srv.URL+"/v0.1/nope%0Aforged%20line")
	lines := logs()
	if len(lines) != 5 {
		t.Fatalf("%d log lines for 5 requests: %q", len(lines), lines)
	}
	last := lines[4]
	if strings.Contains(last, "\n") || !strings.Contains(last, " 404 ") {
		t.Fatalf("log line %q", last)
	}
}

// TestAttackRebinding: served on a loopback listener, the mirror answers
// only requests naming a loopback host: a page of another name resolved
// to 127.0.0.1 (DNS rebinding) gets a 403. Serve returns nil once its
// context ends.
func TestAttackRebinding(t *testing.T) {
	up, err := registry.NewClient("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	h := mirror.New(up, func(context.Context, registry.Entry) mirror.Verdict { return mirror.Verdict{} })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.Serve(ctx, ln) }()
	for _, c := range []struct {
		host   string
		status int
	}{
		{"evil.example", 403},
		{"evil.example:" + fmt.Sprint(ln.Addr().(*net.TCPAddr).Port), 403},
		{"127.0.0.1.evil.example", 403},
		{"localhost", 404},
		{ln.Addr().String(), 404},
		{"[::1]:80", 404},
	} {
		req, err := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/nothing", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = c.host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("Host %s: %d, want %d", c.host, resp.StatusCode, c.status)
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
