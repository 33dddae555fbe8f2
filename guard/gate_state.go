package guard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/atomicfile"
	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/policy"
	"github.com/etdi-dev/etdi/verify"
)

// Item kinds, as pin names them.
const (
	itemTool     = pin.ItemTool
	itemPrompt   = pin.ItemPrompt
	itemResource = pin.ItemResource
	itemTemplate = pin.ItemTemplate
)

// listOfMethod is the list and item kind each listing method pages.
var listOfMethod = map[string]struct {
	list etdi.List
	item string
}{
	"tools/list":               {etdi.ListTools, itemTool},
	"prompts/list":             {etdi.ListPrompts, itemPrompt},
	"resources/list":           {etdi.ListResources, itemResource},
	"resources/templates/list": {etdi.ListTemplates, itemTemplate},
}

// listOfItem is the list of each item kind.
var listOfItem = map[string]etdi.List{itemTool: etdi.ListTools, itemPrompt: etdi.ListPrompts,
	itemResource: etdi.ListResources, itemTemplate: etdi.ListTemplates}

// exposure is an entry the host received from the gate: its digest, and
// what was observed of it, to compare it again when the pins change.
type exposure struct {
	digest string
	obs    pin.Observed
	// tool is what the call-time policies know of a tool (with policies).
	tool policy.Tool
	// approved says the gate's own listing found the entry approved (an
	// entry of own): obs and tool are what it verified. The approval of
	// the same digest on a page of the host's is not the own listing's.
	approved bool
	// refused is why the gate's own listing did not approve it.
	refused refusal
}

// refusal says why an entry is not let through.
type refusal struct {
	item, name string
	kind       string
	message    string
	digest     string
}

// gateState is what a gate knows of its session; only the jobs goroutine
// reads or writes it.
type gateState struct {
	initializedSent bool
	// protocol is the protocol version the server's answer to initialize
	// names.
	protocol string
	// host is what the host said of itself in initialize.
	host hostSide
	// server, provider, name and sequence are those of the last
	// observation that established the server.
	server, provider, name string
	sequence               uint64
	// inband is the last in-band bundle the server carried.
	inband []byte
	// exposed are the entries the host last received from the gate, by
	// item kind and name: what it may call or get.
	exposed map[string]map[string]exposure
	// seen are the names of the listing the host is paging through, by
	// item kind: a name on two pages is blocked.
	seen map[string]map[string]bool
	// approved are the entries the gate last found approved and unchanged:
	// digest by item kind and name.
	approved map[string]map[string]string
	// own are the entries of the gate's own latest listing of each item
	// kind, by name: their digest, and, of those it found approved, what
	// was observed and what the call-time policies know of them. A host
	// may use an approved one it never listed (usable). ownKnown says the
	// gate knows what the server offers of a kind (its own listing of it
	// succeeded, or the server offers none): a name not in own is then
	// one the server does not offer. ownFail is why the last listing of a
	// kind failed.
	own      map[string]map[string]exposure
	ownKnown map[string]bool
	ownFail  map[string]refusal
	// why says why an entry is not approved.
	why map[string]map[string]refusal
	// stamp is the pin database's state when approved was last computed.
	stamp pinStamp
	// recheckAt, when set, is when to compare again even if the stamp
	// did not change: the store was last read offline.
	recheckAt time.Time
	// toTell are the refusals the host has not been told yet; told those
	// it was, so a host that lists again is not told again.
	toTell []refusal
	told   map[refusal]bool // without digest
	// updateTold is the server_updated notice the host was told (what
	// served the approved definitions -> what serves them now), once.
	updateTold string
	// recorded counts the findings this session appended to the history;
	// at maxSessionRecords it stops (recordCapped): a server that changes
	// its listing without end would grow the history without end.
	recorded     int
	recordCapped bool
	// pendingKinds says, by item kind, whether the gate's latest own
	// listing of it withheld something (savePending).
	pendingKinds map[string]bool
	// serverScopes are the scopes of the server's tools the gate's own
	// last listing found approved: what the call-time policies see of a
	// prompt or resource of the server (docs/policies.md#call-time-policies).
	serverScopes []string
}

// maxSessionRecords bounds the findings one gate session records (a
// record is about a kilobyte).
const maxSessionRecords = 2_000

// maxRefusals bounds what the gate remembers of why entries were refused
// and what it told the host: beyond it, it forgets (and may tell again).
const maxRefusals = 50_000

func (st *gateState) init() {
	st.exposed, st.seen = map[string]map[string]exposure{}, map[string]map[string]bool{}
	st.approved, st.why = map[string]map[string]string{}, map[string]map[string]refusal{}
	for _, item := range []string{itemTool, itemPrompt, itemResource, itemTemplate} {
		st.exposed[item], st.seen[item] = map[string]exposure{}, map[string]bool{}
		st.approved[item], st.why[item] = map[string]string{}, map[string]refusal{}
	}
	st.told = map[refusal]bool{}
	st.own, st.ownKnown, st.ownFail = map[string]map[string]exposure{}, map[string]bool{}, map[string]refusal{}
}

// usable returns the entry of item kind item named name that a request
// of the host uses, and whether it may: the one the host last received
// from the gate, if it did, still approved as received (a host holding a
// stale definition is refused); else the one of the gate's own latest
// listing, approved and unchanged there. What the host was never shown it
// cannot have been shown otherwise than etdi verified it, and what it
// reaches is what the person approved.
func (st *gateState) usable(item, name string) (exposure, bool) {
	if e, ok := st.exposed[item][name]; ok {
		return e, e.digest != "" && st.approved[item][name] == e.digest
	}
	e, ok := st.own[item][name]
	return e, ok && e.approved && e.digest != "" && st.approved[item][name] == e.digest
}

// resourceNotFound is the error code of a read of a resource the server
// does not offer, as the session's protocol version gives it: -32002
// (ResourceNotFoundCode) up to 2025-11-25, -32602 from 2026-07-28 on
// (where clients accept -32002 too).
func (st *gateState) resourceNotFound() int {
	if v := st.protocol; len(v) == len("2026-07-28") && v >= "2026-07-28" {
		return -32602
	}
	return ResourceNotFoundCode
}

// offered reports whether the server offers an entry in the gate's own
// latest listing of its kind, approved or not.
func (st *gateState) offered(item, name string) bool {
	_, ok := st.own[item][name]
	return ok
}

// unknown reports whether the gate knows the server does not offer an
// entry: its own latest listing of the kind succeeded without it.
func (st *gateState) unknown(item, name string) bool {
	return st.ownKnown[item] && !st.offered(item, name)
}

