// Package mcpclient fetches what a live MCP server offers: it connects
// (stdio or Streamable HTTP), initializes, and follows tools/list
// pagination to the end. It keeps the raw JSON of every result, so no
// field of a tool definition is lost or normalized before etdi digests it.
//
// A fetch is bounded whatever the server does (docs/live.md#live-servers, "Fetch
// bounds"): in time by Options.Timeout, in bytes by MaxFetchBytes counted
// while reading, in stray messages by MaxStrayMessages; a stdio server
// runs in its own process group, which is ended with it.
package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/strictjson"
)

// ProtocolVersion is the MCP revision etdi asks for.
const ProtocolVersion = "2025-06-18"

// Options bound a fetch.
type Options struct {
	// StartTimeout bounds the time from start to the initialize response
	// (default 20s).
	StartTimeout time.Duration
	// Timeout bounds the whole fetch (default 60s).
	Timeout time.Duration
	// MaxPages bounds tools/list pages (default 200).
	MaxPages int
	// ClientVersion is reported in clientInfo.
	ClientVersion string
	// Capabilities is the client capabilities object declared at
	// initialize (a JSON object, as a host sends it: {"roots": {},
	// "elicitation": {}}); nil declares none ({}). Servers offer some
	// tools only to clients that declare a capability, so a listing under
	// a host's capabilities is what that host is offered. The server's
	// requests during the listing are answered as Capabilities allows
	// (answerRequest); see ValidCapabilities.
	Capabilities json.RawMessage
	// Entries, if set, receives the entries of every page of every list
	// as the page is read, and the Listing keeps none of them (its Tools,
	// Prompts, Resources and Templates stay empty): a caller that writes
	// them out holds one page at a time. Every bound applies as without
	// it. An error it returns ends the fetch.
	Entries func(list etdi.List, entries []etdi.LiveTool) error
}

func (o *Options) defaults() {
	if o.StartTimeout <= 0 {
		o.StartTimeout = 20 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.MaxPages <= 0 {
		o.MaxPages = 200
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "dev"
	}
}

// Listing is what a server offers.
type Listing struct {
	ProtocolVersion string `json:"protocolVersion"`
	// ServerName and ServerVersion come from serverInfo.
	ServerName    string `json:"serverName"`
	ServerVersion string `json:"serverVersion,omitempty"`
	// Instructions are the server's instructions (nil if it sent none).
	Instructions *string `json:"instructions,omitempty"`
	// Tools are all tools of all pages, in order.
	Tools []etdi.LiveTool `json:"-"`
	// Metas are the _meta objects of the tools/list results, one per page
	// that had one (they may carry an in-band bundle).
	Metas []*strictjson.Value `json:"-"`
	// ToolMetas are the _meta objects of tools that have one.
	ToolMetas []*strictjson.Value `json:"-"`
	Pages     int                 `json:"pages"`
	// Prompts, Resources and Templates are the entries of prompts/list,
	// resources/list and resources/templates/list, listed when the
	// server's capabilities offer prompts or resources (Offers).
	Prompts, Resources, Templates []etdi.LiveTool `json:"-"`
	// Offers says what the initialize answer's capabilities offer.
	Offers Offers `json:"-"`
}

// Offers are the lists besides tools that a server's capabilities offer.
type Offers struct{ Prompts, Resources bool }

// ServerError reports a server that could not be listed. Stderr holds the
// end of what the server wrote to standard error, if it is a process.
type ServerError struct {
	Stage  string // "start", "initialize", "tools/list"
	Err    error
	Stderr string
}

func (e *ServerError) Error() string {
	msg := fmt.Sprintf("%s: %v", e.Stage, e.Err)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += "; server stderr: " + s
	}
	return msg
}

func (e *ServerError) Unwrap() error { return e.Err }

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// conn is one connection to a server: stdio or Streamable HTTP.
type conn interface {
	// send writes one message (a call when call is set); it honours ctx
	// even if the server never reads.
	send(ctx context.Context, data []byte, call bool) error
	// recv returns the next message that may answer the last call.
	recv(ctx context.Context) ([]byte, error)
	// answer sends an answer to a server request without blocking: when
	// too many wait, it is dropped.
	answer(data []byte)
}

