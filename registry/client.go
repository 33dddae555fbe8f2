package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/strictjson"
)

// Limits on the registry API.
const (
	// MaxResponseSize bounds one answer of the registry API, in bytes.
	MaxResponseSize = 16 << 20
	// MaxPageSize is the most entries one page may hold (the API's own
	// limit is 100).
	MaxPageSize = 100
	// MaxPages bounds a [Client.Walk].
	MaxPages = 10000
	// RequestTimeout bounds one request of a [Client] built without an
	// HTTP client.
	RequestTimeout = 30 * time.Second
)

// Entry is one server version as the registry API returns it: the
// server.json and the registry's own metadata.
type Entry struct {
	Server   *ServerJSON
	Official Official
	// Raw is the entry as the registry sent it.
	Raw json.RawMessage
}

// Official is what the registry records of an entry, under
// _meta["io.modelcontextprotocol.registry/official"].
type Official struct {
	Status          string    `json:"status"`
	StatusChangedAt time.Time `json:"statusChangedAt,omitempty"`
	StatusMessage   string    `json:"statusMessage,omitempty"`
	PublishedAt     time.Time `json:"publishedAt,omitempty"`
	UpdatedAt       time.Time `json:"updatedAt,omitempty"`
	IsLatest        bool      `json:"isLatest"`
}

// Statuses of an entry.
const (
	StatusActive     = "active"
	StatusDeprecated = "deprecated"
	StatusDeleted    = "deleted"
)

// Page is one page of a listing.
type Page struct {
	Entries []Entry
	// NextCursor is the cursor of the next page; empty on the last.
	NextCursor string
}

// ListOptions narrow a listing.
type ListOptions struct {
	// Cursor continues a listing where a [Page] ended.
	Cursor string
	// Limit is the page size, 1 to [MaxPageSize]; 0 leaves the
	// registry's default.
	Limit int
	// UpdatedSince lists only entries updated after this time (deleted
	// ones included, as the registry does).
	UpdatedSince time.Time
	// Search is a substring of the name.
	Search string
	// Version is "latest" or an exact version.
	Version string
}

// ErrNotFound is returned for a server or version the registry does not
// have.
var ErrNotFound = errors.New("not found in the registry")

// Client reads a registry's API v0.1.
type Client struct {
	// BaseURL is the registry's URL, without /v0.1: https, or http to a
	// loopback host.
	BaseURL string
	// HTTP sends the requests; nil means a client whose requests time out
	// after [RequestTimeout] and that follows no redirect to another
	// scheme.
	HTTP *http.Client
}

// NewClient returns a client of the registry at baseURL, refusing a URL
// that is not https (or http to a loopback host).
func NewClient(baseURL string) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" || u.User != nil || !etdi.SecureURL(u) || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("registry URL %q: want an https URL (http only to a loopback host) without user information, query or fragment", baseURL)
	}
	return &Client{BaseURL: strings.TrimSuffix(baseURL, "/")}, nil
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: RequestTimeout, CheckRedirect: sameSchemeRedirects}
}

// sameSchemeRedirects refuses a redirect from https to http and more than
// five redirects.
func sameSchemeRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("more than 5 redirects")
	}
	if !etdi.SecureURL(req.URL) {
		return fmt.Errorf("redirect to %s refused: not https", req.URL.Redacted())
	}
	return nil
}

// Get returns one version of a server; version "" is the latest.
func (c *Client) Get(ctx context.Context, name, version string) (*Entry, error) {
	if err := etdi.ValidateRegistryName(name); err != nil {
		return nil, err
	}
	if version == "" {
		version = "latest"
	}
	body, err := c.get(ctx, "/v0.1/servers/"+url.PathEscape(name)+"/versions/"+url.PathEscape(version), nil)
	if err != nil {
		return nil, fmt.Errorf("%s@%s: %w", name, version, err)
	}
	e, err := parseEntry(body)
	if err != nil {
		return nil, fmt.Errorf("%s@%s: %w", name, version, err)
	}
	if e.Server.Name != name || (version != "latest" && e.Server.Version != version) {
		return nil, fmt.Errorf("asked for %s@%s, the registry answered %s@%s", name, version, e.Server.Name, e.Server.Version)
	}
	return e, nil
}

