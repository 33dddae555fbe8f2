package mirror

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/registry"
)

// VerdictKey is the member of a served entry's _meta that holds etdi's
// [Verdict], beside the registry's own
// "io.modelcontextprotocol.registry/official".
const VerdictKey = "dev.etdi/verdict"

// Defaults of a [Handler].
const (
	// DefaultLimit is a listing's page size when the request names none,
	// as the official registry's.
	DefaultLimit = 30
	// DefaultMaxUpstreamPages bounds the upstream pages one listing
	// request reads while it looks for approved entries; a page that
	// reaches it is answered with what was found and a cursor that
	// continues the search.
	DefaultMaxUpstreamPages = 10
	// DefaultMaxVersions bounds the versions of one server that are
	// judged for a versions request.
	DefaultMaxVersions = 1000
	// DefaultConcurrency is how many entries are judged at once.
	DefaultConcurrency = 8
	// DefaultRequestTimeout bounds one request, upstream reads and
	// judgements included.
	DefaultRequestTimeout = 2 * time.Minute
	// maxParam bounds a query parameter's value, in bytes.
	maxParam = 256
	// maxUpstreamCursor bounds the cursor an upstream hands back.
	maxUpstreamCursor = 1024
)

// Verdict is what a [Judge] decided of one entry; approved entries are
// served with it under _meta[[VerdictKey]].
type Verdict struct {
	// Approved: the entry's bundle verifies, binds to the entry and is
	// approved. Only approved entries are served.
	Approved bool `json:"-"`
	// Status names the decision in a stable machine form ("approved" for
	// an approved entry).
	Status string `json:"status"`
	// Provider is the trust policy's provider that signed the bundle, and
	// Server the signed server's pin identity (provider:server).
	Provider string `json:"provider,omitempty"`
	Server   string `json:"server,omitempty"`
	// Bundle is the digest of the bundle file that was verified
	// ("sha256:...", as the entry's dev.etdi metadata names it).
	Bundle string `json:"bundle,omitempty"`
	// CheckedAt is when the decision was made.
	CheckedAt time.Time `json:"checkedAt"`
}

// A Judge decides whether an entry of the upstream registry may be
// served. It is called for every entry of every request (nothing is
// cached), concurrently, and must fail closed: an error is a verdict that
// is not approved.
type Judge func(ctx context.Context, e registry.Entry) Verdict

// Handler serves the approved entries of an upstream registry (see the
// package documentation). Set its fields before serving; it is safe for
// concurrent requests.
type Handler struct {
	// Upstream reads the registry whose entries are judged.
	Upstream *registry.Client
	// Judge decides each entry.
	Judge Judge
	// Log, when set, is called once per request with a line that says
	// what was asked and answered; everything the client or the upstream
	// chose in it is escaped.
	Log func(line string)
	// MaxUpstreamPages, MaxVersions, Concurrency and RequestTimeout
	// bound the work of one request; zero means the Default.
	MaxUpstreamPages int
	MaxVersions      int
	Concurrency      int
	RequestTimeout   time.Duration
	// CursorKey authenticates the handler's cursors; nil means a random
	// key made on first use, so that cursors do not outlive the process.
	CursorKey []byte

	keyOnce sync.Once
	key     []byte
	now     func() time.Time
}

// New returns a handler serving the entries of upstream that judge
// approves.
func New(upstream *registry.Client, judge Judge) *Handler {
	return &Handler{Upstream: upstream, Judge: judge}
}

func (h *Handler) cursorKey() []byte {
	h.keyOnce.Do(func() {
		if h.CursorKey != nil {
			h.key = h.CursorKey
			return
		}
		h.key = make([]byte, 32)
		if _, err := rand.Read(h.key); err != nil {
			panic(err) // crypto/rand does not fail on supported systems
		}
	})
	return h.key
}

func orDefault[T int | time.Duration](v, d T) T {
	if v > 0 {
		return v
	}
	return d
}

// problem is an error answered to the client: the official registry's
// problem document (RFC 9457), status and detail.
type problem struct {
	status int
	detail string
}

func (p *problem) Error() string { return p.detail }

func problemf(status int, format string, args ...any) *problem {
	return &problem{status, fmt.Sprintf(format, args...)}
}

// ServeHTTP answers one request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.serveHTTP(w, r, false) }