// Stdio starts the command (argv[0] with its arguments; env replaces the
// environment when not nil) in its own process group, lists it, and stops
// it: stdin is closed, then the group gets SIGTERM, then SIGKILL, and the
// server is always reaped.
func Stdio(ctx context.Context, argv []string, env []string, dir string, opts Options) (*Listing, error) {
	if len(argv) == 0 {
		return nil, errors.New("no server command")
	}
	opts.defaults()
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	defer onInterrupt(cancel)() // runs after the server is ended below
	b := newBudget(MaxFetchBytes)
	c, err := startStdio(ctx, argv, env, dir, b, nil, 0)
	if err != nil {
		return nil, &ServerError{Stage: "start", Err: err}
	}
	l, err := list(ctx, c, opts, nil)
	stderr := c.close()
	var se *ServerError
	if errors.As(err, &se) {
		se.Stderr = stderr
	}
	return l, err
}

// HTTP lists a Streamable HTTP server at url, sending headers with every
// request to its origin (and to no other).
func HTTP(ctx context.Context, url string, headers http.Header, opts Options) (*Listing, error) {
	opts.defaults()
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	c, err := startHTTP(ctx, url, headers, opts.Timeout, newBudget(MaxFetchBytes))
	if err != nil {
		return nil, &ServerError{Stage: "start", Err: err}
	}
	defer c.close()
	return list(ctx, c, opts, c.initialized)
}

// list initializes and follows tools/list to its end. initialized, if not
// nil, learns the negotiated protocol version.
func list(ctx context.Context, conn conn, opts Options, initialized func(string)) (l *Listing, err error) {
	caps := opts.Capabilities
	if caps == nil {
		caps = json.RawMessage(`{}`)
	}
	if err := ValidCapabilities(caps); err != nil {
		return nil, &ServerError{Stage: "initialize", Err: err}
	}
	c := &client{conn: conn, caps: declared(caps)}
	ictx, icancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer icancel()
	params := fmt.Sprintf(`{"protocolVersion":%q,"capabilities":%s,"clientInfo":{"name":"etdi","version":%q}}`, ProtocolVersion, caps, opts.ClientVersion)
	res, err := c.call(ictx, "initialize", json.RawMessage(params))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			if ctx.Err() == nil {
				err = fmt.Errorf("no answer within %s", opts.StartTimeout)
			} else {
				err = fmt.Errorf("not done within %s: %w", opts.Timeout, err)
			}
		}
		return nil, &ServerError{Stage: "initialize", Err: err}
	}
	l = &Listing{}
	if err := parseInitialize(res, l); err != nil {
		return nil, &ServerError{Stage: "initialize", Err: err}
	}
	if initialized != nil && visibleASCII(l.ProtocolVersion) && len(l.ProtocolVersion) <= 64 {
		initialized(l.ProtocolVersion)
	}
	if err := c.notify(ctx, "notifications/initialized"); err != nil {
		return nil, &ServerError{Stage: "initialize", Err: err}
	}
	if err := listLists(ctx, c.call, offered(l), l, opts.MaxPages, opts.Entries); err != nil {
		var se *ServerError
		if errors.As(err, &se) && errors.Is(se.Err, context.DeadlineExceeded) {
			se.Err = fmt.Errorf("not done within %s: %w", opts.Timeout, se.Err)
		}
		return nil, err
	}
	return l, nil
}

// Caller sends one request and returns the raw result of its answer, or
// an error (an error answer included).
type Caller func(ctx context.Context, method string, params json.RawMessage) ([]byte, error)

