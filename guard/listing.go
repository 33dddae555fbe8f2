package guard

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/strictjson"
)

// Listing is what a server offers, as received: every tool definition is
// kept as the canonical form of the bytes the server sent (never a typed
// round trip, which would drop fields), with its digest.
type Listing struct {
	// Tools are the tools of every tools/list page, in order.
	Tools []etdi.LiveTool
	// Metas are the _meta objects of the tools/list results, one per page
	// that had one; ToolMetas those of the tools that have one. Either may
	// carry an in-band bundle (SPEC.md §15).
	Metas, ToolMetas []*strictjson.Value
	// Live says the listing comes from a running server, whose initialize
	// answer was seen: then Instructions are known (nil if it sent none).
	Live         bool
	Instructions *string
	// ServerName and ServerVersion come from serverInfo; ProtocolVersion
	// is the negotiated one.
	ServerName, ServerVersion, ProtocolVersion string
	// Pages is the number of tools/list pages.
	Pages int
	// Prompts, Resources and Templates are the entries of prompts/list,
	// resources/list and resources/templates/list (each named by its
	// name, URI or URI template), fetched when the server's capabilities
	// offer them; Listed names the item kinds that were (pin.ItemPrompt,
	// pin.ItemResource, pin.ItemTemplate).
	Prompts, Resources, Templates []etdi.LiveTool
	Listed                        []string
	// Served is what served the listing when it was made (Origin.Served
	// of the launch it came from; "" when unknown). A saved listing
	// carries it bound to its entries (docs/check.md#check-against-pins): approving from the
	// file records it in the pins, as approving the live server would.
	// ServedAt is where the file Served names was found (Origin.ServedAt),
	// saved and bound with it.
	Served, ServedAt string
}

// Items returns the entries of the lists other than tools, by item kind.
func (l *Listing) Items() map[string][]etdi.LiveTool {
	return map[string][]etdi.LiveTool{pin.ItemPrompt: l.Prompts, pin.ItemResource: l.Resources, pin.ItemTemplate: l.Templates}
}

// savedLists are the lists a saved listing may hold, and their items.
var savedLists = []etdi.List{etdi.ListTools, etdi.ListPrompts, etdi.ListResources, etdi.ListTemplates}

// ReadListing parses a saved tools/list (SPEC.md §8): a result object, a
// whole JSON-RPC response or an array of tools, under the bounds of a
// live listing (docs/live.md#live-servers). A result object may hold the server's prompts,
// resources and resource templates beside its tools, as etdi fetch saves
// them ("prompts", "resources", "resourceTemplates"); those present are
// Listed; an "instructions" member beside them holds the server's
// instructions (a string, or null when it sent none); a "served" member
// says what served the listing ([Listing.Served]), and a file whose served
// does not match its binding is refused ([ErrServedBinding]).
func ReadListing(data []byte) (*Listing, error) {
	tl, err := etdi.ParseList(data, etdi.ListOptions{Lists: savedLists, Limit: mcpclient.MaxFetchNodes})
	if err != nil {
		return nil, err
	}
	l := &Listing{Tools: tl.Tools, ToolMetas: tl.ToolMetas, Pages: 1}
	if mcpclient.Member(data, "result") == nil {
		// A result object saved by etdi fetch or the gate holds the
		// server's instructions as its initialize answer gave them (null:
		// none); only a live server shows them.
		if raw := mcpclient.Member(data, "instructions"); raw != nil {
			if err := json.Unmarshal(raw, &l.Instructions); err != nil {
				return nil, fmt.Errorf("instructions: not a string or null")
			}
			l.Live = true
		}
	}
	if tl.Meta != nil {
		l.Metas = []*strictjson.Value{tl.Meta}
	}
	for i, dst := range []*[]etdi.LiveTool{&l.Prompts, &l.Resources, &l.Templates} {
		if p := tl.Others[i]; p != nil {
			*dst = p.Tools
			l.Listed = append(l.Listed, pin.Items[i])
		}
	}
	if mcpclient.Member(data, "result") == nil {
		if raw := mcpclient.Member(data, servedMember); raw != nil {
			if err := l.readServed(raw); err != nil {
				return nil, err
			}
		}
	}
	return l, nil
}

