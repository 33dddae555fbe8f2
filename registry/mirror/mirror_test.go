package mirror_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/internal/registrytest"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/registry/mirror"
)

// serverJSON is a server.json of name at version with one npm package;
// extra, when not empty, is inserted as more members.
func serverJSON(name, version, extra string) []byte {
	slug := strings.NewReplacer("/", "-", ".", "-").Replace(name)
	if extra != "" {
		extra = ",\n" + extra
	}
	return []byte(fmt.Sprintf(`{
  "$schema": %q,
  "name": %q,
  "description": "A test server",
  "version": %q,
  "packages": [
    {"registryType": "npm", "identifier": "@acme/%s", "version": %q, "transport": {"type": "stdio"}}
  ]%s
}`, registrytest.SchemaURL, name, version, slug, version, extra))
}

func publish(t *testing.T, reg *registrytest.Registry, name string, versions ...string) {
	t.Helper()
	for _, v := range versions {
		if err := reg.Publish(context.Background(), serverJSON(name, v, "")); err != nil {
			t.Fatalf("publishing %s@%s: %v", name, v, err)
		}
	}
}

// approvals is a judge over a set of approved name@version: what a team
// store would say, without signatures (the handler's own decisions are
// tested here; the judgement of signed entries is the judge's).
type approvals struct {
	mu    sync.Mutex
	ok    map[string]bool
	calls atomic.Int64
}

func approve(ids ...string) *approvals {
	a := &approvals{ok: map[string]bool{}}
	for _, id := range ids {
		a.ok[id] = true
	}
	return a
}

func (a *approvals) set(id string, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ok[id] = ok
}

func (a *approvals) judge(_ context.Context, e registry.Entry) mirror.Verdict {
	a.calls.Add(1)
	a.mu.Lock()
	defer a.mu.Unlock()
	v := mirror.Verdict{Status: "not_approved", CheckedAt: time.Now().UTC()}
	if a.ok[e.Server.Name+"@"+e.Server.Version] {
		v = mirror.Verdict{Approved: true, Status: "approved", Provider: "acme", CheckedAt: time.Now().UTC()}
	}
	return v
}

// countingTransport counts the requests sent upstream.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

type fixture struct {
	reg      *registrytest.Registry
	h        *mirror.Handler
	srv      *httptest.Server
	schemas  *apiSchemas
	upstream *countingTransport
	logs     []string
	logMu    sync.Mutex
}

// serve starts a mirror of the shared registry judged by j.
func serve(t *testing.T, j mirror.Judge) *fixture {
	t.Helper()
	reg := registrytest.Shared(t)
	f := &fixture{reg: reg, schemas: loadSchemas(t, reg), upstream: &countingTransport{}}
	up, err := registry.NewClient(reg.URL)
	if err != nil {
		t.Fatal(err)
	}
	up.HTTP = &http.Client{Transport: f.upstream, Timeout: time.Minute}
	f.h = mirror.New(up, j)
	f.h.Log = func(l string) {
		f.logMu.Lock()
		defer f.logMu.Unlock()
		f.logs = append(f.logs, l)
	}
	f.srv = httptest.NewServer(f.h)
	t.Cleanup(f.srv.Close)
	return f
}

type answer struct {
	status int
	body   []byte
	ctype  string
}

func (f *fixture) do(t *testing.T, method, path string) answer {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, b, resp.Header.Get("Content-Type")}
}

