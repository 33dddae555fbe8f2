package gate

import (
	"context"
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

// relist lists the given item kinds of the server on the gate's own
// requests, checks them, and makes what it found approved the gate's view
// of them: what changed is blocked. init, at initialize, carries the
// server's instructions to compare too.
func (g *Gate) relist(items []string, init *mcpclient.Listing) *guard.Report {
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
	gl := &guard.Listing{Tools: l.Tools, Metas: l.Metas, ToolMetas: l.ToolMetas, Pages: l.Pages,
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
	obs, given := observedIn(r), r.GivenScopes()
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
	g.savePending(gl, items, withheld && len(guard.CredentialFindings(gl, g.opts.Credentials)) == 0)
	return r
}

// approvedScopes are the permission scopes of the approved tools r
// observed, with those their approvals gave unsigned ones, sorted, each
// once.
func approvedScopes(r *guard.Report, approved map[string]string) []string {
	var out []string
	given := r.GivenScopes()
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
			why = refusal{item: item, name: name, kind: string(finding.Removed),
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
	page, err := etdi.ParseList(m.Result, etdi.ListOptions{Lists: []etdi.List{lm.list}, Result: true, Limit: mcpclient.MaxFetchNodes})
	if err != nil {
		g.logf("withheld the server's answer to %s: %v", req.method, err)
		g.toHost.fill(s, g.errorTo(m.ID, -32603, "etdi: withheld the server's answer to "+req.method+": "+err.Error(), nil))
		return
	}
	gl := &guard.Listing{Pages: 1}
	switch lm.item {
	case itemTool:
		gl.Tools, gl.ToolMetas = page.Tools, page.ToolMetas
		if page.Meta != nil {
			gl.Metas = []*strictjson.Value{page.Meta}
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
	obs, given := observedIn(r), r.GivenScopes()
	for i, e := range page.Tools {
		switch {
		case g.st.seen[item][e.Name]:
			// On an earlier page too: the host cannot tell which it uses.
			delete(g.st.exposed[item], e.Name)
			g.st.refuse(refusal{item: item, name: e.Name, kind: string(finding.Impersonation), digest: e.Digest.String(),
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
	var still, stillOwn map[string]finding.Kind
	err := g.opts.Options.WithPins(true, func(s *pin.Store) error {
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
func (g *Gate) refuseWithdrawn(tools []pin.Observed, still map[string]finding.Kind, seen string) {
	for _, t := range tools {
		kind := still[pin.StillApprovedKey(t.Item, t.Name)]
		if kind == "" {
			continue
		}
		g.st.refuse(refusal{item: t.Item, name: t.Name, kind: string(kind), digest: t.Digest.String(),
			message: fmt.Sprintf("%s %q is no longer approved as %s (%s in the pin database)", pin.ItemWord(t.Item), t.Name, seen, kind)})
	}
}