// servedMember is the member of a saved listing that says what served it.
const servedMember = "served"

// maxServed bounds the served text a saved listing may carry.
const maxServed = 4096

// ErrServedBinding is returned by [ReadListing] for a saved listing whose
// served member does not match the listing: the file was changed after
// it was saved (what served it, or what it lists).
var ErrServedBinding = errors.New("the listing's \"served\" does not match the listing it was saved with: " +
	"the file was changed after it was saved; nothing in it is approved (save it again: etdi fetch --out FILE, or the review command etdi run names)")

// readServed reads a saved listing's served member, {"by": TEXT,
// "binding": DIGEST} and, for a file artifact, "at": PATH, and holds it to
// the listing: the binding is the digest of what served it (and where)
// and of every entry the file lists (servedBinding).
func (l *Listing) readServed(raw []byte) error {
	// Members are matched by their exact names: encoding/json would also
	// take "BY" or "Binding" for them, so a file could show a person one
	// by and have another recorded.
	var members map[string]*string
	var sv struct{ By, Binding, At *string }
	if err := json.Unmarshal(raw, &members); err == nil && (len(members) == 2 || len(members) == 3) {
		sv.By, sv.Binding, sv.At = members["by"], members["binding"], members["at"]
		if len(members) == 3 && sv.At == nil {
			sv.By = nil
		}
	}
	if sv.By == nil || sv.Binding == nil {
		return fmt.Errorf("served: want {\"by\": TEXT, \"binding\": DIGEST} (and \"at\": PATH)")
	}
	if *sv.By == "" || len(*sv.By) > maxServed || !utf8.ValidString(*sv.By) {
		return fmt.Errorf("served: want a text of 1 to %d bytes", maxServed)
	}
	at := ""
	if sv.At != nil {
		if at = *sv.At; at == "" || len(at) > maxServed || !utf8.ValidString(at) {
			return fmt.Errorf("served: want an \"at\" of 1 to %d bytes", maxServed)
		}
	}
	if *sv.Binding != servedBindingAt(l, *sv.By, at) {
		return ErrServedBinding
	}
	l.Served, l.ServedAt = *sv.By, at
	return nil
}

// servedBinding binds what served a listing to every entry it lists (in
// order, by digest), the lists it holds and its instructions: a change
// to any of them, or to what served it, changes the binding.
func servedBinding(l *Listing, served string) string { return servedBindingAt(l, served, "") }