// refuse records why an entry is not let through, to be told.
func (st *gateState) refuse(r refusal) {
	if len(st.why[r.item]) >= maxRefusals {
		st.why[r.item] = map[string]refusal{}
	}
	st.why[r.item][r.name] = r
	delete(st.approved[r.item], r.name)
	key := r
	key.digest = ""
	if len(st.told) >= maxRefusals {
		st.told = map[refusal]bool{}
	}
	if len(st.toTell) >= maxRefusals {
		return
	}
	if !st.told[key] {
		st.told[key] = true
		st.toTell = append(st.toTell, r)
	}
}

// offlineRecheck is how soon a gate that read an etcd store on its
// snapshot alone reads it again.
const offlineRecheck = 5 * time.Second

// pinStamp identifies a state of the pin database: the id of its last
// committed transaction (pin.Generation), which another process's
// approval or revocation changes.
type pinStamp struct {
	txid uint64
	ok   bool
}

// pinStamp returns the stamp of the pin database now.
func (g *Gate) pinStamp() pinStamp {
	txid, err := g.gen.Read()
	return pinStamp{txid, err == nil}
}

// check checks a listing the gate received, as etdi check would: with the
// bundle given out of band, or the one the listing carries in-band, or
// else the one the server carried last (an earlier page).
func (g *Gate) check(l *Listing) (*Report, error) {
	opts := g.opts.Options
	opts.inGate = true
	inband, err := etdi.InbandBundle(append(append([]*etdi.Value{}, l.Metas...), l.ToolMetas...))
	if opts.Bundle == nil && inband == nil && err == nil && g.st.inband != nil {
		opts.Bundle, opts.BundleSource = g.st.inband, "in-band"
	}
	g.st.stamp = g.pinStamp()
	if g.st.recorded >= maxSessionRecords {
		opts.NoRecord = true
	}
	r, err := Check(g.ctx, l, opts)
	if err != nil || r.Observation == nil {
		return r, err
	}
	if g.st.recorded += r.Recorded; g.st.recorded >= maxSessionRecords && !g.st.recordCapped {
		g.st.recordCapped = true
		g.logf("recorded %d findings of this session in the history; the server keeps changing what it lists, and no more are recorded until etdi run starts again", g.st.recorded)
	}
	// The first listing that establishes the server fixes who it is for
	// the session: a page that establishes another (another provider's
	// bundle carried in-band) is not this server's, and nothing of it
	// passes.
	o := r.Observation
	if g.st.server != "" && o.Server != g.st.server {
		return nil, fmt.Errorf("the server, established as %s, now presents itself as %s", g.st.server, o.Server)
	}
	if inband != nil {
		g.st.inband = inband
	}
	g.st.server, g.st.provider, g.st.name, g.st.sequence = o.Server, o.Provider, o.Name, o.Sequence
	return r, nil
}

// reason is why r does not allow an entry: the error finding about it, or
// about the whole server, or that it was not verified.
func reason(r *Report, item, name string, err error) refusal {
	out := refusal{item: item, name: name}
	switch {
	case err != nil:
		out.kind, out.message = string(verify.BundleInvalid), "not checked: "+err.Error()
		return out
	case r == nil:
		out.kind, out.message = string(verify.BundleInvalid), "not checked"
		return out
	}
	var server *verify.Finding
	for i := range r.Findings {
		f := &r.Findings[i]
		if f.Severity != verify.Error {
			continue
		}
		if f.Item == item && f.Tool == name {
			out.kind, out.message = string(f.Kind), f.Message
			return out
		}
		if f.Tool == "" && !f.Kind.AboutInstructions() && server == nil {
			server = f
		}
	}
	if server != nil {
		out.kind, out.message = string(server.Kind), server.Message
		return out
	}
	out.kind, out.message = string(verify.NewTool), fmt.Sprintf("%s %q is not approved", pin.ItemWord(item), name)
	return out
}

// observedIn indexes what r observed, by item and name.
func observedIn(r *Report) map[[2]string]pin.Observed {
	m := map[[2]string]pin.Observed{}
	if r != nil && r.Observation != nil {
		for _, o := range r.Observation.Tools {
			m[[2]string{o.Item, o.Name}] = o
		}
	}
	return m
}

// entries returns the entries of l of an item kind.
func entries(l *Listing, item string) []etdi.LiveTool {
	if item == itemTool {
		return l.Tools
	}
	return l.items()[item]
}

// initialized handles the server's answer to the host's initialize: the
// gate tells the server it is initialized, lists it on its own and
// checks what it lists, then lets the answer through, without
// instructions that are not the approved ones.
func (g *Gate) initialized(m *mcpclient.Message, data []byte, s *slot) {
	if m.Error {
		g.toHost.fill(s, data)
		return
	}
	l, err := mcpclient.ParseInitialize(m.Result)
	if err != nil {
		g.logf("the server's answer to initialize is malformed (%v): the session is not started", err)
		g.toHost.fill(s, g.errorTo(m.ID, -32603, "etdi: the server's answer to initialize is malformed: "+err.Error(), nil))
		return
	}
	if v, ok := g.server.(interface{ SetProtocolVersion(string) }); ok {
		v.SetProtocolVersion(l.ProtocolVersion)
	}
	if err := g.server.Write(g.ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		g.toHost.fill(s, g.errorTo(m.ID, -32603, "etdi: the server went away: "+err.Error(), nil))
		return
	}
	g.st.initializedSent = true
	g.st.protocol = l.ProtocolVersion
	items := []string{itemTool}
	if l.Offers.Prompts {
		items = append(items, itemPrompt)
	}
	if l.Offers.Resources {
		items = append(items, itemResource, itemTemplate)
	}
	// What the server does not offer, it offers none of.
	for _, item := range []string{itemPrompt, itemResource, itemTemplate} {
		if !slices.Contains(items, item) {
			g.st.own[item], g.st.ownKnown[item] = map[string]exposure{}, true
			delete(g.st.ownFail, item)
		}
	}
	r := g.relist(items, l)
	result := m.Result
	// Instructions under another spelling ("Instructions") are read by a
	// host that matches names case-insensitively: never relayed.
	for _, n := range mcpclient.Names(result) {
		if n != "instructions" && strings.EqualFold(n, "instructions") {
			result = mcpclient.WithoutMember(result, n)
			g.logf("withheld the server's instructions sent as %q", clipText(n))
		}
	}
	if l.Instructions != nil && !g.instructionsApproved(r, *l.Instructions) {
		result = mcpclient.WithoutMember(result, "instructions")
		g.logf("withheld the server's instructions: they are not the approved ones (review: %s)", g.review(string(verify.InstructionsChanged)))
	}
	if out, ok := withoutEtdiMetaDeep(result); ok {
		result = out
		g.logf("removed etdi's _meta material from the server's answer to initialize")
	}
	if len(result) == len(m.Result) {
		g.toHost.fill(s, data)
	} else {
		g.toHost.fill(s, mcpclient.EncodeResult(m.ID, result))
	}
	g.tellBlocked()
}

