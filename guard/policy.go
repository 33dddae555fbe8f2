package guard

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/confusable"
	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/policy"
)

// Kinds of the calls the call-time policies refuse (docs/policies.md#call-time-policies), named in
// BlockedCode errors and call records.
const (
	// PolicyForbid: a forbid policy matched the call, or no permit did.
	PolicyForbid = "policy_forbid"
	// PolicyAsk: a policy asks the person before the call, and the person
	// did not accept it (or could not be asked).
	PolicyAsk = "policy_ask"
)

// Answers to a call put to the person, in call records and errors.
const (
	AnswerAccept      = "accept"
	AnswerDecline     = "decline"
	AnswerCancel      = "cancel"
	AnswerTimeout     = "timeout"
	AnswerUnsupported = "unsupported" // the host declared no elicitation capability
	AnswerInvalid     = "invalid"     // an answer that is not an accept, decline or cancel
	AnswerBusy        = "busy"        // too many calls wait for the person already
	AnswerEnded       = "ended"       // the session ended first
	// AnswerUnshown: the question could not show the arguments whole (too
	// long, not JSON of etdi's profile, or with member names a server may
	// take as one or that look alike), so the person was not asked.
	AnswerUnshown = "unshown"
)

// maxAsking bounds the calls that wait for the person at once: a model
// that calls in a loop gets refusals beyond it, not a pile of questions.
const maxAsking = 8

// policyOutcome is what the policies decided of a call, for its record.
type policyOutcome struct {
	decision string
	policies []string
	answer   string
}

func outcomeOf(d policy.Decision) policyOutcome {
	return policyOutcome{decision: d.Effect.String(), policies: d.Policies}
}

// askWait is a call waiting for the person's answer.
type askWait struct {
	// m and data are the call as the host sent it, name its tool, e the
	// tool as the host received it, args its arguments, d the decision
	// that asks; server is the session's server.
	m            *mcpclient.Message
	data         []byte
	server, name string
	e            exposure
	args         []byte
	d            policy.Decision
	// withdrawn is closed when the host cancels the call: the question is
	// withdrawn too.
	withdrawn chan struct{}
}

// outcome is what the policies decided of the call, with the person's
// answer.
func (w *askWait) outcome(answer string) policyOutcome {
	po := outcomeOf(w.d)
	po.answer = answer
	return po
}

// hostSide is what the host said of itself in initialize.
type hostSide struct {
	// known says the host's initialize was read: the first one is the
	// session's.
	known bool
	name  string
	// elicit says the host can put a form to the person
	// (capabilities.elicitation, with form mode or no mode named).
	elicit bool
}

// readInitialize reads the host's name and whether it can ask the person
// from its initialize params, strictly (strictObject at every level it
// reads): a duplicate or case variant of clientInfo, its name, or of the
// capabilities it reads could name another principal to the policies than
// the server sees.
func readInitialize(params []byte) (hostSide, error) {
	p, err := strictObject(params, "params", "clientInfo", "capabilities")
	if err != nil {
		return hostSide{}, err
	}
	info, err := strictObject(p["clientInfo"], "params.clientInfo", "name")
	if err != nil {
		return hostSide{}, err
	}
	h := hostSide{known: true}
	if h.name, _, err = strictString(info["name"], "params.clientInfo.name"); err != nil {
		return hostSide{}, err
	}
	caps, err := strictObject(p["capabilities"], "params.capabilities", "elicitation")
	if err != nil {
		return hostSide{}, err
	}
	if e := caps["elicitation"]; e != nil && string(e) != "null" {
		modes, err := strictObject(e, "params.capabilities.elicitation", "form", "url")
		if err != nil {
			return hostSide{}, err
		}
		// {} is form mode (MCP 2025-06-18); a host that names modes must
		// name form.
		h.elicit = modes["form"] != nil || modes["url"] == nil
	}
	return h, nil
}

// authorize decides a call of an approved tool the host received.
func (g *Gate) authorize(t policy.Tool, args []byte) policy.Decision {
	return g.opts.Policies.Authorize(policy.Request{Host: g.st.host.name, Tool: t,
		Context: g.session.Context(t.Name, args, time.Now())})
}