// servedBindingAt is servedBinding with where the file served was found
// (Listing.ServedAt), when known.
func servedBindingAt(l *Listing, served, at string) string {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field("etdi served binding v1")
	field(served)
	if at != "" {
		field("at")
		field(at)
	}
	field(pin.ItemTool)
	for _, e := range l.Tools {
		field(e.Name)
		field(e.Digest.String())
	}
	items := l.Items()
	for _, item := range l.Listed {
		field(item)
		for _, e := range items[item] {
			field(e.Name)
			field(e.Digest.String())
		}
	}
	switch {
	case !l.Live:
		field("not live")
	case l.Instructions == nil:
		field("no instructions")
	default:
		field("instructions")
		field(*l.Instructions)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Launch says how to reach a live server: a command started over stdio
// (Command, with Env and Dir), or a Streamable HTTP endpoint (URL, with
// Header sent to its origin only).
type Launch struct {
	Command []string
	// Env is the environment of the command (etdi's own when nil). It is
	// started without every ETDI_* variable and those named in SecretEnv,
	// but those named in KeepEnv (ServerEnv).
	Env []string
	// SecretEnv names the variables etdi read a secret from (SecretEnv,
	// --header-env); KeepEnv those the host configuration sets for the
	// server on purpose.
	SecretEnv, KeepEnv []string
	Dir                string

	URL    string
	Header http.Header
}

// FetchOptions bound a fetch.
type FetchOptions struct {
	// StartTimeout bounds the wait for the initialize answer (default
	// 20 s); Timeout the whole fetch (default 60 s).
	StartTimeout, Timeout time.Duration
	// ClientVersion is the version etdi reports in clientInfo.
	ClientVersion string
	// Capabilities is the client capabilities object etdi declares at
	// initialize: what the host that will use the server declares (the
	// Capabilities of its row in the host table, or ParseCapabilities of
	// the names it declares). Servers offer some tools only to clients
	// with a capability (roots, sampling, elicitation), so approving a
	// listing made without the host's capabilities leaves those tools
	// unapproved. nil declares none. The server's requests during the
	// listing are answered without a workspace, a model or a person: no
	// roots, and an error for sampling and elicitation (docs/live.md#live-servers).
	Capabilities json.RawMessage
	// Served, for FetchSave, is what serves the server (Origin.Served),
	// resolved before it starts: it is saved with the listing, bound to
	// it, so that approving from the file records it; ServedAt is where
	// the file it names was found (Origin.ServedAt).
	Served, ServedAt string
}

// CapabilityNames are the client capabilities [ParseCapabilities] knows.
var CapabilityNames = mcpclient.CapabilityNames

// ParseCapabilities turns a comma-separated list of [CapabilityNames]
// ("roots,sampling,elicitation") into a capabilities object for
// [FetchOptions.Capabilities]; "none" declares none. An unknown name, a
// name twice or an empty list is an error.
func ParseCapabilities(list string) (json.RawMessage, error) {
	return mcpclient.ParseCapabilities(list)
}

// FetchError reports a server that could not be listed: the stage
// ("start", "initialize", "tools/list") and the end of its standard error.
type FetchError = mcpclient.ServerError

// Fetch connects to a server, initializes, follows every tools/list page
// and stops the server again (a command's process group is always
// reaped). The fetch is bounded whatever the server does (docs/live.md#live-servers,
// "Fetch bounds").
func Fetch(ctx context.Context, s Launch, o FetchOptions) (*Listing, error) {
	opts := mcpclient.Options{StartTimeout: o.StartTimeout, Timeout: o.Timeout, ClientVersion: o.ClientVersion, Capabilities: o.Capabilities}
	var l *mcpclient.Listing
	var err error
	switch {
	case len(s.Command) > 0 && s.URL != "":
		return nil, errors.New("guard: a server has a command or a URL, not both")
	case len(s.Command) > 0:
		l, err = mcpclient.Stdio(ctx, s.Command, s.serverEnv(), s.Dir, opts)
	case s.URL != "":
		l, err = mcpclient.HTTP(ctx, s.URL, s.Header, opts)
	default:
		return nil, errors.New("guard: a server needs a command or a URL")
	}
	if err != nil {
		return nil, err
	}
	return fromClient(l), nil
}

// fromClient is the Listing of what mcpclient fetched.
func fromClient(l *mcpclient.Listing) *Listing {
	out := &Listing{Tools: l.Tools, Metas: l.Metas, ToolMetas: l.ToolMetas, Live: true, Instructions: l.Instructions,
		ServerName: l.ServerName, ServerVersion: l.ServerVersion, ProtocolVersion: l.ProtocolVersion, Pages: l.Pages,
		Prompts: l.Prompts, Resources: l.Resources, Templates: l.Templates}
	if l.Offers.Prompts {
		out.Listed = append(out.Listed, pin.ItemPrompt)
	}
	if l.Offers.Resources {
		out.Listed = append(out.Listed, pin.ItemResource, pin.ItemTemplate)
	}
	return out
}

// List lists a server over a connection the caller opened ([SDKConn] makes
// one of a go-sdk connection): initialize, then every list, as [Fetch] does.
// The connection is not closed.
func List(ctx context.Context, c Conn, o FetchOptions) (*Listing, error) {
	l, err := mcpclient.ListSession(ctx, c, mcpclient.Options{StartTimeout: o.StartTimeout, Timeout: o.Timeout, ClientVersion: o.ClientVersion, Capabilities: o.Capabilities})
	if err != nil {
		return nil, err
	}
	return fromClient(l), nil
}

// Saver returns a function that writes the listing as a saved tools/list
// that [ReadListing] reads back with the same digests (docs/live.md#live-servers, etdi
// fetch): every tool in its canonical form; the prompts, resources and
// resource templates that were listed, beside the tools; the server's
// instructions when it was live; the in-band bundle under _meta; what
// served it (Served), bound to its entries. It first checks that every entry reads back with
// its digest, so the file says exactly what the server served; an
// in-band bundle that is not one is an error. The listing is written
// entry by entry, without a second copy of it.
func (l *Listing) Saver() (func(io.Writer) error, error) {
	for _, list := range [][]etdi.LiveTool{l.Tools, l.Prompts, l.Resources, l.Templates} {
		if err := checkReadsBack(list); err != nil {
			return nil, err
		}
	}
	inband, err := etdi.InbandBundle(append(append([]*strictjson.Value{}, l.Metas...), l.ToolMetas...))
	if err != nil {
		return nil, fmt.Errorf("in-band bundle: %w", err)
	}
	return func(w io.Writer) error {
		sw := newSavedWriter(w)
		sw.list(etdi.ListTools.Member, l.Tools)
		items := l.Items()
		for _, item := range l.Listed {
			sw.list(savedMember[item], items[item])
		}
		return sw.finish(l.Live, l.Instructions, inband, l.Served, l.ServedAt, servedBindingAt(l, l.Served, l.ServedAt))
	}, nil
}

// savedMember is the member of a saved listing that holds each item kind.
var savedMember = map[string]string{pin.ItemPrompt: "prompts", pin.ItemResource: "resources", pin.ItemTemplate: "resourceTemplates"}

// savedWriter writes a saved listing list by list and entry by entry, as
// they come: {"tools": [...], "prompts": [...], ..., "instructions": ...,
// "_meta": {...}}, one canonical entry a line.
type savedWriter struct {
	bw   *bufio.Writer
	open bool // a list is open
	n    int  // entries written to it
}

func newSavedWriter(w io.Writer) *savedWriter {
	return &savedWriter{bw: bufio.NewWriterSize(w, 64<<10)}
}

// begin closes the list being written, if any, and opens member.
func (sw *savedWriter) begin(member string) {
	if sw.open {
		sw.bw.WriteString("\n],\n")
	} else {
		sw.bw.WriteString("{")
	}
	sw.bw.WriteString(strconv.Quote(member))
	sw.bw.WriteString(": [")
	sw.open, sw.n = true, 0
}

// entries writes entries to the open list.
func (sw *savedWriter) entries(entries []etdi.LiveTool) {
	for _, e := range entries {
		if sw.n > 0 {
			sw.bw.WriteByte(',')
		}
		sw.bw.WriteString("\n  ")
		sw.bw.Write(e.Canonical)
		sw.n++
	}
}

// list writes a whole list.
func (sw *savedWriter) list(member string, entries []etdi.LiveTool) {
	sw.begin(member)
	sw.entries(entries)
}

// finish closes the last list, writes the instructions (for a live
// server), the in-band bundle and what served the listing (served, with
// its binding, when known), and flushes.
func (sw *savedWriter) finish(live bool, instructions *string, inband []byte, served, at, binding string) error {
	if !sw.open {
		sw.begin(etdi.ListTools.Member)
	}
	sw.bw.WriteString("\n]")
	if live {
		instr, _ := json.Marshal(instructions)
		fmt.Fprintf(sw.bw, ",\n\"instructions\": %s", instr)
	}
	if inband != nil {
		fmt.Fprintf(sw.bw, ",\n\"_meta\": {%q: %s}", etdi.MetaBundleKey, inband)
	}
	if served != "" {
		m := map[string]string{"by": served, "binding": binding}
		if at != "" {
			m["at"] = at
		}
		sv, _ := json.Marshal(m)
		fmt.Fprintf(sw.bw, ",\n%q: %s", servedMember, sv)
	}
	sw.bw.WriteString("}\n")
	return sw.bw.Flush()
}

// checkReadsBack returns an error naming the first entry that does not
// read back with its digest (etdi.DefinitionDigest of the entry parsed
// again, its canonical form made in one buffer for all entries).
func checkReadsBack(entries []etdi.LiveTool) error {
	var buf []byte
	for _, e := range entries {
		v, err := strictjson.Parse(e.Canonical)
		if err == nil {
			buf = strictjson.AppendCanonical(buf[:0], etdi.StripMeta(v))
		}
		if err != nil || sha256.Sum256(buf) != e.Digest {
			return fmt.Errorf("%q does not read back with its digest (%v)", e.Name, err)
		}
	}
	return nil
}

// Saved counts what [FetchSave] wrote.
type Saved struct {
	// Entries counts the entries of each list written, by its member
	// ("tools", "prompts", "resources", "resourceTemplates").
	Entries map[string]int
	// Pages is the number of tools/list pages.
	Pages int
}

// FetchSave fetches a server as [Fetch] does and writes what it serves to w
// as Saver writes a listing, byte for byte, but page by page as the pages
// arrive: no page is kept once written, so a large listing is held one
// page at a time (docs/live.md#live-servers, etdi fetch). Every bound of a fetch
// applies. Each entry is checked to read back with its digest before it
// is written. Entries, instructions or a _meta that show one of creds are
// returned as findings ([CredentialFindings]); no page that shows one, and
// nothing after it, is written. Then, or on an error, w holds an
// unfinished document that the caller must discard.
func FetchSave(ctx context.Context, s Launch, o FetchOptions, creds []Credential, w io.Writer) (*Saved, []finding.Finding, error) {
	sw := newSavedWriter(w)
	saved := &Saved{Entries: map[string]int{}}
	// skeleton keeps each entry's name and digest, not its definition:
	// what the served binding covers (servedBinding).
	skeleton := &Listing{Live: true}
	var fs []finding.Finding
	opts := mcpclient.Options{StartTimeout: o.StartTimeout, Timeout: o.Timeout, ClientVersion: o.ClientVersion, Capabilities: o.Capabilities,
		Entries: func(list etdi.List, entries []etdi.LiveTool) error {
			if err := checkReadsBack(entries); err != nil {
				return err
			}
			if len(creds) > 0 {
				var l Listing
				switch list {
				case etdi.ListTools:
					l.Tools = entries
				case etdi.ListPrompts:
					l.Prompts = entries
				case etdi.ListResources:
					l.Resources = entries
				case etdi.ListTemplates:
					l.Templates = entries
				}
				fs = append(fs, CredentialFindings(&l, creds)...)
			}
			if len(fs) > 0 {
				return nil // nothing that shows a credential is written
			}
			if _, seen := saved.Entries[list.Member]; !seen {
				sw.begin(list.Member)
			}
			if o.Served != "" {
				names := make([]etdi.LiveTool, len(entries))
				for i, e := range entries {
					names[i] = etdi.LiveTool{Name: e.Name, Digest: e.Digest}
				}
				switch list {
				case etdi.ListTools:
					skeleton.Tools = append(skeleton.Tools, names...)
				case etdi.ListPrompts:
					skeleton.Prompts = append(skeleton.Prompts, names...)
				case etdi.ListResources:
					skeleton.Resources = append(skeleton.Resources, names...)
				case etdi.ListTemplates:
					skeleton.Templates = append(skeleton.Templates, names...)
				}
			}
			saved.Entries[list.Member] += len(entries)
			sw.entries(entries)
			return nil
		}}
	var l *mcpclient.Listing
	var err error
	switch {
	case len(s.Command) > 0 && s.URL != "":
		return nil, nil, errors.New("guard: a server has a command or a URL, not both")
	case len(s.Command) > 0:
		l, err = mcpclient.Stdio(ctx, s.Command, s.Env, s.Dir, opts)
	case s.URL != "":
		l, err = mcpclient.HTTP(ctx, s.URL, s.Header, opts)
	default:
		return nil, nil, errors.New("guard: a server needs a command or a URL")
	}
	if err != nil {
		return nil, nil, err
	}
	saved.Pages = l.Pages
	rest := &Listing{Instructions: l.Instructions, Metas: l.Metas, ToolMetas: l.ToolMetas}
	if fs = append(fs, CredentialFindings(rest, creds)...); len(fs) > 0 {
		return saved, fs, nil
	}
	inband, err := etdi.InbandBundle(append(append([]*strictjson.Value{}, l.Metas...), l.ToolMetas...))
	if err != nil {
		return nil, nil, fmt.Errorf("in-band bundle: %w", err)
	}
	binding := ""
	if o.Served != "" {
		skeleton.Instructions, skeleton.Listed = l.Instructions, fromClient(l).Listed
		binding = servedBindingAt(skeleton, o.Served, o.ServedAt)
	}
	return saved, nil, sw.finish(true, l.Instructions, inband, o.Served, o.ServedAt, binding)
}