// instructionsApproved reports whether instructions are those approved
// for the server r established: recorded at an approval, unchanged.
func (g *Gate) instructionsApproved(r *Report, instructions string) bool {
	if r == nil || r.Blocked() {
		return false
	}
	for _, f := range r.Findings {
		if f.Kind.AboutInstructions() {
			return false
		}
	}
	var info *pin.ServerInfo
	err := withPins(g.opts.Options, true, func(s *pin.Store) error {
		var err error
		info, err = s.Server(r.Server)
		return err
	})
	return err == nil && info != nil && info.InstructionsKnown && info.Instructions != nil && *info.Instructions == instructions
}

// relist lists the given item kinds of the server on the gate's own
// requests, checks them, and makes what it found approved the gate's view
// of them: what changed is blocked. init, at initialize, carries the
// server's instructions to compare too.
func (g *Gate) relist(items []string, init *mcpclient.Listing) *Report {
	l := &mcpclient.Listing{}
	var lists []etdi.List
	for _, item := range items {
		lists = append(lists, listOfItem[item])
	}
	ctx, cancel := context.WithTimeout(g.ctx, g.opts.Timeout)
	err := mcpclient.ListLists(ctx, g.call, lists, l, 200)
	cancel()
	if err != nil {
		g.logf("could not list the server (%v): nothing it lists is let through", err)
		for _, item := range items {
			why := reason(nil, item, "", err)
			g.refuseAll(item, why)
			g.st.own[item], g.st.ownKnown[item], g.st.ownFail[item] = map[string]exposure{}, false, why
		}
		return nil
	}
	gl := &Listing{Tools: l.Tools, Metas: l.Metas, ToolMetas: l.ToolMetas, Pages: l.Pages,
		Prompts: l.Prompts, Resources: l.Resources, Templates: l.Templates}
	for _, item := range items {
		if item != itemTool {
			gl.Listed = append(gl.Listed, item)
		}
	}
	if init != nil {
		gl.Live, gl.Instructions = true, init.Instructions
		gl.ServerName, gl.ServerVersion, gl.ProtocolVersion = init.ServerName, init.ServerVersion, init.ProtocolVersion
	}
	r, err := g.check(gl)
	if err != nil {
		g.logf("could not check the server's listing (%v): nothing it lists is let through", err)
	}
	withheld := err != nil || r.Blocked()
	if err == nil {
		g.tellUpdated(r)
	}
	obs, given := observedIn(r), givenScopes(r)
	for _, item := range items {
		approved := map[string]string{}
		own := map[string]exposure{}
		for _, e := range entries(gl, item) {
			x := exposure{digest: e.Digest.String()}
			if _, twice := own[e.Name]; twice {
				x.digest = "" // listed twice: neither is usable
			}
			own[e.Name] = x
			if err == nil && r.AllowedItem(item, e.Name) {
				approved[e.Name] = e.Digest.String()
				delete(g.st.why[item], e.Name)
				x.obs, x.approved = obs[[2]string{item, e.Name}], true
				if g.opts.Policies != nil {
					x.tool = policy.ToolOfApproved(g.st.server, g.st.provider, x.obs, given[[2]string{item, e.Name}]) // once, not on every call
				}
				if own[e.Name].digest != "" {
					own[e.Name] = x
				}
			} else {
				why := reason(r, item, e.Name, err)
				why.digest = e.Digest.String()
				g.st.refuse(why)
				if x := own[e.Name]; x.digest != "" {
					x.refused = why
					own[e.Name] = x
				}
				withheld = true
			}
		}
		g.st.approved[item] = approved
		g.st.own[item], g.st.ownKnown[item] = own, true
		delete(g.st.ownFail, item)
		if item == itemTool {
			g.st.serverScopes = approvedScopes(r, approved)
		}
		g.blockChanged(item)
	}
	g.savePending(gl, items, withheld && len(CredentialFindings(gl, g.opts.Credentials)) == 0)
	return r
}

