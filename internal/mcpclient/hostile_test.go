package mcpclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/mcpclient/hostile"
)

// hostileStdio lists the test binary serving mode over stdio.
func hostileStdio(t *testing.T, mode string, opts Options, extraEnv ...string) (*Listing, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), hostile.Env+"="+mode)
	return Stdio(context.Background(), []string{exe}, append(env, extraEnv...), "", opts)
}

func hostileHTTP(t *testing.T, h http.Handler, opts Options, headers http.Header) (*Listing, error) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return HTTP(context.Background(), srv.URL+"/mcp", headers, opts)
}

func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
}

func TestGoodServers(t *testing.T) {
	check := func(t *testing.T, l *Listing, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if l.ServerName != "hostile" || len(l.Tools) != 2 || l.Tools[1].Name != "get_forecast" || l.Pages != 1 {
			t.Fatalf("listing %+v", l)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		l, err := hostileStdio(t, hostile.Good, Options{Timeout: 20 * time.Second})
		check(t, l, err)
	})
	t.Run("http-json", func(t *testing.T) {
		l, err := hostileHTTP(t, hostile.Handler(hostile.Good), Options{}, nil)
		check(t, l, err)
	})
	t.Run("http-sse", func(t *testing.T) {
		l, err := hostileHTTP(t, hostile.Handler(hostile.SSE), Options{}, nil)
		check(t, l, err)
	})
}

// A server that never answers, never reads and ignores SIGTERM is ended at
// --start-timeout (then killed), not waited for.
func TestStdioDeaf(t *testing.T) {
	t.Parallel() // waits for its server's timeouts; runs beside the others that wait
	_, err := hostileStdio(t, hostile.Deaf, Options{StartTimeout: time.Second, Timeout: 10 * time.Second})
	wantErr(t, err, "initialize: no answer within 1s")
}

// A server that stops reading its stdin while etdi writes a request larger
// than the pipe holds: the write gives up at --timeout.
func TestStdioStopsReading(t *testing.T) {
	t.Parallel() // waits for its server's timeouts; runs beside the others that wait
	_, err := hostileStdio(t, hostile.StopsReading, Options{Timeout: 3 * time.Second})
	wantErr(t, err, "tools/list: not done within 3s: context deadline exceeded")
}

// Floods of requests (never reading the answers) and of notifications end
// with a clear error after MaxStrayMessages.
func TestFloods(t *testing.T) {
	t.Parallel() // waits for its server's timeouts; runs beside the others that wait
	want := "more than 1000 messages that were not answers"
	for _, mode := range []string{hostile.FloodRequest, hostile.FloodNotify} {
		t.Run("stdio-"+mode, func(t *testing.T) {
			_, err := hostileStdio(t, mode, Options{Timeout: 20 * time.Second})
			wantErr(t, err, want)
		})
		t.Run("http-"+mode, func(t *testing.T) {
			_, err := hostileHTTP(t, hostile.Handler(mode), Options{Timeout: 20 * time.Second}, nil)
			wantErr(t, err, want)
		})
	}
}

// Oversized answers are cut off while they are read.
func TestTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T) error
	}{
		{"stdio-line", func(t *testing.T) error { _, err := hostileStdio(t, hostile.HugeLine, Options{}); return err }},
		{"stdio-pages", func(t *testing.T) error { _, err := hostileStdio(t, hostile.HugePages, Options{}); return err }},
		{"http-body", func(t *testing.T) error {
			_, err := hostileHTTP(t, hostile.Handler(hostile.HugeLine), Options{}, nil)
			return err
		}},
		{"http-gzip", func(t *testing.T) error {
			_, err := hostileHTTP(t, hostile.Handler(hostile.GzipBomb), Options{}, nil)
			return err
		}},
		{"http-event", func(t *testing.T) error {
			_, err := hostileHTTP(t, hostile.Handler(hostile.HugeEvent), Options{}, nil)
			return err
		}},
		{"http-pages", func(t *testing.T) error {
			_, err := hostileHTTP(t, hostile.Handler(hostile.HugePages), Options{}, nil)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run(t)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v, want ErrTooLarge", err)
			}
		})
	}
}

// countingWriter counts what a handler managed to write.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n.Add(int64(n))
	return n, err
}

// An error body is read only up to maxErrorBody and quoted clipped: the
// server cannot write more than the connection buffers hold.
func TestHugeErrorBody(t *testing.T) {
	var written atomic.Int64
	h := hostile.Handler(hostile.HugeError)
	_, err := hostileHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(countingWriter{w, &written}, r)
	}), Options{}, nil)
	wantErr(t, err, "tools/list: HTTP status 500 Internal Server Error: \"aaaa")
	if len(err.Error()) > 2*maxErrorText {
		t.Fatalf("error of %d bytes", len(err.Error()))
	}
	if n := written.Load(); n > 16<<20 {
		t.Fatalf("the client read %d bytes of an error body", n)
	}
}