// ListAll follows tools/list to its end and, as l.Offers says, prompts/list,
// resources/list and resources/templates/list, filling l. The JSON values
// of every page of every list count against one bound (MaxFetchNodes);
// each list has at most maxPages pages and etdi.MaxTools entries; a
// cursor seen before in a list is an error (it loops). Errors are
// *ServerError naming the list's method.
func ListAll(ctx context.Context, call Caller, l *Listing, maxPages int) error {
	return ListLists(ctx, call, offered(l), l, maxPages)
}

// offered returns the lists l.Offers says the server has, in the order
// they are listed (and saved): tools, prompts, resources, templates.
func offered(l *Listing) []etdi.List {
	lists := []etdi.List{etdi.ListTools}
	if l.Offers.Prompts {
		lists = append(lists, etdi.ListPrompts)
	}
	if l.Offers.Resources {
		lists = append(lists, etdi.ListResources, etdi.ListTemplates)
	}
	return lists
}

// ListLists follows each of lists to its end, as ListAll does, filling l.
// The results of every page of every list count against MaxFetchBytes
// too, whatever the connection counts itself (a session bounds a message,
// not a listing).
func ListLists(ctx context.Context, call Caller, lists []etdi.List, l *Listing, maxPages int) error {
	return listLists(ctx, call, lists, l, maxPages, nil)
}

// listLists is ListLists, handing each page's entries to sink instead of
// keeping them when sink is set (Options.Entries).
func listLists(ctx context.Context, call Caller, lists []etdi.List, l *Listing, maxPages int, sink func(etdi.List, []etdi.LiveTool) error) error {
	nodes := 0 // JSON values of all pages of all lists
	left := int64(MaxFetchBytes)
	inner := call
	call = func(ctx context.Context, method string, params json.RawMessage) ([]byte, error) {
		res, err := inner(ctx, method, params)
		if left -= int64(len(res)); err == nil && left < 0 {
			return nil, ErrTooLarge
		}
		return res, err
	}
	for _, list := range lists {
		items, metas, itemMetas, pages, err := listPages(ctx, call, list, maxPages, &nodes, sink)
		if err != nil {
			return err
		}
		switch list {
		case etdi.ListTools:
			l.Tools, l.Metas, l.ToolMetas, l.Pages = items, metas, itemMetas, pages
		case etdi.ListPrompts:
			l.Prompts = items
		case etdi.ListResources:
			l.Resources = items
		case etdi.ListTemplates:
			l.Templates = items
		}
	}
	return nil
}

// listPages follows one list to its end. With sink set, each page's
// entries go to it, and only their count is kept.
func listPages(ctx context.Context, call Caller, list etdi.List, maxPages int, nodes *int, sink func(etdi.List, []etdi.LiveTool) error) (items []etdi.LiveTool, metas, itemMetas []*strictjson.Value, pages int, err error) {
	fail := func(err error) error { return &ServerError{Stage: list.Method, Err: err} }
	seen := map[string]bool{}
	cursor := ""
	count := 0
	for {
		if pages >= maxPages {
			return nil, nil, nil, 0, fail(fmt.Errorf("more than %d pages", maxPages))
		}
		p := json.RawMessage(`{}`)
		if cursor != "" {
			cb, _ := json.Marshal(map[string]string{"cursor": cursor})
			p = cb
		}
		res, err := call(ctx, list.Method, p)
		if err != nil {
			return nil, nil, nil, 0, fail(err)
		}
		pages++
		page, err := etdi.ParseList(res, etdi.ListOptions{Lists: []etdi.List{list}, Result: true, Before: *nodes, Limit: MaxFetchNodes})
		if err != nil {
			return nil, nil, nil, 0, fail(fmt.Errorf("page %d: %w", pages, err))
		}
		*nodes += page.Nodes
		if count += len(page.Tools); count > etdi.MaxTools {
			return nil, nil, nil, 0, fail(fmt.Errorf("more than %d %s", etdi.MaxTools, list.Member))
		}
		if sink != nil {
			if err := sink(list, page.Tools); err != nil {
				return nil, nil, nil, 0, err
			}
		} else {
			items = append(items, page.Tools...)
		}
		if page.Meta != nil {
			metas = append(metas, page.Meta)
		}
		itemMetas = append(itemMetas, page.ToolMetas...)
		next := page.NextCursor
		if next == nil || next.Kind == strictjson.Null || (next.Kind == strictjson.String && next.Str == "") {
			return items, metas, itemMetas, pages, nil
		}
		if next.Kind != strictjson.String {
			return nil, nil, nil, 0, fail(fmt.Errorf("page %d: nextCursor is a %s", pages, next.Kind))
		}
		if seen[next.Str] {
			return nil, nil, nil, 0, fail(fmt.Errorf("page %d: nextCursor %q repeats: the listing loops", pages, clip(next.Str)))
		}
		seen[next.Str] = true
		cursor = next.Str
	}
}