// authorizeEntry decides, with the call-time policies, a prompts/get
// (ActionGet), resources/read or resources/subscribe (ActionRead) or
// completion/complete (ActionComplete) of an approved entry e of item
// kind item, named name, the host received; uri is the URI asked for (or
// the template completed). Allowed, it counts for the session and true
// is returned; otherwise the request is refused (s filled) and false
// returned. etdi puts tool calls alone to the person: a policy that asks
// refuses the others.
func (g *Gate) authorizeEntry(m *mcpclient.Message, s *slot, action, item, name string, e exposure, uri string, args []byte) bool {
	t := e.tool
	t.Name = name
	t.Scopes = g.st.serverScopes
	now := time.Now()
	ctx := g.session.ContextOf(action, name, args, now)
	d := g.opts.Policies.Authorize(policy.Request{Host: g.st.host.name, Action: action, Tool: t, URI: uri, Context: ctx})
	// A server that cleans the path reads "file:///etc/passwd/" as
	// "file:///etc/passwd": what the policies refuse of either is refused.
	if trimmed := trimSlashes(uri); action == policy.ActionRead && d.Effect == policy.Allow && trimmed != uri {
		if d2 := g.opts.Policies.Authorize(policy.Request{Host: g.st.host.name, Action: action, Tool: t, URI: trimmed, Context: ctx}); d2.Effect != policy.Allow {
			d = d2
		}
	}
	// A server reading files drops the query and the fragment, and reads
	// "file://localhost/etc/passwd" (or, reading the path alone, any
	// host) and "file:/etc/passwd" as "file:///etc/passwd": what a
	// policy forbids (or asks about) of the file is refused however the
	// URI names it. Only a policy that names the file refuses it: a read
	// that no permit names in that spelling is decided as asked.
	if action == policy.ActionRead && d.Effect == policy.Allow {
		for _, u := range fileSpellings(uri) {
			if d2 := g.opts.Policies.Authorize(policy.Request{Host: g.st.host.name, Action: action, Tool: t, URI: u, Context: ctx}); d2.Effect != policy.Allow && !d2.NoPermit() {
				d = d2
				break
			}
		}
	}
	if d.Effect == policy.Allow {
		g.session.Did(action, t, now)
		return true
	}
	g.toServer.fill(s)
	r := refusal{item: item, name: name, kind: PolicyForbid}
	what := pin.ItemWord(item)
	verb := map[string]string{policy.ActionGet: "getting", policy.ActionRead: "reading", policy.ActionComplete: "completing"}[action]
	shown := name
	if uri != "" {
		what, shown = "resource", uri
	}
	switch {
	case d.Effect == policy.Ask:
		r.kind = PolicyAsk
		r.message = fmt.Sprintf("policy %s asks the person before %s %s %q (%s); etdi asks about tool calls only, so it is refused",
			strings.Join(d.Policies, ", "), verb, what, shown, strings.Join(d.Reasons, "; "))
	default:
		r.message = fmt.Sprintf("policy %s forbids %s %s %q", strings.Join(d.Policies, ", "), verb, what, shown)
	}
	po := outcomeOf(d)
	if d.Effect == policy.Ask {
		po.answer = AnswerUnsupported
	}
	g.refuseCall(m, item, shown, e.digest, args, r, po)
	return false
}

// trimSlashes is uri without its trailing slashes, unless they are all
// its path ("file:///", "x:/"): uri itself then.
func trimSlashes(uri string) string {
	trimmed := strings.TrimRight(uri, "/")
	if trimmed == uri || strings.HasSuffix(trimmed, ":") || strings.HasSuffix(trimmed, ":/") {
		return uri
	}
	return trimmed
}