func TestPageBounds(t *testing.T) {
	t.Parallel() // waits for its server's timeouts; runs beside the others that wait
	for _, tc := range []struct {
		mode string
		opts Options
		want string
	}{
		{hostile.Loop, Options{}, `page 2: nextCursor "same" repeats: the listing loops`},
		{hostile.EndlessPages, Options{MaxPages: 7}, "tools/list: more than 7 pages"},
		{hostile.ManyTools, Options{}, "tools/list: more than " + strconv.Itoa(etdi.MaxTools) + " tools"},
		// Handed page by page to a caller that keeps none, as etdi fetch.
		{hostile.ManyTools, Options{Entries: func(etdi.List, []etdi.LiveTool) error { return nil }}, "tools/list: more than " + strconv.Itoa(etdi.MaxTools) + " tools"},
		{hostile.EndlessPages, Options{MaxPages: 7, Entries: func(etdi.List, []etdi.LiveTool) error { return nil }}, "tools/list: more than 7 pages"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			_, err := hostileHTTP(t, hostile.Handler(tc.mode), tc.opts, nil)
			wantErr(t, err, tc.want)
		})
	}
	// The default bound is 200 pages.
	_, err := hostileHTTP(t, hostile.Handler(hostile.EndlessPages), Options{}, nil)
	wantErr(t, err, "tools/list: more than 200 pages")
}

// A redirect to another origin is refused, and the user's headers never
// reach it.
func TestRedirectToAnotherOrigin(t *testing.T) {
	other := &hostile.Recorder{Header: "X-Secret"}
	otherSrv := httptest.NewServer(other)
	defer otherSrv.Close()
	headers := http.Header{"X-Secret": {"t0ken"}}
	_, err := hostileHTTP(t, hostile.Redirect(otherSrv.URL+"/mcp"), Options{}, headers)
	wantErr(t, err, "refused: the tools must come from")
	if got := other.Received(); len(got) != 0 {
		t.Fatalf("the other origin received %d request(s), headers %q", len(got), got)
	}
	// A redirect on the same origin is followed, with the headers.
	same := &hostile.Recorder{Header: "X-Secret"}
	mux := http.NewServeMux()
	mux.Handle("/old", http.RedirectHandler("/mcp", http.StatusPermanentRedirect))
	mux.Handle("/mcp", same)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	if _, err := HTTP(context.Background(), srv.URL+"/old", headers, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, v := range same.Received() {
		if v != "t0ken" {
			t.Fatalf("same-origin requests got headers %q", same.Received())
		}
	}
}

// The client adds the user's headers for the named origin only, even if a
// request for another origin got through.
func TestHeadersOnlyForNamedOrigin(t *testing.T) {
	named := &hostile.Recorder{Header: "X-Secret"}
	other := &hostile.Recorder{Header: "X-Secret"}
	a, b := httptest.NewServer(named), httptest.NewServer(other)
	defer a.Close()
	defer b.Close()
	ua, _ := http.NewRequest(http.MethodGet, a.URL, nil)
	c := newHTTPClient(ua.URL, http.Header{"X-Secret": {"t0ken"}}, 5*time.Second)
	for _, u := range []string{a.URL, b.URL} {
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","method":"x"}`))
		resp, err := c.Transport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got := named.Received(); len(got) != 1 || got[0] != "t0ken" {
		t.Fatalf("named origin got %q", got)
	}
	if got := other.Received(); len(got) != 1 || got[0] != "" {
		t.Fatalf("other origin got %q", got)
	}
}

// The JSON values of a listing are bounded per tool definition and for all
// pages together (docs/live.md#live-servers): a dense listing far under the byte limit
// is refused before its parsed values outgrow memory and time, and a
// listing at the bounds is accepted.
func TestValueBounds(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want string
	}{
		{hostile.DenseArray, "tools/list: page 1: invalid JSON at byte 100055: more than 50000 JSON values in the tool definition at index 0"},
		{hostile.DenseObject, "more than 50000 JSON values in the tool definition at index 0"},
		{hostile.DeepWide, "more than 50000 JSON values in the tool definition at index 0"},
		{hostile.DenseInit, "initialize: invalid JSON at byte 2000095: more than 1000000 JSON values in the document"},
		{hostile.DensePages, "tools/list: page 6: invalid JSON at byte 91: more than 250000 JSON values in the listing (all pages together)"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			_, err := hostileHTTP(t, hostile.Handler(tc.mode), Options{}, nil)
			wantErr(t, err, tc.want)
		})
	}
	for _, mode := range []string{hostile.DenseMax, hostile.DenseMeta} {
		l, err := hostileHTTP(t, hostile.Handler(mode), Options{}, nil)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if len(l.Tools) != 5 || l.Tools[4].Name != "dense_4" {
			t.Fatalf("%s: %d tools", mode, len(l.Tools))
		}
	}
}

// With Options.Entries, each page's entries go to the caller as the page
// is read and the listing keeps none; an error of the caller ends the
// fetch.
func TestEntriesByPage(t *testing.T) {
	var got []string
	pages := 0
	opts := Options{Entries: func(list etdi.List, entries []etdi.LiveTool) error {
		pages++
		for _, e := range entries {
			got = append(got, list.Member+"/"+e.Name)
		}
		return nil
	}}
	l, err := hostileStdio(t, hostile.Good, opts)
	if err != nil || len(l.Tools) != 0 || l.Pages != pages || len(got) != 2 {
		t.Fatalf("%v: listing %+v, entries %v in %d page(s)", err, l, got, pages)
	}
	stop := errors.New("disk full")
	opts.Entries = func(etdi.List, []etdi.LiveTool) error { return stop }
	if _, err := hostileStdio(t, hostile.Good, opts); !errors.Is(err, stop) {
		t.Fatalf("error %v, want the caller's", err)
	}
}