// approvedScopes are the permission scopes of the approved tools r
// observed, with those their approvals gave unsigned ones, sorted, each
// once.
func approvedScopes(r *Report, approved map[string]string) []string {
	var out []string
	given := givenScopes(r)
	for key, o := range observedIn(r) {
		if key[0] != itemTool || approved[key[1]] == "" {
			continue
		}
		for _, p := range o.Permissions {
			out = append(out, p.Scope)
		}
		if o.Signer == pin.Unsigned {
			out = append(out, given[key]...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// savePending saves the gate's own listing for review while it withholds
// something of it, and removes the file it saved once it withholds
// nothing: the review command names the file. items are the item kinds
// the listing l holds (the gate lists some kinds again alone, after their
// list_changed); withheld says whether it withheld something of them.
//
// The file is one per server, of every kind: the kinds listed now replace
// those in the file this session saved, and the kinds not listed now are
// kept from it as they were (with the server's instructions), so that
// listing resources again never drops the withheld tools the printed
// review command is for (docs/gate.md#runtime-gate, "Pending review files"). A listing
// that shows a configured credential is never saved (SPEC.md §14).
func (g *Gate) savePending(l *Listing, items []string, withheld bool) {
	if g.opts.ReadOnly {
		return // nothing is written beside read-only pins
	}
	name := g.st.server
	if name == "" {
		name = pin.UnsignedServerKey(g.opts.Name)
	}
	path := filepath.Join(filepath.Dir(localPins(g.opts.Options)), "pending", safeFileName(name)+".json")
	if abs, err := filepath.Abs(path); err == nil {
		path = abs // the host's working directory is not the person's
	}
	if g.st.pendingKinds == nil {
		g.st.pendingKinds = map[string]bool{}
	}
	// Which kinds withhold something: an entry of this listing that is
	// not approved as listed. A listing the caller withheld nothing of
	// (or one that shows a credential, which is never saved) counts as
	// withholding nothing.
	for _, item := range items {
		g.st.pendingKinds[item] = false
		for _, e := range entries(l, item) {
			if withheld && g.st.approved[item][e.Name] != e.Digest.String() {
				g.st.pendingKinds[item] = true
				break
			}
		}
	}
	still := false
	for _, w := range g.st.pendingKinds {
		still = still || w
	}
	if !still {
		if g.saved == path {
			os.Remove(path)
			g.saved = ""
		}
		return
	}
	saved := *l
	if g.saved == path {
		merged, err := g.mergePending(path, l, items)
		if err != nil {
			g.logf("could not read the listing saved for review (%v): it is saved again with what was listed now", err)
		} else {
			saved = *merged
		}
	}
	if len(CredentialFindings(&saved, g.opts.Credentials)) > 0 {
		return
	}
	// What served the listing is saved with it: approving from the file
	// records it in the pins, as approving the live server would.
	saved.Served, saved.ServedAt = g.opts.Origin.Served(), g.opts.Origin.ServedAt()
	write, err := saved.Saver()
	if err == nil {
		if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
			err = atomicfile.WriteFunc(path, 0o600, write)
		}
	}
	if err != nil {
		g.logf("could not save the listing for review (%v)", err)
		return
	}
	g.saved = path
}

// mergePending is the listing to save for review when l lists only the
// item kinds items: those from l, every other kind (and the server's
// instructions, and the in-band bundle when the tools are not listed
// now) from the file at path, which this session saved.
func (g *Gate) mergePending(path string, l *Listing, items []string) (*Listing, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	old, err := ReadListing(data)
	if err != nil {
		return nil, err
	}
	out := *old
	out.Listed = nil
	if slices.Contains(items, itemTool) {
		out.Tools, out.Metas, out.ToolMetas, out.Pages = l.Tools, l.Metas, l.ToolMetas, l.Pages
	}
	if l.Live {
		out.Live, out.Instructions = true, l.Instructions
		out.ServerName, out.ServerVersion, out.ProtocolVersion = l.ServerName, l.ServerVersion, l.ProtocolVersion
	}
	for _, item := range pin.Items {
		if !slices.Contains(items, item) {
			if slices.Contains(old.Listed, item) {
				out.Listed = append(out.Listed, item)
			}
			continue
		}
		switch item {
		case itemPrompt:
			out.Prompts = l.Prompts
		case itemResource:
			out.Resources = l.Resources
		case itemTemplate:
			out.Templates = l.Templates
		}
		out.Listed = append(out.Listed, item)
	}
	return &out, nil
}

// safeFileName turns a server key into a file name: letters, digits, '.',
// '-' and '_' are kept, anything else becomes '_'. A key that had to be
// changed (or cut at 100 bytes) gets the first 12 hex digits of its
// SHA-256 appended, so two servers never share a file ("c d" and "c_d").
func safeFileName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 100 {
		b = b[:100]
	}
	out := strings.TrimLeft(string(b), ".")
	if out != s {
		sum := sha256.Sum256([]byte(s))
		out += "-" + hex.EncodeToString(sum[:6])
	}
	return out
}

// review is the command that reviews what the gate withheld for a
// finding of kind ("" for several): with --approve where approving can
// resolve it, else the check alone, which shows why (a revoked tool, a
// bad signature, a tool no bundle signs: there is nothing to approve).
func (g *Gate) review(kind string) string {
	approve := " --approve"
	if k := verify.Kind(kind); g.opts.ReadOnly || k.Known() && k.Approval() == verify.NotApprovable && !k.AboutInstructions() {
		approve = ""
	}
	if g.saved != "" {
		return g.opts.Review + " --tools " + termtext.ShellQuote(g.saved) + approve
	}
	if g.opts.ReviewTarget != "" {
		return g.opts.Review + approve + " " + g.opts.ReviewTarget
	}
	return g.opts.Review + approve
}

// refuseAll makes nothing of an item kind approved.
func (g *Gate) refuseAll(item string, why refusal) {
	for name := range g.st.exposed[item] {
		why.name = name
		g.st.refuse(why)
	}
	g.st.approved[item] = map[string]string{}
}

// blockChanged refuses every entry the host received that is no longer
// approved as it received it.
func (g *Gate) blockChanged(item string) {
	for name, e := range g.st.exposed[item] {
		if g.st.approved[item][name] == e.digest {
			continue
		}
		why, ok := g.st.why[item][name]
		if !ok {
			why = refusal{item: item, name: name, kind: string(verify.Removed),
				message: fmt.Sprintf("%s %q is no longer offered as the host received it", pin.ItemWord(item), name)}
		}
		why.digest = e.digest
		g.st.refuse(why)
	}
}

// filterPage checks one page of a listing the host asked for and lets
// through the entries that are approved and unchanged; the rest are
// removed from the page, and the host is told.
func (g *Gate) filterPage(req *hostRequest, m *mcpclient.Message, data []byte, s *slot) {
	lm := listOfMethod[req.method]
	if m.Error {
		g.toHost.fill(s, data)
		return
	}
	page, err := etdi.ParseListResult(m.Result, lm.list, 0, mcpclient.MaxFetchNodes)
	if err != nil {
		g.logf("withheld the server's answer to %s: %v", req.method, err)
		g.toHost.fill(s, g.errorTo(m.ID, -32603, "etdi: withheld the server's answer to "+req.method+": "+err.Error(), nil))
		return
	}
	gl := &Listing{Pages: 1}
	switch lm.item {
	case itemTool:
		gl.Tools, gl.ToolMetas = page.Tools, page.ToolMetas
		if page.Meta != nil {
			gl.Metas = []*etdi.Value{page.Meta}
		}
	case itemPrompt:
		gl.Prompts, gl.Listed = page.Tools, []string{itemPrompt}
	case itemResource:
		gl.Resources, gl.Listed = page.Tools, []string{itemResource}
	case itemTemplate:
		gl.Templates, gl.Listed = page.Tools, []string{itemTemplate}
	}
	r, err := g.check(gl)
	if err != nil {
		g.logf("could not check the server's answer to %s (%v): nothing in it is let through", req.method, err)
	}
	item := lm.item
	if req.first {
		g.st.exposed[item], g.st.seen[item] = map[string]exposure{}, map[string]bool{}
	}
	keep := make([]bool, len(page.Tools))
	all := true
	obs, given := observedIn(r), givenScopes(r)
	for i, e := range page.Tools {
		switch {
		case g.st.seen[item][e.Name]:
			// On an earlier page too: the host cannot tell which it uses.
			delete(g.st.exposed[item], e.Name)
			g.st.refuse(refusal{item: item, name: e.Name, kind: string(verify.Impersonation), digest: e.Digest.String(),
				message: fmt.Sprintf("%s %q is listed on two pages; a client cannot tell which one it uses", pin.ItemWord(item), e.Name)})
		case err == nil && r.AllowedItem(item, e.Name):
			keep[i] = true
			x := exposure{digest: e.Digest.String(), obs: obs[[2]string{item, e.Name}]}
			if g.opts.Policies != nil {
				x.tool = policy.ToolOfApproved(g.st.server, g.st.provider, x.obs, given[[2]string{item, e.Name}]) // once, not on every call
			}
			g.st.exposed[item][e.Name] = x
			g.st.approved[item][e.Name] = e.Digest.String()
			delete(g.st.why[item], e.Name)
		default:
			why := reason(r, item, e.Name, err)
			why.digest = e.Digest.String()
			g.st.refuse(why)
		}
		g.st.seen[item][e.Name] = true
		all = all && keep[i]
	}
	// etdi's own _meta material is outside every digest: it never
	// reaches the host, from an entry or from the result.
	stripped := false
	kept, kerr := mcpclient.MapElements(m.Result, lm.list.Member, func(i int, elem []byte) []byte {
		if !keep[i] {
			return nil
		}
		out := withoutEtdiMeta(elem, false)
		stripped = stripped || len(out) != len(elem)
		return out
	})
	if kerr != nil { // parsed above as an object with that array: cannot happen
		g.toHost.fill(s, g.errorTo(m.ID, -32603, "etdi: withheld the server's answer to "+req.method, nil))
		return
	}
	if out := withoutEtdiMeta(kept, true); len(out) != len(kept) {
		kept, stripped = out, true
	}
	// And at any depth: a member of the page beside the list carries
	// what no digest covers.
	if out, ok := withoutEtdiMetaDeep(kept); ok {
		kept, stripped = out, true
	}
	if all && !stripped {
		g.toHost.fill(s, data) // as the server sent it, byte for byte
	} else {
		g.toHost.fill(s, mcpclient.EncodeResult(m.ID, kept))
	}
	g.tellBlocked()
}

// withoutEtdiMeta returns the JSON object obj without the members of its
// _meta whose names begin with etdi.MetaPrefix (SPEC.md §3: outside the
// digest), and without _meta when that empties it; obj itself when it has
// none. folded also strips them from a member named like _meta in
// another case, and names that begin with the prefix in another case (a
// list result's own _meta, which no digest covers, read by a host that
// matches names case-insensitively).
func withoutEtdiMeta(obj []byte, folded bool) []byte {
	for _, name := range mcpclient.Names(obj) {
		if name != "_meta" && !(folded && strings.EqualFold(name, "_meta")) {
			continue
		}
		meta := mcpclient.Member(obj, name)
		names := mcpclient.Names(meta)
		removed := 0
		for _, n := range names {
			if strings.HasPrefix(n, etdi.MetaPrefix) || folded && len(n) >= len(etdi.MetaPrefix) && strings.EqualFold(n[:len(etdi.MetaPrefix)], etdi.MetaPrefix) {
				meta = mcpclient.WithoutMember(meta, n)
				removed++
			}
		}
		switch {
		case removed == 0:
		case removed == len(names):
			obj = mcpclient.WithoutMember(obj, name)
		default:
			obj = mcpclient.SetMember(obj, name, meta)
		}
	}
	return obj
}

// rejudge asks the pin database again whether what the host received is
// still approved, when the database changed since the gate last read it
// (a revocation by another process): a revoked tool's next call is
// blocked. It only ever withdraws: what it finds approved stays as the
// last full comparison left it.
func (g *Gate) rejudge() {
	stamp := g.pinStamp()
	recheck := !g.st.recheckAt.IsZero() && !time.Now().Before(g.st.recheckAt)
	if !recheck && (stamp == g.st.stamp || (stamp.ok && g.st.stamp.ok && g.audit.onlyOwn(g.st.stamp.txid, stamp.txid))) {
		g.st.stamp = stamp // nothing new, or only call records
		return
	}
	g.st.stamp, g.st.recheckAt = stamp, time.Time{}
	if g.st.server == "" {
		return
	}
	// What the host received, and what it may use without having
	// listed it (the gate's own listing): two observations when an entry
	// is in both with other digests, as StillApproved answers by name.
	// What serves the server too, as the listing was judged: an approval
	// shared under another configuration name holds only for the same
	// artifact (docs/storage.md#one-artifact-under-several-configuration-names), and a variant only for what it was
	// approved served by.
	o := &pin.Observation{Server: g.st.server, Provider: g.st.provider, Name: g.st.name, Sequence: g.st.sequence,
		Served: g.opts.Origin.Served(), ServedAt: g.opts.Origin.ServedAt(), ServedVerified: g.opts.Origin.Verified(), OnUpdate: string(g.opts.Policy.OnUpdate()), InGate: true}
	if err := g.opts.Origin.Unresolved(); err != nil {
		o.Unresolved = err.Error()
	}
	ownObs := *o
	for _, item := range []string{itemTool, itemPrompt, itemResource, itemTemplate} {
		for _, e := range g.st.exposed[item] {
			if e.obs.Canonical != nil {
				o.Tools = append(o.Tools, e.obs)
			}
		}
		for name, e := range g.st.own[item] {
			if e.obs.Canonical == nil {
				continue // not approved: nothing to withdraw
			}
			if x, ok := g.st.exposed[item][name]; ok && x.digest == e.digest {
				continue
			}
			ownObs.Tools = append(ownObs.Tools, e.obs)
		}
	}
	if len(o.Tools)+len(ownObs.Tools) == 0 {
		return
	}
	var still, stillOwn map[string]verify.Kind
	err := withPins(g.opts.Options, true, func(s *pin.Store) error {
		if s.Offline() != nil {
			// An etcd store on its snapshot: what changed may not be
			// in it. Look again soon, whatever the stamp says, so that
			// the change arrives once etcd answers and the snapshot's
			// age is checked against --max-stale.
			g.st.recheckAt = time.Now().Add(offlineRecheck)
		}
		var err error
		if still, err = s.StillApproved(o); err != nil {
			return err
		}
		stillOwn, err = s.StillApproved(&ownObs)
		return err
	})
	if err != nil {
		g.logf("could not read the pin database (%v): nothing is let through until it can be", err)
		g.st.stamp = pinStamp{} // try again at the next decision
		for _, item := range []string{itemTool, itemPrompt, itemResource, itemTemplate} {
			g.refuseAll(item, reason(nil, item, "", err))
		}
		return
	}
	g.refuseWithdrawn(o.Tools, still, "the host received it")
	g.refuseWithdrawn(ownObs.Tools, stillOwn, "etdi last listed it")
}

// refuseWithdrawn refuses the entries of tools that still (from
// pin.StillApproved) says are no longer approved as they were seen.
func (g *Gate) refuseWithdrawn(tools []pin.Observed, still map[string]verify.Kind, seen string) {
	for _, t := range tools {
		kind := still[pin.StillApprovedKey(t.Item, t.Name)]
		if kind == "" {
			continue
		}
		g.st.refuse(refusal{item: t.Item, name: t.Name, kind: string(kind), digest: t.Digest.String(),
			message: fmt.Sprintf("%s %q is no longer approved as %s (%s in the pin database)", pin.ItemWord(t.Item), t.Name, seen, kind)})
	}
}

// decide forwards a tools/call or prompts/get of an entry the host
// received from the gate and that is still approved as received, and
// answers any other with BlockedCode.
func (g *Gate) decide(m *mcpclient.Message, data []byte, s *slot) {
	item, what := itemTool, "tool"
	if m.Method == "prompts/get" {
		item, what = itemPrompt, "prompt"
	}
	if m.ID == nil {
		// A call as a notification: nobody could be told what became of
		// it, and it would go unaudited.
		g.toServer.fill(s)
		g.logf("dropped a %s without an id", m.Method)
		return
	}
	// One name and one set of arguments: with a member twice, or one
	// under another case, etdi and the server could read different ones.
	p, err := strictObject(m.Params, "params", "name", "arguments")
	if err != nil {
		g.refuseParams(m, s, err)
		return
	}
	name, ok, err := strictString(p["name"], "params.name")
	if err != nil || !ok {
		g.toServer.fill(s)
		g.toHost.send(g.errorTo(m.ID, -32602, "etdi: "+m.Method+" names no "+what, nil))
		return
	}
	g.rejudge()
	e, usable := g.st.usable(item, name)
	args := p["arguments"]
	if usable {
		if item == itemPrompt && g.opts.Policies != nil {
			if !g.authorizeEntry(m, s, policy.ActionGet, itemPrompt, name, e, "", args) {
				return
			}
		}
		var po policyOutcome
		if item == itemTool && g.opts.Policies != nil {
			t := e.tool
			d := g.authorize(t, args)
			po = outcomeOf(d)
			switch d.Effect {
			case policy.Forbid:
				g.toServer.fill(s)
				g.refuseCall(m, item, name, e.digest, args, policyRefusal(name, d, ""), po)
				return
			case policy.Ask:
				g.toServer.fill(s)
				g.ask(m, data, name, e, t, d, args)
				return
			}
		}
		g.forward(m, data, s, item, name, e, args, po)
		return
	}
	g.toServer.fill(s)
	why, code := g.whyRefused(item, name)
	g.refuseCallCode(code, m, item, name, e.digest, args, why, policyOutcome{})
}

// whyRefused says why a request of the host for an entry of item kind
// item named name is refused, and with which error code: one the server
// does not offer in the gate's own latest listing is unknown to it
// (-32602, a resource -32002: what the server itself would answer), one
// it offers that etdi withholds, or any while etdi knows nothing of what
// the server offers, is BlockedCode.
func (g *Gate) whyRefused(item, name string) (refusal, int) {
	if g.st.unknown(item, name) {
		code := -32602
		if item == itemResource {
			code = g.st.resourceNotFound()
		}
		return refusal{item: item, name: name, kind: NotListed,
			message: fmt.Sprintf("%s %q is not offered by the server in etdi's latest listing of it", pin.ItemWord(item), name)}, code
	}
	if why, ok := g.st.why[item][name]; ok {
		return why, BlockedCode
	}
	if why, ok := g.st.ownFail[item]; ok {
		why.name = name
		return why, BlockedCode
	}
	if e, ok := g.st.own[item][name]; ok && !e.approved && e.refused.kind != "" {
		// The host's listing approved it; the gate's own did not.
		return e.refused, BlockedCode
	}
	if _, exposed := g.st.exposed[item][name]; exposed || g.st.offered(item, name) {
		return refusal{item: item, name: name, kind: NotListed,
			message: fmt.Sprintf("%s %q is not approved as etdi last listed it", pin.ItemWord(item), name)}, BlockedCode
	}
	return refusal{item: item, name: name, kind: NotListed,
		message: fmt.Sprintf("%s %q is not one etdi listed from the server", pin.ItemWord(item), name)}, BlockedCode
}

// forward sends a call or prompts/get the gate allows to the server, in
// its place s (nil: at the end of what waits), and records it.
func (g *Gate) forward(m *mcpclient.Message, data []byte, s *slot, item, name string, e exposure, args []byte, po policyOutcome) {
	req := &hostRequest{id: m.ID, method: m.Method}
	if item == itemTool {
		req.tool, req.digest = name, e.digest
		req.call = g.audit.begin(g.st.server, name, e.digest, args, po)
		if g.opts.Policies != nil {
			g.session.Called(e.tool, time.Now())
		}
	}
	g.addPending(m.IDKey(), req)
	if s == nil {
		g.toServer.send(data)
		return
	}
	g.toServer.fill(s, data)
}

// refuseCall answers a tools/call or prompts/get with BlockedCode, says so
// in the log and records it.
func (g *Gate) refuseCall(m *mcpclient.Message, item, name, digest string, args []byte, why refusal, po policyOutcome) {
	g.refuseCallCode(BlockedCode, m, item, name, digest, args, why, po)
}

// refuseCallCode refuses a request of the host as refuseCall does, with
// error code code: BlockedCode, -32602 (an unknown tool, prompt or
// template) or ResourceNotFoundCode (an unknown resource; name is its
// URI). The message a person reads and data carry etdi's reason alike.
func (g *Gate) refuseCallCode(code int, m *mcpclient.Message, item, name, digest string, args []byte, why refusal, po policyOutcome) {
	what := "tool"
	switch item {
	case itemPrompt:
		what = "prompt"
	case itemResource, itemTemplate:
		what = "resource"
	}
	if item == itemTool {
		g.audit.blocked(g.st.server, name, digest, args, why.kind, po)
	}
	review := g.review(why.kind)
	switch {
	case (why.kind == PolicyForbid || why.kind == PolicyAsk) && item == itemTool:
		review = g.opts.PolicyReview + " --tool " + termtext.ShellQuote(g.st.server+"/"+name)
	case why.kind == PolicyForbid || why.kind == PolicyAsk:
		review = "the call-time policies " + strings.Join(po.policies, ", ")
	}
	if m.ID == nil {
		g.logf("blocked %s of %s %q: %s: %s (review: %s)", m.Method, what, clipText(name), why.kind, why.message, review)
		return // a notification: nobody to answer
	}
	g.logf("blocked %s of %s %q: %s: %s (review: %s)", m.Method, what, clipText(name), why.kind, why.message, review)
	detail := map[string]any{"etdi": "blocked", "kind": why.kind, "server": g.st.server,
		what: g.mask(clipText(g.secrets.String(name))), "review": g.mask(review), "message": termtext.Escape(g.mask(why.message))}
	if po.decision != "" && (why.kind == PolicyForbid || why.kind == PolicyAsk) {
		detail["policies"] = po.policies
		if po.answer != "" {
			detail["answer"] = po.answer
		}
	}
	msg := fmt.Sprintf("etdi blocked %s of %s %q: %s (review it with: %s)", m.Method, what, name, why.kind, review)
	switch {
	case code != BlockedCode && item == itemResource:
		// MCP's shape: the URI in data, beside etdi's reason.
		detail["uri"] = g.mask(clipText(g.secrets.String(name)))
		msg = fmt.Sprintf("Resource not found: %s (etdi: %s; review it with: %s)", name, termtext.Escape(why.message), review)
	case code != BlockedCode:
		what := what
		if item == itemTemplate {
			what = "resource template"
		}
		msg = fmt.Sprintf("Unknown %s: %s (etdi: %s; review it with: %s)", what, name, termtext.Escape(why.message), review)
	}
	data, _ := json.Marshal(detail)
	g.toHost.send(g.errorTo(m.ID, code, msg, data))
}

// tellBlocked tells the host what the gate withheld since it last told
// it: one notifications/message at level warning, and a line each in the
// log.
func (g *Gate) tellBlocked() {
	if len(g.st.toTell) == 0 {
		return
	}
	type entry struct {
		Item    string `json:"item,omitempty"`
		Name    string `json:"name"`
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}
	var es []entry
	var names []string
	// The review asks for approval when approving can let any of them
	// through; for revoked or unsigned items alone it is the check.
	kind := ""
	if !slices.ContainsFunc(g.st.toTell, func(r refusal) bool {
		k := verify.Kind(r.kind)
		return !k.Known() || k.Approval() != verify.NotApprovable || k.AboutInstructions()
	}) {
		kind = g.st.toTell[0].kind
	}
	for i, r := range g.st.toTell {
		g.logf("withheld %s %q: %s: %s", pin.ItemWord(r.item), clipText(r.name), r.kind, r.message)
		if i < maxTold { // a listing of thousands is told by count beyond these
			// The message may quote free text (a revocation's reason):
			// escaped, as the log and the refusal session escape it.
			es = append(es, entry{r.item, g.mask(clipText(g.secrets.String(r.name))), r.kind, termtext.Escape(g.mask(r.message))})
			names = append(names, pin.ItemRef(r.item, g.mask(clipText(g.secrets.String(r.name)))))
		}
	}
	n := len(g.st.toTell)
	g.st.toTell = nil
	slices.Sort(names)
	more := ""
	if n > len(names) {
		more = fmt.Sprintf(" and %d more", n-len(names))
	}
	msg := fmt.Sprintf("etdi withheld %d item(s) of %s that are not approved as the server offers them now: %s%s (review: %s)",
		n, orUnknown(g.st.server), strings.Join(names, ", "), more, g.review(kind))
	params, _ := json.Marshal(map[string]any{"level": "warning", "logger": EtdiLogger,
		"data": map[string]any{"message": msg, "server": g.st.server, "blocked": es, "review": g.review(kind)}})
	g.toHost.send(mcpclient.EncodeRequest(nil, "notifications/message", params))
}

// tellUpdated tells the host, once a session, that the server was
// updated and its approved definitions are relayed (a server_updated
// warning: trust policy allow, or ask in a gate): one
// notifications/message at level warning, and a line in the log.
func (g *Gate) tellUpdated(r *Report) {
	for _, f := range r.Findings {
		if f.Kind != verify.ServerUpdated || f.Severity != verify.Warning {
			continue
		}
		told := f.PinnedServed + " -> " + f.Served
		if g.st.updateTold == told {
			return
		}
		g.st.updateTold = told
		msg := g.mask(g.secrets.String(f.Message))
		if f.Rule != pin.UpdateAllow {
			msg += " (to approve the update: " + g.review(string(verify.ServerUpdated)) + ")"
		}
		g.logf("%s", msg)
		params, _ := json.Marshal(map[string]any{"level": "warning", "logger": EtdiLogger,
			"data": map[string]any{"message": "etdi: " + termtext.Escape(msg), "server": g.st.server, "kind": string(verify.ServerUpdated),
				"pinnedServed": g.mask(f.PinnedServed), "served": g.mask(f.Served)}})
		g.toHost.send(mcpclient.EncodeRequest(nil, "notifications/message", params))
		return
	}
}

// maxTold bounds the entries one notification names.
const maxTold = 100

func orUnknown(s string) string {
	if s == "" {
		return "the server"
	}
	return s
}

// hasTwice reports whether a name occurs twice, or two names that a JSON
// decoder matching names case-insensitively (encoding/json, Unicode simple
// folding) takes as one. It takes linear time: a message may hold
// millions of names.
func hasTwice(names []string) bool {
	seen := make(map[string]struct{}, len(names))
	for _, n := range names {
		k := foldKey(n)
		if _, ok := seen[k]; ok {
			return true
		}
		seen[k] = struct{}{}
	}
	return false
}

// foldKey returns the same key for two strings exactly when
// strings.EqualFold holds of them: each rune replaced by the least rune of
// its Unicode simple folding orbit ("k", "K" and U+212A KELVIN SIGN all
// become "K"), a byte that is not UTF-8 by U+FFFD, as EqualFold reads it.
func foldKey(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			r -= 'a' - 'A'
		case r >= utf8.RuneSelf:
			least := r
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				least = min(least, f)
			}
			r = least
		}
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}

