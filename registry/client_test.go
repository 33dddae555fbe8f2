package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A registry is hostile: these servers answer what a broken or malicious
// one could.

func entryJSON(name, version string) string {
	return fmt.Sprintf(`{"server":{"name":%q,"version":%q,"description":"d"},"_meta":{"io.modelcontextprotocol.registry/official":{"status":"active","isLatest":true,"publishedAt":"2026-01-01T00:00:00Z"}}}`, name, version)
}

func TestClientGetChecksWhatItAskedFor(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.EscapedPath())
		switch {
		case strings.Contains(r.URL.EscapedPath(), "io.github.acme%2Fweather/versions/1.0.0"):
			fmt.Fprint(w, entryJSON("io.github.acme/weather", "1.0.0"))
		case strings.Contains(r.URL.EscapedPath(), "io.github.acme%2Fother"):
			fmt.Fprint(w, entryJSON("io.github.evil/other", "1.0.0")) // another server than asked
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Get(context.Background(), "io.github.acme/weather", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if e.Server.Name != "io.github.acme/weather" || e.Official.Status != StatusActive || !e.Official.IsLatest {
		t.Fatalf("entry %+v", e)
	}
	if paths[0] != "/v0.1/servers/io.github.acme%2Fweather/versions/1.0.0" {
		t.Errorf("asked %s", paths[0])
	}
	if _, err := c.Get(context.Background(), "io.github.acme/other", ""); err == nil || !strings.Contains(err.Error(), "answered io.github.evil/other") {
		t.Errorf("another server's entry accepted: %v", err)
	}
	if _, err := c.Get(context.Background(), "io.github.acme/missing", "1.0.0"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
	if _, err := c.Get(context.Background(), "../../etc", "1"); err == nil {
		t.Error("a name that is not a registry name was requested")
	}
}

func TestClientWalkFollowsCursorsAndStopsLoops(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("cursor") {
		case "":
			fmt.Fprintf(w, `{"servers":[%s,%s],"metadata":{"nextCursor":"p2","count":2}}`, entryJSON("io.github.a/one", "1"), entryJSON("io.github.a/two", "1"))
		case "p2":
			fmt.Fprintf(w, `{"servers":[%s],"metadata":{"nextCursor":"p3","count":1}}`, entryJSON("io.github.a/three", "1"))
		case "p3":
			if r.URL.Query().Get("updated_since") == "" {
				fmt.Fprintf(w, `{"servers":[],"metadata":{"count":0}}`)
				return
			}
			fmt.Fprintf(w, `{"servers":[],"metadata":{"nextCursor":"p2","count":0}}`) // back to p2: a loop
		}
	}))
	defer srv.Close()
	c, _ := NewClient(srv.URL)
	var names []string
	err := c.Walk(context.Background(), ListOptions{Limit: 2}, func(e Entry) error {
		names = append(names, e.Server.Name)
		return nil
	})
	if err != nil || strings.Join(names, " ") != "io.github.a/one io.github.a/two io.github.a/three" {
		t.Fatalf("walked %v, %v", names, err)
	}
	o := ListOptions{}
	o.UpdatedSince, _ = parseTime("2026-01-01T00:00:00Z")
	if err := c.Walk(context.Background(), o, func(Entry) error { return nil }); err == nil || !strings.Contains(err.Error(), "repeated the cursor") {
		t.Fatalf("a cursor loop: %v", err)
	}
}

func TestClientBoundsAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("search") {
		case "huge":
			w.Write([]byte(`{"servers":[`))
			chunk := []byte(strings.Repeat(" ", 1<<20))
			for i := 0; i < 20; i++ {
				w.Write(chunk)
			}
		case "many":
			var es []string
			for i := 0; i < MaxPageSize+1; i++ {
				es = append(es, entryJSON(fmt.Sprintf("io.github.a/s%d", i), "1"))
			}
			fmt.Fprintf(w, `{"servers":[%s],"metadata":{}}`, strings.Join(es, ","))
		case "dup":
			fmt.Fprintf(w, `{"servers":[],"servers":[%s],"metadata":{}}`, entryJSON("io.github.a/x", "1"))
		}
	}))
	defer srv.Close()
	c, _ := NewClient(srv.URL)
	for search, want := range map[string]string{"huge": "larger than", "many": "more than 100", "dup": "duplicate"} {
		if _, err := c.List(context.Background(), ListOptions{Search: search}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", search, err, want)
		}
	}
	for _, u := range []string{"http://registry.example", "https://u:p@registry.example", "ftp://x", "https://r.example/?q=1"} {
		if _, err := NewClient(u); err == nil {
			t.Errorf("registry URL %s accepted", u)
		}
	}
}

func TestFetchBundle(t *testing.T) {
	bundle := []byte(`{"genuine":"bundle"}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/b.json":
			w.Write(bundle)
		case "/swapped.json":
			w.Write([]byte(`{"other":"bundle"}`))
		case "/redirect":
			http.Redirect(w, r, "/b.json", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	got, err := FetchBundle(ctx, nil, EtdiMeta{Bundle: srv.URL + "/b.json", Digest: Digest(bundle)})
	if err != nil || string(got) != string(bundle) {
		t.Fatalf("%s, %v", got, err)
	}
	if _, err := FetchBundle(ctx, nil, EtdiMeta{Bundle: srv.URL + "/swapped.json", Digest: Digest(bundle)}); err == nil || !strings.Contains(err.Error(), "the entry names") {
		t.Errorf("a swapped bundle: %v", err)
	}
	if _, err := FetchBundle(ctx, nil, EtdiMeta{Bundle: srv.URL + "/redirect", Digest: Digest(bundle)}); err != nil {
		t.Errorf("a loopback redirect: %v", err)
	}
	if _, err := FetchBundle(ctx, nil, EtdiMeta{Bundle: srv.URL + "/gone", Digest: Digest(bundle)}); err == nil {
		t.Error("a missing bundle fetched")
	}
}

func parseTime(s string) (t time.Time, err error) { return time.Parse(time.RFC3339, s) }