type servedEntry struct {
	Server struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"server"`
	Meta map[string]json.RawMessage `json:"_meta"`
}

func (e servedEntry) id() string { return e.Server.Name + "@" + e.Server.Version }

type servedPage struct {
	Servers  []servedEntry `json:"servers"`
	Metadata struct {
		NextCursor string `json:"nextCursor"`
		Count      int    `json:"count"`
	} `json:"metadata"`
}

// list GETs a listing, checks it against the registry's schemas and
// returns it.
func (f *fixture) list(t *testing.T, q url.Values) servedPage {
	t.Helper()
	a := f.do(t, http.MethodGet, "/v0.1/servers?"+q.Encode())
	if a.status != http.StatusOK || a.ctype != "application/json" {
		t.Fatalf("listing %v: %d %s %s", q, a.status, a.ctype, a.body)
	}
	f.schemas.checkList(t, a.body)
	var p servedPage
	if err := json.Unmarshal(a.body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Metadata.Count != len(p.Servers) {
		t.Fatalf("count %d for %d entries", p.Metadata.Count, len(p.Servers))
	}
	for _, e := range p.Servers {
		checkVerdict(t, e)
	}
	return p
}

// listAll follows the cursors of a listing to its end and returns the
// ids of its entries in order.
func (f *fixture) listAll(t *testing.T, q url.Values, limit int) []string {
	t.Helper()
	var ids []string
	q.Set("limit", fmt.Sprint(limit))
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("listing does not end")
		}
		p := f.list(t, q)
		if len(p.Servers) > limit {
			t.Fatalf("a page of %d entries for limit %d", len(p.Servers), limit)
		}
		for _, e := range p.Servers {
			ids = append(ids, e.id())
		}
		if p.Metadata.NextCursor == "" {
			return ids
		}
		q.Set("cursor", p.Metadata.NextCursor)
	}
}

func checkVerdict(t *testing.T, e servedEntry) {
	t.Helper()
	var v struct {
		Status    string    `json:"status"`
		Provider  string    `json:"provider"`
		CheckedAt time.Time `json:"checkedAt"`
	}
	if err := json.Unmarshal(e.Meta[mirror.VerdictKey], &v); err != nil || v.Status != "approved" || v.CheckedAt.IsZero() {
		t.Fatalf("%s: verdict %s (%v)", e.id(), e.Meta[mirror.VerdictKey], err)
	}
	if _, ok := e.Meta[registry.OfficialKey]; !ok {
		t.Fatalf("%s: the registry's own _meta is gone", e.id())
	}
}

// entry GETs one version and checks the answer; it returns the status.
func (f *fixture) entry(t *testing.T, name, version string) int {
	t.Helper()
	a := f.do(t, http.MethodGet, registrytest.VersionPath(name, version))
	if a.status != http.StatusOK {
		f.schemas.checkError(t, a.body)
		return a.status
	}
	f.schemas.checkEntry(t, a.body)
	var e servedEntry
	if err := json.Unmarshal(a.body, &e); err != nil {
		t.Fatal(err)
	}
	checkVerdict(t, e)
	if e.Server.Name != name || (version != "latest" && e.Server.Version != version) {
		t.Fatalf("asked %s@%s, got %s", name, version, e.id())
	}
	return a.status
}

// versions GETs the versions of name; it returns the status and the
// versions served.
func (f *fixture) versions(t *testing.T, name string) (int, []string) {
	t.Helper()
	a := f.do(t, http.MethodGet, "/v0.1/servers/"+url.PathEscape(name)+"/versions")
	if a.status != http.StatusOK {
		f.schemas.checkError(t, a.body)
		return a.status, nil
	}
	f.schemas.checkList(t, a.body)
	var p servedPage
	if err := json.Unmarshal(a.body, &p); err != nil {
		t.Fatal(err)
	}
	var vs []string
	for _, e := range p.Servers {
		checkVerdict(t, e)
		vs = append(vs, e.Server.Version)
	}
	return a.status, vs
}

func ids(p servedPage) []string {
	var out []string
	for _, e := range p.Servers {
		out = append(out, e.id())
	}
	return out
}

// TestServesOnlyApproved: of a namespace's entries, the listing, the
// versions and the version endpoints serve the approved ones only, each
// with its verdict; an unapproved version, an unapproved latest version
// and a deleted one (even approved) are 404 and absent from listings.
func TestServesOnlyApproved(t *testing.T) {
	const ns = "io.github.mirror-only/"
	a := approve(ns+"alpha@1.0.0", ns+"charlie@1.0.0", ns+"delta@1.0.0")
	f := serve(t, a.judge)
	publish(t, f.reg, ns+"alpha", "1.0.0")
	publish(t, f.reg, ns+"bravo", "1.0.0")
	publish(t, f.reg, ns+"charlie", "1.0.0", "2.0.0")
	publish(t, f.reg, ns+"delta", "1.0.0")
	if err := f.reg.SetStatus(context.Background(), ns+"delta", "1.0.0", registry.StatusDeleted); err != nil {
		t.Fatal(err)
	}

	want := []string{ns + "alpha@1.0.0", ns + "charlie@1.0.0"}
	if got := ids(f.list(t, url.Values{"search": {"mirror-only"}})); !slices.Equal(got, want) {
		t.Fatalf("listing: %v, want %v", got, want)
	}
	// updated_since lists deleted entries upstream: never served.
	if got := ids(f.list(t, url.Values{"search": {"mirror-only"}, "updated_since": {"2000-01-01T00:00:00Z"}})); !slices.Equal(got, want) {
		t.Fatalf("listing updated since 2000: %v, want %v", got, want)
	}
	// version=latest: c's latest (2.0.0) is not approved.
	if got := ids(f.list(t, url.Values{"search": {"mirror-only"}, "version": {"latest"}})); !slices.Equal(got, want[:1]) {
		t.Fatalf("listing of the latest versions: %v, want %v", got, want[:1])
	}

	for _, c := range []struct {
		name, version string
		status        int
	}{
		{ns + "alpha", "1.0.0", 200},
		{ns + "alpha", "latest", 200},
		{ns + "bravo", "1.0.0", 404},
		{ns + "bravo", "latest", 404},
		{ns + "charlie", "1.0.0", 200},
		{ns + "charlie", "2.0.0", 404},
		{ns + "charlie", "latest", 404},
		{ns + "delta", "1.0.0", 404},
		{ns + "echo", "1.0.0", 404},
	} {
		if got := f.entry(t, c.name, c.version); got != c.status {
			t.Errorf("%s@%s: %d, want %d", c.name, c.version, got, c.status)
		}
	}
	for _, c := range []struct {
		name string
		want []string
	}{{ns + "alpha", []string{"1.0.0"}}, {ns + "bravo", nil}, {ns + "charlie", []string{"1.0.0"}}, {ns + "delta", nil}} {
		status, vs := f.versions(t, c.name)
		if !slices.Equal(vs, c.want) || (c.want == nil) != (status == 404) {
			t.Errorf("versions of %s: %d %v, want %v", c.name, status, vs, c.want)
		}
	}
}

// TestRevokedGoneOnNextRequest: an entry the judge stops approving is
// gone from the next request of each endpoint, and back when approved
// again: nothing is cached between requests.
func TestRevokedGoneOnNextRequest(t *testing.T) {
	const ns = "io.github.mirror-revoke/"
	a := approve(ns+"whiskey@1.0.0", ns+"xray@1.0.0")
	f := serve(t, a.judge)
	publish(t, f.reg, ns+"whiskey", "1.0.0")
	publish(t, f.reg, ns+"xray", "1.0.0")
	q := url.Values{"search": {"mirror-revoke"}}
	if got := ids(f.list(t, q)); len(got) != 2 {
		t.Fatalf("before: %v", got)
	}
	a.set(ns+"whiskey@1.0.0", false)
	if got := ids(f.list(t, q)); !slices.Equal(got, []string{ns + "xray@1.0.0"}) {
		t.Fatalf("after revoking w: %v", got)
	}
	if s := f.entry(t, ns+"whiskey", "1.0.0"); s != 404 {
		t.Fatalf("revoked version: %d", s)
	}
	if s, _ := f.versions(t, ns+"whiskey"); s != 404 {
		t.Fatalf("revoked server's versions: %d", s)
	}
	a.set(ns+"whiskey@1.0.0", true)
	if got := ids(f.list(t, q)); len(got) != 2 {
		t.Fatalf("approved again: %v", got)
	}
}

// TestPaginationEachApprovedOnce: following the cursors of a filtered
// listing returns every approved entry exactly once, in the upstream's
// order, whatever the page size, when the upstream pages hold few or no
// approved entries, and when a request may read only one upstream page.
func TestPaginationEachApprovedOnce(t *testing.T) {
	const ns = "io.github.mirror-pages/"
	a := approve()
	var all, want []string
	for i := range 23 {
		name := fmt.Sprintf("%ss%02d", ns, i)
		publish(t, registrytest.Shared(t), name, "1.0.0")
		all = append(all, name+"@1.0.0")
		// A run of approved entries, a long unapproved gap, scattered ones.
		if i < 3 || (i > 14 && i%2 == 1) {
			a.set(name+"@1.0.0", true)
			want = append(want, name+"@1.0.0")
		}
	}
	f := serve(t, a.judge)
	q := url.Values{"search": {"mirror-pages"}}
	for _, limit := range []int{1, 2, 3, 5, 7, 30, 100} {
		if got := f.listAll(t, url.Values{"search": {"mirror-pages"}}, limit); !slices.Equal(got, want) {
			t.Errorf("limit %d: %v, want %v", limit, got, want)
		}
	}
	f.h.MaxUpstreamPages = 1
	for _, limit := range []int{1, 4} {
		if got := f.listAll(t, url.Values{"search": {"mirror-pages"}}, limit); !slices.Equal(got, want) {
			t.Errorf("one upstream page per request, limit %d: %v, want %v", limit, got, want)
		}
	}
	f.h.MaxUpstreamPages = 0

	// Harmless: the page size may change between pages.
	p := f.list(t, url.Values{"search": {"mirror-pages"}, "limit": {"2"}})
	got := ids(p)
	q.Set("cursor", p.Metadata.NextCursor)
	q.Set("limit", "100")
	got = append(got, ids(f.list(t, q))...)
	if !slices.Equal(got, want) {
		t.Errorf("limit 2 then 100: %v, want %v", got, want)
	}

	// Everything approved: the mirror lists what the upstream lists.
	for _, id := range all {
		a.set(id, true)
	}
	if got := f.listAll(t, url.Values{"search": {"mirror-pages"}}, 4); !slices.Equal(got, all) {
		t.Errorf("all approved: %v, want %v", got, all)
	}
}

// TestRegistryClientReadsMirror: a registry client (etdi's own; no host
// that reads registries runs here) lists, walks and reads the mirror as
// it reads the registry.
func TestRegistryClientReadsMirror(t *testing.T) {
	const ns = "io.github.mirror-client/"
	a := approve(ns+"kilo@1.0.0", ns+"kilo@1.1.0", ns+"lima@2.0.0")
	f := serve(t, a.judge)
	publish(t, f.reg, ns+"kilo", "1.0.0", "1.1.0", "1.2.0")
	publish(t, f.reg, ns+"lima", "2.0.0")
	c, err := registry.NewClient(f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var walked []string
	if err := c.Walk(ctx, registry.ListOptions{Search: "mirror-client", Limit: 1}, func(e registry.Entry) error {
		walked = append(walked, e.Server.Name+"@"+e.Server.Version)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{ns + "kilo@1.0.0", ns + "kilo@1.1.0", ns + "lima@2.0.0"}; !slices.Equal(walked, want) {
		t.Fatalf("walked %v, want %v", walked, want)
	}
	vs, err := c.Versions(ctx, ns+"kilo")
	if err != nil || len(vs) != 2 {
		t.Fatalf("versions: %v %v", vs, err)
	}
	e, err := c.Get(ctx, ns+"lima", "")
	if err != nil || e.Server.Version != "2.0.0" || !e.Official.IsLatest {
		t.Fatalf("latest of l: %+v %v", e, err)
	}
	if _, err := c.Get(ctx, ns+"kilo", "1.2.0"); err != registry.ErrNotFound && !strings.Contains(fmt.Sprint(err), registry.ErrNotFound.Error()) {
		t.Fatalf("unapproved version: %v", err)
	}
}

// TestAttackHostileQueries: a cursor the mirror did not issue for this
// listing (garbage, altered, another listing's, another mirror's, too
// long) and a limit out of 1-100 are 400s, answered without a request
// upstream; the same cursor with the same filters still works.
func TestAttackHostileQueries(t *testing.T) {
	const ns = "io.github.mirror-hostile/"
	a := approve(ns+"h1@1.0.0", ns+"h2@1.0.0", ns+"h3@1.0.0")
	f := serve(t, a.judge)
	publish(t, f.reg, ns+"h1", "1.0.0")
	publish(t, f.reg, ns+"h2", "1.0.0")
	publish(t, f.reg, ns+"h3", "1.0.0")
	p := f.list(t, url.Values{"search": {"mirror-hostile"}, "limit": {"1"}})
	good := p.Metadata.NextCursor
	if good == "" {
		t.Fatal("no cursor")
	}
	other := serve(t, a.judge).list(t, url.Values{"search": {"mirror-hostile"}, "limit": {"1"}}).Metadata.NextCursor
	payload, mac, _ := strings.Cut(good, ".")
	altered := []byte(payload)
	altered[len(altered)/2] ^= 1
	before := f.upstream.n.Load()
	for _, c := range []struct{ why, query string }{
		{"garbage cursor", "cursor=abc"},
		{"upstream-style cursor", "cursor=" + url.QueryEscape(ns+"h1:1.0.0")},
		{"altered payload", "cursor=" + string(altered) + "." + mac},
		{"payload without MAC", "cursor=" + payload},
		{"another listing's cursor", "search=mirror-host&cursor=" + good},
		{"cursor without its filter", "cursor=" + good},
		{"another mirror's cursor", "search=mirror-hostile&cursor=" + other},
		{"cursor of 4 KB", "search=mirror-hostile&cursor=" + strings.Repeat("A", 4096)},
		{"cursor twice", "search=mirror-hostile&cursor=" + good + "&cursor=" + good},
		{"limit 0", "limit=0"},
		{"limit 101", "limit=101"},
		{"limit -1", "limit=-1"},
		{"limit 1e2", "limit=1e2"},
		{"limit text", "limit=ten"},
		{"limit huge", "limit=99999999999999999999"},
		{"search of 2 characters", "search=%20ab%20"},
		{"search of 1 KB", "search=" + strings.Repeat("a", 1024)},
		{"updated_since not RFC 3339", "updated_since=yesterday"},
		{"version of 1 KB", "version=" + strings.Repeat("1", 1024)},
		{"invalid UTF-8", "search=%ff%fe%fd"},
	} {
		ans := f.do(t, http.MethodGet, "/v0.1/servers?"+c.query)
		if ans.status != http.StatusBadRequest || ans.ctype != "application/problem+json" {
			t.Errorf("%s: %d %s %s", c.why, ans.status, ans.ctype, ans.body)
			continue
		}
		f.schemas.checkError(t, ans.body)
	}
	if n := f.upstream.n.Load(); n != before {
		t.Fatalf("hostile queries made %d requests upstream", n-before)
	}
	// Harmless: the issued cursor with its filters, the parameters in
	// another order.
	ans := f.do(t, http.MethodGet, "/v0.1/servers?cursor="+url.QueryEscape(good)+"&limit=5&search=mirror-hostile")
	if ans.status != 200 {
		t.Fatalf("the issued cursor: %d %s", ans.status, ans.body)
	}
	var rest servedPage
	if err := json.Unmarshal(ans.body, &rest); err != nil || !slices.Equal(ids(rest), []string{ns + "h2@1.0.0", ns + "h3@1.0.0"}) {
		t.Fatalf("after the cursor: %s", ans.body)
	}
}

// TestReadOnly: only the three reading endpoints exist; publishing,
// editing, authentication and every other path are 404 or 405, and a
// name with a bare slash is not a name.
func TestReadOnly(t *testing.T) {
	const ns = "io.github.mirror-readonly/"
	a := approve(ns + "romeo@1.0.0")
	f := serve(t, a.judge)
	publish(t, f.reg, ns+"romeo", "1.0.0")
	before := f.upstream.n.Load()
	esc := url.PathEscape(ns + "romeo")
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"POST", "/v0.1/publish", 404},
		{"POST", "/v0.1/auth/none", 404},
		{"GET", "/v0.1/health", 404},
		{"GET", "/v0/servers", 404},
		{"GET", "/openapi.json", 404},
		{"GET", "/v0.1/servers/", 404},
		{"GET", "/v0.1/servers/" + esc, 404},
		{"GET", "/v0.1/servers/" + ns + "romeo/versions", 404},
		{"GET", "/v0.1/servers/" + ns + "romeo/versions/1.0.0", 404},
		{"GET", "/v0.1/servers/not-a-name/versions", 404},
		{"GET", "/v0.1/servers/" + esc + "/versions/1.0.0/status", 404},
		{"PATCH", "/v0.1/servers/" + esc + "/versions/1.0.0/status", 404},
		{"POST", "/v0.1/servers", 405},
		{"PUT", "/v0.1/servers/" + esc + "/versions/1.0.0", 405},
		{"DELETE", "/v0.1/servers/" + esc + "/versions/1.0.0", 405},
		{"HEAD", "/v0.1/servers/" + esc + "/versions", 405},
	} {
		ans := f.do(t, c.method, c.path)
		if ans.status != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, ans.status, c.status)
			continue
		}
		if c.method != "HEAD" {
			f.schemas.checkError(t, ans.body)
		}
	}
	if n := f.upstream.n.Load(); n != before {
		t.Fatalf("refused requests made %d requests upstream", n-before)
	}
	if s := f.entry(t, ns+"romeo", "1.0.0"); s != 200 {
		t.Fatalf("the approved entry: %d", s)
	}
}

func registryShared(t *testing.T) *registrytest.Registry { return registrytest.Shared(t) }

// TestHarmlessSpellings: a served entry's server is the upstream's, every
// member kept as the registry sent it (publisher metadata, members etdi
// does not know); a name or version escaped another way (%2f, %2E) names
// the same entry.
func TestHarmlessSpellings(t *testing.T) {
	const ns = "io.github.mirror-harmless/"
	a := approve(ns + "tango@1.0.0")
	f := serve(t, a.judge)
	extra := `"title": "Tango", "websiteUrl": "https://tango.example.com/",
  "_meta": {"io.modelcontextprotocol.registry/publisher-provided": {"com.example/build": {"commit": "abc123", "n": [1, 2.5, true, null]}}}`
	if err := f.reg.Publish(context.Background(), serverJSON(ns+"tango", "1.0.0", extra)); err != nil {
		t.Fatal(err)
	}
	upstream, err := f.reg.Get(context.Background(), ns+"tango", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	serverOf := func(b []byte) string {
		var v struct{ Server json.RawMessage }
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		var x any
		if err := json.Unmarshal(v.Server, &x); err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(x)
		return string(out)
	}
	want := serverOf(upstream)
	if !strings.Contains(want, "abc123") {
		t.Fatalf("the registry did not keep the publisher's metadata: %s", want)
	}
	for _, p := range []string{
		registrytest.VersionPath(ns+"tango", "1.0.0"),
		"/v0.1/servers/io.github.mirror-harmless%2ftango/versions/1.0.0",
		"/v0.1/servers/io%2Egithub.mirror-harmless%2Ftango/versions/1%2E0.0",
	} {
		ans := f.do(t, http.MethodGet, p)
		if ans.status != 200 {
			t.Errorf("%s: %d %s", p, ans.status, ans.body)
			continue
		}
		f.schemas.checkEntry(t, ans.body)
		if got := serverOf(ans.body); got != want {
			t.Errorf("%s: server %s, upstream %s", p, got, want)
		}
	}
}