// decideRef relays a resources/read or resources/subscribe of a resource
// that is approved and unchanged (usable: its URI listed, or matching a
// listed resource template, as the host received it or in the gate's own
// latest listing), or that a tool the host may call returned in this
// session (a resource link or an embedded resource), and a
// completion/complete of such a prompt or resource template. Anything else
// is refused: an entry the server offers that etdi withholds with
// BlockedCode, one it does not offer as the server would answer it
// (-32602, a resource ResourceNotFoundCode).
func (g *Gate) decideRef(m *mcpclient.Message, data []byte, s *slot) {
	uri, prompt, argument, err := readRef(m)
	if err != nil {
		g.refuseParams(m, s, err)
		return
	}
	g.rejudge()
	var (
		ok      bool
		matched exposure
		// item and entry name what is asked for (for the policies, a
		// template the URI matched); refused says why it is refused.
		item, entry = itemPrompt, prompt
		refused     *refusal
		code        = BlockedCode
	)
	switch {
	case prompt != "":
		matched, ok = g.st.usable(itemPrompt, prompt)
	case uri != "" && m.Method == "completion/complete":
		item, entry = itemTemplate, uri
		matched, ok = g.st.usable(itemTemplate, uri)
	case uri != "":
		item, entry = itemResource, uri
		if matched, ok = g.st.usable(itemResource, uri); ok {
			break
		}
		// What a template matches is what the policies see: one spelled
		// otherwise than in normal form could name what they forbid.
		if why := uriNotNormal(uri); why != "" {
			g.refuseParams(m, s, &paramsError{fmt.Sprintf("params.uri %q is not in normal form (RFC 3986): %s", clipText(uri), why)})
			return
		}
		tmpl, e, usable, found := g.matchTemplate(uri)
		if usable {
			ok, matched, item, entry = true, e, itemTemplate, tmpl
			break
		}
		// A resource a tool returned is the host's to read while the tool
		// is approved as it was, whether or not the server lists it (one
		// a tool creates is listed as new once it exists).
		tool, digest, returned := g.returnedBy(uri)
		if returned {
			if x, usable := g.st.usable(itemTool, tool); usable && x.digest == digest {
				ok, matched = true, x
				matched.tool.Name, matched.tool.Annotations = uri, policy.Annotations{}
				break
			}
		}
		_, exposed := g.st.exposed[itemResource][uri]
		switch {
		case exposed || g.st.offered(itemResource, uri):
			// Offered, and withheld: why, below.
		case found:
			// A template the server offers matches, and etdi withholds it.
			why, _ := g.whyRefused(itemTemplate, tmpl)
			why.item, why.name = itemResource, uri
			why.message = fmt.Sprintf("it matches resource template %q: %s", tmpl, why.message)
			refused = &why
		case returned:
			why, _ := g.whyRefused(itemTool, tool)
			refused = &refusal{item: itemResource, name: uri, kind: why.kind,
				message: fmt.Sprintf("tool %q returned it, and that tool is withheld now: %s", tool, why.message)}
		case g.st.ownKnown[itemResource] && g.st.ownKnown[itemTemplate]:
			// Neither listed, matched nor returned: not found, as the
			// server would answer a resource it does not have.
			refused, code = &refusal{item: itemResource, name: uri, kind: NotListed,
				message: fmt.Sprintf("resource %q is not offered by the server in etdi's latest listing of it, matches no resource template of it, and no tool returned it in this session", uri)}, g.st.resourceNotFound()
		case g.st.ownFail[itemResource].kind != "" || g.st.ownFail[itemTemplate].kind != "":
			why := g.st.ownFail[itemResource]
			if why.kind == "" {
				why = g.st.ownFail[itemTemplate]
			}
			why.item, why.name = itemResource, uri
			refused = &why
		default:
			refused = &refusal{item: itemResource, name: uri, kind: NotListed,
				message: fmt.Sprintf("resource %q is not one etdi listed from the server", uri)}
		}
	}
	if ok {
		if g.opts.Policies != nil {
			action, target, args := policy.ActionRead, uri, []byte(nil)
			if m.Method == "completion/complete" {
				action, args = policy.ActionComplete, argument
			}
			if !g.authorizeEntry(m, s, action, item, entry, matched, target, args) {
				return
			}
		}
		if m.ID != nil {
			g.addPending(m.IDKey(), &hostRequest{id: m.ID, method: m.Method})
		}
		g.toServer.fill(s, data)
		return
	}
	g.toServer.fill(s)
	if refused == nil {
		why, c := g.whyRefused(item, entry)
		refused, code = &why, c
	}
	g.refuseCallCode(code, m, refused.item, entry, matched.digest, nil, *refused, policyOutcome{})
}