// serveHTTP answers one request; loopbackOnly refuses a request that does
// not name a loopback host.
func (h *Handler) serveHTTP(w http.ResponseWriter, r *http.Request, loopbackOnly bool) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	var count int
	var err error
	judged := new(atomic.Int64)
	if loopbackOnly && !loopbackHost(r.Host) {
		count, err = -1, problemf(http.StatusForbidden, "this registry answers only requests for a loopback host (127.0.0.1, [::1], localhost)")
	} else {
		count, err = h.serve(rec, r.WithContext(context.WithValue(r.Context(), judgedKey{}, judged)))
	}
	if err != nil {
		var p *problem
		switch {
		case errors.As(err, &p):
		case errors.Is(err, context.DeadlineExceeded):
			p = &problem{http.StatusGatewayTimeout, "the upstream registry could not be read and its entries judged in time"}
		default:
			p = &problem{http.StatusBadGateway, "the upstream registry could not be read"}
		}
		writeProblem(rec, p)
	}
	if h.Log != nil {
		line := fmt.Sprintf("%s %s %d", termtext.Escape(bound(r.Method, 16)), termtext.Escape(bound(r.URL.RequestURI(), 512)), rec.status)
		if err == nil && count >= 0 {
			line += fmt.Sprintf(" %d entries (%d judged)", count, judged.Load())
		}
		line += fmt.Sprintf(" %s", time.Since(start).Round(time.Millisecond))
		if err != nil {
			line += ": " + termtext.Escape(bound(err.Error(), 512))
		}
		h.Log(line)
	}
}

func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// serve answers r; it returns how many entries it served (-1 when the
// answer holds none) or the error to answer instead.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request) (int, error) {
	name, version, what, ok := route(r.URL)
	if !ok {
		return -1, problemf(http.StatusNotFound, "not found: this registry serves only GET /v0.1/servers, /v0.1/servers/{serverName}/versions and /v0.1/servers/{serverName}/versions/{version}")
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		return -1, problemf(http.StatusMethodNotAllowed, "method not allowed: this registry is read-only")
	}
	ctx, cancel := context.WithTimeout(r.Context(), orDefault(h.RequestTimeout, DefaultRequestTimeout))
	defer cancel()
	switch what {
	case routeList:
		return h.serveList(ctx, w, r.URL.Query())
	case routeVersions:
		return h.serveVersions(ctx, w, name)
	default:
		return h.serveVersion(ctx, w, name, version)
	}
}

const (
	routeList = iota
	routeVersions
	routeVersion
)

// route reads the endpoint of u from its escaped path, in which a server
// name's slash is %2F as the registry API wants it.
func route(u *url.URL) (name, version string, what int, ok bool) {
	p := u.EscapedPath()
	if p == "/v0.1/servers" {
		return "", "", routeList, true
	}
	rest, found := strings.CutPrefix(p, "/v0.1/servers/")
	if !found {
		return "", "", 0, false
	}
	parts := strings.Split(rest, "/")
	if (len(parts) != 2 && len(parts) != 3) || parts[1] != "versions" {
		return "", "", 0, false
	}
	name, err := url.PathUnescape(parts[0])
	if err != nil || etdi.ValidateRegistryName(name) != nil {
		return "", "", 0, false
	}
	if len(parts) == 2 {
		return name, "", routeVersions, true
	}
	version, err = url.PathUnescape(parts[2])
	if err != nil || version == "" || len(version) > 255 || !utf8.ValidString(version) {
		return "", "", 0, false
	}
	return name, version, routeVersion, true
}

// listQuery is what a listing request asks.
type listQuery struct {
	cursor       string
	limit        int
	search       string
	updatedSince time.Time
	updatedRaw   string
	version      string
}