// fileSpellings are the other URIs that name the resource uri names to a
// server that reads files: without its fragment, without its query and
// fragment, each also percent-decoded (a backslash then a slash too),
// each with its host dropped, with the empty host a
// "file:/" URI leaves out (RFC 8089), each also
// without trailing slashes (trimSlashes); not uri itself, each once.
func fileSpellings(uri string) []string {
	var out []string
	add := func(u string) {
		for _, v := range []string{u, trimSlashes(u)} {
			if v != uri && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	bases := []string{uri}
	if i := strings.IndexByte(uri, '#'); i >= 0 {
		bases = append(bases, uri[:i])
	}
	if i := strings.IndexAny(uri, "?#"); i >= 0 {
		bases = append(bases, uri[:i])
	}
	// A server that decodes the path reads "file:///etc%2Fpasswd" as
	// "/etc/passwd" (and, on Windows, "%5C" as a separator).
	for _, b := range bases {
		if d, err := url.PathUnescape(b); err == nil && d != b {
			bases = append(bases, d)
			if w := strings.ReplaceAll(d, "\\", "/"); w != d {
				bases = append(bases, w)
			}
		}
	}
	for _, b := range bases {
		add(b)
		if strings.HasPrefix(b, "file:/") && !strings.HasPrefix(b, "file://") {
			add("file://" + b[len("file:"):]) // "file:/etc/passwd" (RFC 8089)
		}
		// A host: "localhost" is this machine (RFC 8089), and a server
		// that reads the URI's path alone ignores any other.
		if rest, ok := strings.CutPrefix(b, "file://"); ok && rest != "" && rest[0] != '/' {
			if i := strings.IndexAny(rest, "/?#"); i > 0 {
				add("file://" + rest[i:])
			}
		}
	}
	return out
}

// policyRefusal is the refusal of a call the policies did not allow.
func policyRefusal(name string, d policy.Decision, answer string) refusal {
	r := refusal{item: itemTool, name: name}
	switch {
	case d.Effect == policy.Ask:
		r.kind = PolicyAsk
		r.message = fmt.Sprintf("policy %s asks the person before calling tool %q (%s), and the call was not accepted: %s",
			strings.Join(d.Policies, ", "), name, strings.Join(d.Reasons, "; "), answerText(answer))
	case d.NoPermit():
		r.kind, r.message = PolicyForbid, fmt.Sprintf("no policy permits calling tool %q", name)
	default:
		r.kind, r.message = PolicyForbid, fmt.Sprintf("policy %s forbids calling tool %q", strings.Join(d.Policies, ", "), name)
	}
	return r
}

func answerText(a string) string {
	switch a {
	case AnswerDecline:
		return "the person declined it"
	case AnswerCancel:
		return "the person dismissed the question"
	case AnswerTimeout:
		return "no answer came in time"
	case AnswerUnsupported:
		return "the host cannot ask (it declared no elicitation capability)"
	case AnswerBusy:
		return fmt.Sprintf("%d calls wait for the person already", maxAsking)
	case AnswerEnded:
		return "the session ended first"
	case AnswerUnshown:
		return "its arguments cannot be shown to the person whole (too long, not JSON of etdi's profile, or with member names a server may take as one or that look alike)"
	}
	return "the host's answer was not an acceptance of this call"
}

// ask puts a call the policies ask about to the person, through the
// host's elicitation, and forwards it only if the person accepts; it
// returns at once (the answer is awaited in a goroutine of its own).
func (g *Gate) ask(m *mcpclient.Message, data []byte, name string, e exposure, t policy.Tool, d policy.Decision, args []byte) {
	answer := ""
	summary, whole := policy.ShowArguments(args)
	switch {
	case !g.st.host.elicit:
		answer = AnswerUnsupported
	case !whole || lookalikeNames(args):
		// The person is asked only about what they can see, as a server
		// reads it.
		answer = AnswerUnshown
	case g.askingCount() >= maxAsking:
		answer = AnswerBusy
	}
	if answer != "" {
		po := outcomeOf(d)
		po.answer = answer
		g.refuseCall(m, itemTool, name, e.digest, args, policyRefusal(name, d, answer), po)
		return
	}
	w := &askWait{m: m, data: data, server: g.st.server, name: name, e: e, args: args, d: d, withdrawn: make(chan struct{})}
	g.pendMu.Lock()
	g.asking[m.IDKey()] = w
	g.pendMu.Unlock()
	params := elicitation(t, d, summary)
	go func() {
		answer := g.askHost(params, w.withdrawn)
		g.jobs.add(func() { g.asked(w, answer) })
	}()
}

func (g *Gate) askingCount() int {
	g.pendMu.Lock()
	defer g.pendMu.Unlock()
	return len(g.asking)
}

// asked acts on the person's answer: an accepted call is forwarded if its
// tool is still approved as the host received it and no policy now
// forbids it outright (the session moved on while the person read).
func (g *Gate) asked(w *askWait, answer string) {
	if answer == AnswerEnded {
		return // answerPending answers it, after every job
	}
	m, name, e, args := w.m, w.name, w.e, w.args
	// The call waits by its id; the host may have cancelled it (withdraw)
	// and used the id again for another call asked about now: this
	// answer is about w alone.
	g.pendMu.Lock()
	waiting := g.asking[m.IDKey()] == w
	if waiting {
		delete(g.asking, m.IDKey())
	}
	g.pendMu.Unlock()
	if !waiting {
		return // the session ended and the call was answered, or the host cancelled it
	}
	po := w.outcome(answer)
	if answer != AnswerAccept {
		g.refuseCall(m, itemTool, name, e.digest, args, policyRefusal(name, w.d, answer), po)
		return
	}
	g.rejudge()
	now, usable := g.st.usable(itemTool, name)
	if !usable || now.digest != e.digest {
		why, ok := g.st.why[itemTool][name]
		if !ok {
			why = refusal{item: itemTool, name: name, kind: NotListed,
				message: fmt.Sprintf("tool %q changed while the person was asked about the call", name)}
		}
		g.refuseCall(m, itemTool, name, e.digest, args, why, po)
		return
	}
	if again := g.authorize(now.tool, args); again.Effect == policy.Forbid {
		po = outcomeOf(again)
		po.answer = answer
		g.refuseCall(m, itemTool, name, e.digest, args, policyRefusal(name, again, ""), po)
		return
	}
	g.forward(m, w.data, nil, itemTool, name, now, args, po)
}

// withdraw withdraws the question about a call the host cancelled (in
// the jobs goroutine): the call is never forwarded, whatever the answer.
func (g *Gate) withdraw(key string) bool {
	g.pendMu.Lock()
	w := g.asking[key]
	delete(g.asking, key)
	g.pendMu.Unlock()
	if w == nil {
		return false
	}
	close(w.withdrawn)
	g.audit.blocked(w.server, w.name, w.e.digest, w.args, PolicyAsk, w.outcome(AnswerCancel))
	g.logf("the host cancelled its call of tool %q while the person was asked about it: it is not forwarded", clipText(w.name))
	return true
}

// askHost sends elicitation/create to the host and waits for its answer,
// within the ask timeout, or until the call is withdrawn; it tells the
// host when it stops waiting.
func (g *Gate) askHost(params []byte, withdrawn <-chan struct{}) string {
	id, key, ch := g.hostOwn.add()
	defer g.hostOwn.take(key)
	g.toHost.send(mcpclient.EncodeRequest(id, "elicitation/create", params))
	timer := time.NewTimer(g.opts.AskTimeout)
	defer timer.Stop()
	withdraw := func(reason string) {
		cancel, _ := json.Marshal(map[string]any{"requestId": json.RawMessage(id), "reason": reason})
		g.toHost.send(mcpclient.EncodeRequest(nil, "notifications/cancelled", cancel))
	}
	select {
	case a := <-ch:
		return readAnswer(a)
	case <-timer.C:
		withdraw("etdi: no answer in time; the call was refused")
		return AnswerTimeout
	case <-withdrawn:
		withdraw("etdi: the call was cancelled")
		return AnswerCancel
	case <-g.ctx.Done():
		return AnswerEnded
	case <-g.gone:
		return AnswerEnded
	}
}

// readAnswer reads the host's answer to elicitation/create: an acceptance
// is action "accept" with content {"allow": true}, each member once.
func readAnswer(m *mcpclient.Message) string {
	if m.Error || hasTwice(mcpclient.Names(m.Result)) {
		return AnswerInvalid
	}
	var action string
	if json.Unmarshal(mcpclient.Member(m.Result, "action"), &action) != nil {
		return AnswerInvalid
	}
	switch action {
	case AnswerDecline, AnswerCancel:
		return action
	case AnswerAccept:
		content := mcpclient.Member(m.Result, "content")
		if hasTwice(mcpclient.Names(content)) || string(mcpclient.Member(content, "allow")) != "true" {
			return AnswerInvalid
		}
		return AnswerAccept
	}
	return AnswerInvalid
}

// elicitation is the params of the question put to the person: why the
// policy asks, the tool and its scopes, and the arguments (their summary,
// policy.ShowArguments), every piece of text escaped.
func elicitation(t policy.Tool, d policy.Decision, summary string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "etdi: a policy asks you before this call.\n\nTool: %s/%s", termtext.Escape(t.Server), termtext.Escape(t.Name))
	if t.Version != "" {
		fmt.Fprintf(&b, " %s", termtext.Escape(t.Version))
	}
	if t.Signed {
		fmt.Fprintf(&b, ", signed by %s", termtext.Escape(t.Provider))
	} else {
		b.WriteString(", not signed")
	}
	scopes := "none"
	if len(t.Scopes) > 0 {
		scopes = termtext.Escape(strings.Join(t.Scopes, ", "))
	}
	fmt.Fprintf(&b, "\nScopes: %s\n", scopes)
	for i, id := range d.Policies {
		fmt.Fprintf(&b, "Why: %s (policy %s)\n", termtext.Escape(d.Reasons[i]), termtext.Escape(id))
	}
	fmt.Fprintf(&b, "\nArguments:\n%s\n\nAllow this call?", summary)
	params, _ := json.Marshal(map[string]any{
		"message": b.String(),
		"requestedSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{"allow": map[string]any{
				"type": "boolean", "title": "Allow this call", "default": false,
				"description": "Tick to let etdi forward this one call to the server.",
			}},
			"required": []string{"allow"},
		},
	})
	return params
}