// matchTemplate returns the first resource template, in name order (the
// decision does not depend on the order of a map), of those the host
// received and those of the gate's own latest listing, that uri matches
// and that is usable; else the first that matches (found, not usable).
func (g *Gate) matchTemplate(uri string) (tmpl string, e exposure, usable, found bool) {
	names := make([]string, 0, len(g.st.exposed[itemTemplate])+len(g.st.own[itemTemplate]))
	for name := range g.st.exposed[itemTemplate] {
		names = append(names, name)
	}
	for name := range g.st.own[itemTemplate] {
		if _, ok := g.st.exposed[itemTemplate][name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	first := ""
	for _, name := range names {
		if !matchesTemplate(name, uri) {
			continue
		}
		if x, ok := g.st.usable(itemTemplate, name); ok {
			return name, x, true, true
		}
		if first == "" {
			first, found = name, true
		}
	}
	return first, exposure{}, false, found
}

// readRef reads, strictly, what a resources/read, resources/subscribe or
// completion/complete names: the resource's URI (params.uri, or
// params.ref.uri of a "ref/resource"), or the prompt's name
// (params.ref.name of a "ref/prompt"), and a completion's argument.
func readRef(m *mcpclient.Message) (uri, prompt string, argument []byte, err error) {
	if m.Method != "completion/complete" {
		p, err := strictObject(m.Params, "params", "uri")
		if err != nil {
			return "", "", nil, err
		}
		uri, _, err = strictString(p["uri"], "params.uri")
		return uri, "", nil, err
	}
	p, err := strictObject(m.Params, "params", "ref", "argument")
	if err != nil {
		return "", "", nil, err
	}
	ref, err := strictObject(p["ref"], "params.ref", "type", "name", "uri")
	if err != nil {
		return "", "", nil, err
	}
	typ, _, err := strictString(ref["type"], "params.ref.type")
	if err != nil {
		return "", "", nil, err
	}
	switch typ {
	case "ref/prompt":
		prompt, _, err = strictString(ref["name"], "params.ref.name")
	case "ref/resource":
		uri, _, err = strictString(ref["uri"], "params.ref.uri")
	}
	return uri, prompt, p["argument"], err
}

// matchesTemplate reports whether uri is an expansion of the URI template
// tmpl (RFC 6570): its literal parts in order, each expression standing for
// any text. It is coarse (an expression matches anything, '/' included),
// never narrower than the template.
func matchesTemplate(tmpl, uri string) bool {
	var parts []string
	rest := tmpl
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			parts = append(parts, rest)
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return false // not a template
		}
		parts = append(parts, rest[:i])
		rest = rest[i+j+1:]
	}
	if len(parts) == 1 {
		return tmpl == uri
	}
	if !strings.HasPrefix(uri, parts[0]) || !strings.HasSuffix(uri[len(parts[0]):], parts[len(parts)-1]) {
		return false
	}
	mid := uri[len(parts[0]) : len(uri)-len(parts[len(parts)-1])]
	for _, lit := range parts[1 : len(parts)-1] {
		k := strings.Index(mid, lit)
		if k < 0 {
			return false
		}
		mid = mid[k+len(lit):]
	}
	return true
}