// Versions returns every version of a server the registry lists.
func (c *Client) Versions(ctx context.Context, name string) ([]Entry, error) {
	if err := etdi.ValidateRegistryName(name); err != nil {
		return nil, err
	}
	body, err := c.get(ctx, "/v0.1/servers/"+url.PathEscape(name)+"/versions", nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p, err := parsePage(body, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, e := range p.Entries {
		if e.Server.Name != name {
			return nil, fmt.Errorf("asked for the versions of %s, the registry answered one of %s", name, e.Server.Name)
		}
	}
	return p.Entries, nil
}

// List returns one page of the registry's listing.
func (c *Client) List(ctx context.Context, o ListOptions) (*Page, error) {
	q := url.Values{}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	if o.Limit != 0 {
		if o.Limit < 1 || o.Limit > MaxPageSize {
			return nil, fmt.Errorf("page size %d: want 1 to %d", o.Limit, MaxPageSize)
		}
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if !o.UpdatedSince.IsZero() {
		q.Set("updated_since", o.UpdatedSince.UTC().Format(time.RFC3339Nano))
	}
	if o.Search != "" {
		q.Set("search", o.Search)
	}
	if o.Version != "" {
		q.Set("version", o.Version)
	}
	body, err := c.get(ctx, "/v0.1/servers", q)
	if err != nil {
		return nil, err
	}
	return parsePage(body, MaxPageSize)
}

// Walk calls fn for every entry of the listing, page after page, until
// the last page, fn's error, or [MaxPages] pages. A registry that repeats
// a cursor is an error, not an endless walk.
func (c *Client) Walk(ctx context.Context, o ListOptions, fn func(Entry) error) error {
	seen := map[string]bool{}
	for pages := 0; ; pages++ {
		if pages == MaxPages {
			return fmt.Errorf("listing longer than %d pages", MaxPages)
		}
		p, err := c.List(ctx, o)
		if err != nil {
			return err
		}
		for _, e := range p.Entries {
			if err := fn(e); err != nil {
				return err
			}
		}
		if p.NextCursor == "" {
			return nil
		}
		if seen[p.NextCursor] {
			return fmt.Errorf("the registry repeated the cursor %q", truncate(p.NextCursor, 64))
		}
		seen[p.NextCursor] = true
		o.Cursor = p.NextCursor
	}
}

func (c *Client) get(ctx context.Context, path string, q url.Values) ([]byte, error) {
	u := c.BaseURL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := readBounded(resp.Body, MaxResponseSize)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, ErrNotFound
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("the registry answered %s", resp.Status)
	}
	return body, nil
}

func readBounded(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("answer larger than %d bytes", limit)
	}
	return b, nil
}

// rawPage is a listing as the API sends it.
type rawPage struct {
	Servers  []json.RawMessage `json:"servers"`
	Metadata struct {
		NextCursor string `json:"nextCursor"`
		Count      int    `json:"count"`
	} `json:"metadata"`
}

type rawEntry struct {
	Server json.RawMessage            `json:"server"`
	Meta   map[string]json.RawMessage `json:"_meta"`
}

func parseEntry(body []byte) (*Entry, error) {
	v, err := strictjson.Parse(body)
	if err != nil {
		return nil, err
	}
	if err := checkMemberCase(v); err != nil {
		return nil, err
	}
	var r rawEntry
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	return entryOf(r, body)
}

func entryOf(r rawEntry, raw []byte) (*Entry, error) {
	if len(r.Server) == 0 {
		return nil, errors.New("entry without a server")
	}
	s, err := ParseServerJSON(r.Server)
	if err != nil {
		return nil, err
	}
	e := &Entry{Server: s, Raw: append(json.RawMessage(nil), raw...)}
	if o, ok := r.Meta[OfficialKey]; ok {
		if err := json.Unmarshal(o, &e.Official); err != nil {
			return nil, fmt.Errorf("_meta %s: %w", OfficialKey, err)
		}
	}
	return e, nil
}

// parsePage reads a listing of at most max entries (0: bounded by bytes
// only, as a server's versions are).
func parsePage(body []byte, max int) (*Page, error) {
	v, err := strictjson.Parse(body)
	if err != nil {
		return nil, err
	}
	if err := checkMemberCase(v); err != nil {
		return nil, err
	}
	var r rawPage
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	if max > 0 && len(r.Servers) > max {
		return nil, fmt.Errorf("a page of %d entries, more than %d", len(r.Servers), max)
	}
	p := &Page{NextCursor: r.Metadata.NextCursor}
	for i, raw := range r.Servers {
		var re rawEntry
		if err := json.Unmarshal(raw, &re); err != nil {
			return nil, fmt.Errorf("servers[%d]: %w", i, err)
		}
		e, err := entryOf(re, raw)
		if err != nil {
			return nil, fmt.Errorf("servers[%d]: %w", i, err)
		}
		p.Entries = append(p.Entries, *e)
	}
	return p, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
