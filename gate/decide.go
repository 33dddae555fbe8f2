package gate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/policy"
)

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
		refused, code = g.unusableResource(uri, tmpl, tool, found, returned)
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

// unusableResource says why resource uri, which the host may not read,
// is refused, and with which error code: it matches template tmpl (found)
// that etdi withholds, tool returned it (returned) and is withheld now,
// neither (not found, as the server would answer), or etdi's own listing
// of the server failed. nil when the server offers it and etdi withholds
// it: whyRefused says why.
func (g *Gate) unusableResource(uri, tmpl, tool string, found, returned bool) (*refusal, int) {
	_, exposed := g.st.exposed[itemResource][uri]
	switch {
	case exposed || g.st.offered(itemResource, uri):
		// Offered, and withheld: why, below.
	case found:
		// A template the server offers matches, and etdi withholds it.
		why, _ := g.whyRefused(itemTemplate, tmpl)
		why.item, why.name = itemResource, uri
		why.message = fmt.Sprintf("it matches resource template %q: %s", tmpl, why.message)
		return &why, BlockedCode
	case returned:
		why, _ := g.whyRefused(itemTool, tool)
		return &refusal{item: itemResource, name: uri, kind: why.kind,
			message: fmt.Sprintf("tool %q returned it, and that tool is withheld now: %s", tool, why.message)}, BlockedCode
	case g.st.ownKnown[itemResource] && g.st.ownKnown[itemTemplate]:
		// Neither listed, matched nor returned: not found, as the
		// server would answer a resource it does not have.
		return &refusal{item: itemResource, name: uri, kind: NotListed,
			message: fmt.Sprintf("resource %q is not offered by the server in etdi's latest listing of it, matches no resource template of it, and no tool returned it in this session", uri)}, g.st.resourceNotFound()
	case g.st.ownFail[itemResource].kind != "" || g.st.ownFail[itemTemplate].kind != "":
		why := g.st.ownFail[itemResource]
		if why.kind == "" {
			why = g.st.ownFail[itemTemplate]
		}
		why.item, why.name = itemResource, uri
		return &why, BlockedCode
	default:
		return &refusal{item: itemResource, name: uri, kind: NotListed,
			message: fmt.Sprintf("resource %q is not one etdi listed from the server", uri)}, BlockedCode
	}
	return nil, BlockedCode
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