func parseListQuery(q url.Values) (listQuery, error) {
	var l listQuery
	for name, vs := range q {
		if len(vs) > 1 {
			return l, problemf(http.StatusBadRequest, "query parameter %q given %d times", bound(name, 64), len(vs))
		}
	}
	get := func(name string, max int) (string, error) {
		v := q.Get(name)
		if len(v) > max || !utf8.ValidString(v) {
			return "", problemf(http.StatusBadRequest, "%s: longer than %d bytes or not UTF-8", name, max)
		}
		return v, nil
	}
	var err error
	if l.cursor, err = get("cursor", maxCursor); err != nil {
		return l, err
	}
	limit, err := get("limit", 8)
	if err != nil {
		return l, err
	}
	l.limit = DefaultLimit
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > registry.MaxPageSize {
			return l, problemf(http.StatusBadRequest, "limit: want an integer from 1 to %d", registry.MaxPageSize)
		}
		l.limit = n
	}
	if l.search, err = get("search", maxParam); err != nil {
		return l, err
	}
	if l.search != "" && utf8.RuneCountInString(strings.TrimSpace(l.search)) < 3 {
		return l, problemf(http.StatusBadRequest, "search must contain at least 3 characters after trimming surrounding whitespace")
	}
	if l.updatedRaw, err = get("updated_since", 64); err != nil {
		return l, err
	}
	if l.updatedRaw != "" {
		if l.updatedSince, err = time.Parse(time.RFC3339, l.updatedRaw); err != nil {
			return l, problemf(http.StatusBadRequest, "updated_since: want an RFC 3339 time (2025-08-07T13:15:04.280Z)")
		}
	}
	if l.version, err = get("version", 255); err != nil {
		return l, err
	}
	return l, nil
}

// filter is what a cursor is bound to: the listing's filters.
func (l listQuery) filter() string {
	return fmt.Sprintf("%d:%s,%d:%s,%d:%s", len(l.search), l.search, len(l.updatedRaw), l.updatedRaw, len(l.version), l.version)
}

func (h *Handler) serveList(ctx context.Context, w http.ResponseWriter, q url.Values) (int, error) {
	lq, err := parseListQuery(q)
	if err != nil {
		return -1, err
	}
	c := cursor{Limit: lq.limit}
	if lq.cursor != "" {
		if c, err = decodeCursor(h.cursorKey(), lq.cursor, lq.filter()); err != nil {
			return -1, problemf(http.StatusBadRequest, "cursor: %v", err)
		}
	}
	served, next, err := h.list(ctx, lq, c)
	if err != nil {
		return -1, err
	}
	body := listResponse{Servers: served, Metadata: listMetadata{Count: len(served)}}
	if body.Servers == nil {
		body.Servers = []json.RawMessage{}
	}
	if next != nil {
		body.Metadata.NextCursor = encodeCursor(h.cursorKey(), *next, lq.filter())
	}
	return len(served), writeJSON(w, body)
}

