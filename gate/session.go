package gate

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/policy"
	"github.com/etdi-dev/etdi/strictjson"
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
func (g *Gate) check(l *guard.Listing) (*guard.Report, error) {
	opts := g.opts.Options
	opts.InGate = true
	inband, err := etdi.InbandBundle(append(append([]*strictjson.Value{}, l.Metas...), l.ToolMetas...))
	if opts.Bundle == nil && inband == nil && err == nil && g.st.inband != nil {
		opts.Bundle, opts.BundleSource = g.st.inband, "in-band"
	}
	g.st.stamp = g.pinStamp()
	if g.st.recorded >= maxSessionRecords {
		opts.NoRecord = true
	}
	r, err := guard.Check(g.ctx, l, opts)
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
func reason(r *guard.Report, item, name string, err error) refusal {
	out := refusal{item: item, name: name}
	switch {
	case err != nil:
		out.kind, out.message = string(finding.BundleInvalid), "not checked: "+err.Error()
		return out
	case r == nil:
		out.kind, out.message = string(finding.BundleInvalid), "not checked"
		return out
	}
	var server *finding.Finding
	for i := range r.Findings {
		f := &r.Findings[i]
		if f.Severity != finding.Error {
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
	out.kind, out.message = string(finding.NewTool), fmt.Sprintf("%s %q is not approved", pin.ItemWord(item), name)
	return out
}

// observedIn indexes what r observed, by item and name.
func observedIn(r *guard.Report) map[[2]string]pin.Observed {
	m := map[[2]string]pin.Observed{}
	if r != nil && r.Observation != nil {
		for _, o := range r.Observation.Tools {
			m[[2]string{o.Item, o.Name}] = o
		}
	}
	return m
}

// entries returns the entries of l of an item kind.
func entries(l *guard.Listing, item string) []etdi.LiveTool {
	if item == itemTool {
		return l.Tools
	}
	return l.Items()[item]
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
		g.logf("withheld the server's instructions: they are not the approved ones (review: %s)", g.review(string(finding.InstructionsChanged)))
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
func (g *Gate) instructionsApproved(r *guard.Report, instructions string) bool {
	if r == nil || r.Blocked() {
		return false
	}
	for _, f := range r.Findings {
		if f.Kind.AboutInstructions() {
			return false
		}
	}
	var info *pin.ServerInfo
	err := g.opts.Options.WithPins(true, func(s *pin.Store) error {
		var err error
		info, err = s.Server(r.Server)
		return err
	})
	return err == nil && info != nil && info.InstructionsKnown && info.Instructions != nil && *info.Instructions == instructions
}