// ParseInitialize reads an initialize answer: the negotiated protocol
// version, serverInfo, capabilities and instructions.
func ParseInitialize(res []byte) (*Listing, error) {
	l := &Listing{}
	return l, parseInitialize(res, l)
}

func parseInitialize(res []byte, l *Listing) error {
	v, err := strictjson.Parse(res)
	if err != nil {
		return err
	}
	if v.Kind != strictjson.Object {
		return fmt.Errorf("result is a %s", v.Kind)
	}
	if pv := v.Get("protocolVersion"); pv != nil && pv.Kind == strictjson.String && pv.Str != "" {
		l.ProtocolVersion = pv.Str
	} else {
		return errors.New("result has no protocolVersion")
	}
	if si := v.Get("serverInfo"); si != nil && si.Kind == strictjson.Object {
		if n := si.Get("name"); n != nil && n.Kind == strictjson.String {
			l.ServerName = n.Str
		}
		if n := si.Get("version"); n != nil && n.Kind == strictjson.String {
			l.ServerVersion = n.Str
		}
	}
	if caps := v.Get("capabilities"); caps != nil && caps.Kind == strictjson.Object {
		l.Offers.Prompts = caps.Get("prompts") != nil
		l.Offers.Resources = caps.Get("resources") != nil
	}
	if in := v.Get("instructions"); in != nil {
		if in.Kind != strictjson.String {
			return fmt.Errorf("instructions is a %s", in.Kind)
		}
		s := in.Str
		l.Instructions = &s
	}
	return nil
}

// client correlates requests and responses on a connection.
type client struct {
	conn   conn
	nextID int64
	// stray counts messages that were not the awaited answer.
	stray int
	// caps are the capabilities declared at initialize.
	caps capabilitySet
}

func (c *client) notify(ctx context.Context, method string) error {
	return c.conn.send(ctx, encodeRequest(0, method, nil), false)
}

// call sends a request and returns the raw result of its response. It
// skips notifications, answers server-to-client requests as the declared
// capabilities allow (answerRequest) without waiting for the answer to be
// written,
// gives up after MaxStrayMessages messages that are not its answer, and
// rejects error responses.
func (c *client) call(ctx context.Context, method string, params json.RawMessage) ([]byte, error) {
	c.nextID++
	id := c.nextID
	if err := c.conn.send(ctx, encodeRequest(id, method, params), true); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("sending %s: %w", method, err)
	}
	for {
		data, err := c.conn.recv(ctx)
		if err != nil {
			return nil, err
		}
		m, err := decodeMessage(data)
		if err != nil {
			return nil, fmt.Errorf("invalid message from the server: %w", err)
		}
		if !m.isRequest && m.isID(id) {
			if m.hasError {
				return nil, fmt.Errorf("the server answered %s with an error: %s %s", method, clip(m.errCode), clip(m.errMsg))
			}
			return m.result, nil
		}
		c.stray++
		if c.stray > MaxStrayMessages {
			return nil, fmt.Errorf("the server sent more than %d messages that were not answers (requests, notifications); giving up", MaxStrayMessages)
		}
		if m.isRequest && m.id != nil && len(m.id) <= 256 {
			c.conn.answer(answerRequest(m.id, m.method, c.caps))
		}
	}
}