// list collects up to lq.limit approved entries from c on, and the cursor
// that continues after them (nil at the end of the listing).
func (h *Handler) list(ctx context.Context, lq listQuery, c cursor) ([]json.RawMessage, *cursor, error) {
	var out []json.RawMessage
	need := lq.limit
	seen := map[string]bool{}
	for pages := 0; ; pages++ {
		if pages == orDefault(h.MaxUpstreamPages, DefaultMaxUpstreamPages) {
			return out, &c, nil
		}
		page, err := h.Upstream.List(ctx, registry.ListOptions{Cursor: c.Upstream, Limit: c.Limit, UpdatedSince: lq.updatedSince, Search: lq.search, Version: lq.version})
		if err != nil {
			return nil, nil, fmt.Errorf("upstream listing: %w", err)
		}
		if len(page.NextCursor) > maxUpstreamCursor {
			return nil, nil, fmt.Errorf("upstream listing: a cursor of %d bytes", len(page.NextCursor))
		}
		i := resume(page.Entries, c.Skip, c.Last)
		for i < len(page.Entries) && need > 0 {
			chunk := page.Entries[i:min(i+need, len(page.Entries))]
			for j, v := range h.judgeAll(ctx, chunk) {
				if v.Approved {
					raw, err := servedEntry(chunk[j], v)
					if err != nil {
						return nil, nil, err
					}
					out = append(out, raw)
					need--
				}
			}
			i += len(chunk)
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if i < len(page.Entries) {
			return out, &cursor{Upstream: c.Upstream, Limit: c.Limit, Skip: i, Last: entryKey(page.Entries[i-1])}, nil
		}
		if page.NextCursor == "" {
			return out, nil, nil
		}
		if seen[page.NextCursor] || page.NextCursor == c.Upstream {
			return nil, nil, errors.New("upstream listing: the upstream repeated a cursor")
		}
		seen[page.NextCursor] = true
		c = cursor{Upstream: page.NextCursor, Limit: lq.limit}
		if need == 0 {
			return out, &c, nil
		}
	}
}

// resume is where a listing continues in an upstream page it already
// served up to skip: after the entry it served last, found again when the
// page moved, else at skip.
func resume(es []registry.Entry, skip int, last string) int {
	if skip <= 0 {
		return 0
	}
	if skip <= len(es) && entryKey(es[skip-1]) == last {
		return skip
	}
	for i, e := range es {
		if entryKey(e) == last {
			return i + 1
		}
	}
	return min(skip, len(es))
}

func entryKey(e registry.Entry) string { return e.Server.Name + "\x00" + e.Server.Version }

// judgedKey is the context key of a request's count of judged entries,
// for its log line.
type judgedKey struct{}

// judgeAll judges es, at most Concurrency at once. An entry the registry
// marks deleted is never served, whatever the judge says.
func (h *Handler) judgeAll(ctx context.Context, es []registry.Entry) []Verdict {
	vs := make([]Verdict, len(es))
	judged, _ := ctx.Value(judgedKey{}).(*atomic.Int64)
	sem := make(chan struct{}, orDefault(h.Concurrency, DefaultConcurrency))
	var wg sync.WaitGroup
	for i := range es {
		if es[i].Official.Status == registry.StatusDeleted {
			vs[i] = Verdict{Status: "deleted"}
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if ctx.Err() != nil {
				return
			}
			vs[i] = h.Judge(ctx, es[i])
			if judged != nil {
				judged.Add(1)
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		for i := range vs {
			vs[i].Approved = false
		}
	}
	return vs
}

func (h *Handler) serveVersions(ctx context.Context, w http.ResponseWriter, name string) (int, error) {
	es, err := h.Upstream.Versions(ctx, name)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return -1, problemf(http.StatusNotFound, "Server not found")
	case err != nil:
		return -1, fmt.Errorf("upstream versions: %w", err)
	}
	if max := orDefault(h.MaxVersions, DefaultMaxVersions); len(es) > max {
		es = es[:max]
	}
	var served []json.RawMessage
	for i, v := range h.judgeAll(ctx, es) {
		if v.Approved {
			raw, err := servedEntry(es[i], v)
			if err != nil {
				return -1, err
			}
			served = append(served, raw)
		}
	}
	if err := ctx.Err(); err != nil {
		return -1, err
	}
	if len(served) == 0 {
		return -1, problemf(http.StatusNotFound, "Server not found")
	}
	return len(served), writeJSON(w, listResponse{Servers: served, Metadata: listMetadata{Count: len(served)}})
}

func (h *Handler) serveVersion(ctx context.Context, w http.ResponseWriter, name, version string) (int, error) {
	e, err := h.Upstream.Get(ctx, name, version)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return -1, problemf(http.StatusNotFound, "Server not found")
	case err != nil:
		return -1, fmt.Errorf("upstream version: %w", err)
	}
	v := h.judgeAll(ctx, []registry.Entry{*e})[0]
	if err := ctx.Err(); err != nil {
		return -1, err
	}
	if !v.Approved {
		return -1, problemf(http.StatusNotFound, "Server not found")
	}
	raw, err := servedEntry(*e, v)
	if err != nil {
		return -1, err
	}
	return 1, writeJSON(w, raw)
}

// listResponse is the registry's ServerListResponse.
type listResponse struct {
	Servers  []json.RawMessage `json:"servers"`
	Metadata listMetadata      `json:"metadata"`
}

type listMetadata struct {
	NextCursor string `json:"nextCursor,omitempty"`
	Count      int    `json:"count"`
}

// servedEntry is e as served: its server as the upstream sent it, its
// _meta with v under [VerdictKey] (replacing any the upstream sent).
func servedEntry(e registry.Entry, v Verdict) (json.RawMessage, error) {
	var r struct {
		Server json.RawMessage            `json:"server"`
		Meta   map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(e.Raw, &r); err != nil {
		return nil, fmt.Errorf("upstream entry: %w", err)
	}
	if r.Meta == nil {
		r.Meta = map[string]json.RawMessage{}
	}
	vj, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	r.Meta[VerdictKey] = vj
	return json.Marshal(r)
}

func writeJSON(w http.ResponseWriter, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
	return nil
}

func writeProblem(w http.ResponseWriter, p *problem) {
	b, _ := json.Marshal(struct {
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}{http.StatusText(p.status), p.status, p.detail})
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.status)
	_, _ = w.Write(b)
}

// recorder keeps the status a handler answered, for the log line.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}
