package gate

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/policy"
)

// Kinds of the calls the call-time policies refuse (docs/policies.md#call-time-policies), named in
// [BlockedCode] errors and call records.
const (
	// PolicyForbid: a forbid policy matched the call, or no permit did.
	PolicyForbid = "policy_forbid"
	// PolicyAsk: a policy asks the person before the call, and the person
	// did not accept it (or could not be asked).
	PolicyAsk = "policy_ask"
)

// policyOutcome is what the policies decided of a call, for its record.
type policyOutcome struct {
	decision string
	policies []string
	answer   Answer
}

func outcomeOf(d policy.Decision) policyOutcome {
	return policyOutcome{decision: d.Effect.String(), policies: d.Policies}
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
func policyRefusal(name string, d policy.Decision, answer Answer) refusal {
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