// lookalikeNames reports whether an object in the arguments (JSON) holds
// two member names that a server matching names case-insensitively takes
// as one (hasTwice), or that look alike (confusable.Skeleton: "p\u0430th"
// and "path", "dry_run" and "dry-run"): the person cannot tell from the
// question which one the tool acts on.
func lookalikeNames(args []byte) bool {
	v, err := etdi.ParseJSON(args)
	if err != nil {
		return false // not shown whole anyway
	}
	var walk func(v *etdi.Value) bool
	walk = func(v *etdi.Value) bool {
		switch v.Kind {
		case etdi.Object:
			seen := make(map[string]bool, len(v.Members))
			for _, m := range v.Members {
				k := confusable.Skeleton(foldKey(m.Name))
				if seen[k] || walk(m.Value) {
					return true
				}
				seen[k] = true
			}
		case etdi.Array:
			for _, e := range v.Elems {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// CallDecision is what the call-time policies decide of the first call of
// one tool in a session: what the person approving it should know.
type CallDecision struct {
	Tool string `json:"tool"`
	policy.Decision
}

// givenScopes are the scopes the approvals r's comparison matched gave
// unsigned items (pin.ToolState.Scopes), by item and name: only an item
// that matches its approval ("ok") has them, with that approval's digest.
func givenScopes(r *Report) map[[2]string][]string {
	m := map[[2]string][]string{}
	if r == nil {
		return m
	}
	for _, st := range r.Tools {
		if st.Status == "ok" && len(st.Scopes) > 0 {
			m[[2]string{st.Item, st.Name}] = st.Scopes
		}
	}
	return m
}

// CallDecisions decides, for every tool r observed, its first call in a
// fresh session (no earlier calls, arguments {}), from a host named host.
// Policies that read the session (policy.Set.Session) may decide later
// calls otherwise. A tool that matches its approval has the scopes the
// approval gave it (r after the approval shows those of the approval).
// nil when r established nothing.
func CallDecisions(r *Report, set *policy.Set, host string) []CallDecision {
	if r == nil || r.Observation == nil || set == nil {
		return nil
	}
	var out []CallDecision
	given := givenScopes(r)
	for _, o := range r.Observation.Tools {
		if o.Item != itemTool {
			continue
		}
		t := policy.ToolOfApproved(r.Observation.Server, r.Observation.Provider, o, given[[2]string{o.Item, o.Name}])
		d := set.Authorize(policy.Request{Host: host, Tool: t,
			Context: policy.Context{ArgumentsDigest: policy.ArgumentsDigest(nil)}})
		out = append(out, CallDecision{Tool: o.Name, Decision: d})
	}
	return out
}
