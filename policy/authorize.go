package policy

import (
	"slices"
	"strings"

	"github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
)

// Effect is what a decision lets happen.
type Effect int

const (
	// Forbid: the call is refused.
	Forbid Effect = iota
	// Ask: the call goes ahead only if the person accepts it.
	Ask
	// Allow: the call goes ahead.
	Allow
)

func (e Effect) String() string {
	switch e {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	}
	return "forbid"
}

// MarshalText writes the effect's name.
func (e Effect) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// Context is the session a call is made in (the request's context).
type Context struct {
	// SessionScopes are the scopes of the tools the session already
	// called (forwarded calls), as approved; expanded as Tool.Scopes is.
	SessionScopes []string
	// CallsThisMinute counts the calls the session forwarded in the 60
	// seconds before this one; CallsOfThisTool those of this tool.
	CallsThisMinute, CallsOfThisTool int64
	// ArgumentsDigest is the digest of the call's arguments (see
	// ArgumentsDigest).
	ArgumentsDigest string
	// SessionActions are the actions (ActionCall, ActionGet, ActionRead,
	// ActionComplete) the session already had forwarded, sorted.
	SessionActions []string
}

// Request is one call to authorize: of a tool ([ActionCall]), or of a
// prompt or a resource ([ActionGet], [ActionRead], [ActionComplete]).
type Request struct {
	// Host is the host's clientInfo.name.
	Host string
	// Action is ActionCall ("" is ActionCall), ActionGet, ActionRead or
	// ActionComplete.
	Action string
	// Tool is the tool called, or the prompt (ActionGet, ActionComplete
	// without URI) or the resource (ActionRead, ActionComplete with URI)
	// as approved: Name is the prompt's name, or the resource's URI or
	// the URI template it matched; Scopes are the server's approved
	// scopes.
	Tool Tool
	// URI is the URI asked for (ActionRead), or the resource template
	// completed (ActionComplete).
	URI     string
	Context Context
}

// IsCall says whether the request is of a tool call.
func (r Request) IsCall() bool { return r.Action == "" || r.Action == ActionCall }

// Decision is the outcome of one request.
type Decision struct {
	Effect Effect `json:"decision"`
	// Policies are the ids of the policies that decided: the forbid
	// policies that matched (for Forbid and Ask), else the permit
	// policies that did. Empty for a Forbid means no policy permits the
	// call.
	Policies []string `json:"policies"`
	// Reasons are the @ask reasons of an Ask, in policy id order.
	Reasons []string `json:"reasons,omitempty"`
	// Errors are the policies whose evaluation failed, with why: a forbid
	// among them counts as matching.
	Errors []string `json:"errors,omitempty"`
}

// NoPermit says the call is forbidden because no permit matched.
func (d Decision) NoPermit() bool { return d.Effect == Forbid && len(d.Policies) == 0 }

// Authorize decides one call. A forbid policy that matched, or whose
// evaluation failed, forbids it, unless every such policy is annotated
// @ask, which asks; otherwise a permit policy that matched allows it, and
// without one it is forbidden (Cedar's default).
func (s *Set) Authorize(r Request) Decision {
	req, entities := s.cedarRequest(r)
	var d Decision
	_, fdiag := cedar.Authorize(s.forbids, entities, req)
	var hard, asks []string
	matched := func(id types.PolicyID) {
		p := s.policies[id]
		if p.Ask != "" {
			asks = append(asks, p.ID)
		} else {
			hard = append(hard, p.ID)
		}
	}
	for _, reason := range fdiag.Reasons {
		matched(reason.PolicyID)
	}
	for _, e := range fdiag.Errors {
		d.Errors = append(d.Errors, string(e.PolicyID)+": "+e.Message)
		matched(e.PolicyID)
	}
	pdec, pdiag := cedar.Authorize(s.permits, entities, req)
	for _, e := range pdiag.Errors {
		d.Errors = append(d.Errors, string(e.PolicyID)+": "+e.Message)
	}
	slices.Sort(hard)
	slices.Sort(asks)
	slices.Sort(d.Errors)
	switch {
	case len(hard) > 0:
		d.Effect, d.Policies = Forbid, hard
	case pdec != cedar.Allow && r.IsCall():
		d.Effect = Forbid
	case pdec != cedar.Allow && len(asks) == 0 && s.named[r.Action]:
		// A permit names the action: it is what allows one (Cedar's
		// default deny), so a permit limited to some resources limits.
		d.Effect = Forbid
	case pdec != cedar.Allow && len(asks) == 0:
		// A get, read or complete no permit names is allowed: approval
		// gates it (docs/gate.md#runtime-gate), and a policy set written for calls
		// alone must not shut prompts and resources off.
		d.Effect = Allow
	case len(asks) > 0:
		d.Effect, d.Policies = Ask, asks
		for _, id := range asks {
			d.Reasons = append(d.Reasons, s.policies[cedar.PolicyID(id)].Ask)
		}
	default:
		d.Effect = Allow
		for _, reason := range pdiag.Reasons {
			d.Policies = append(d.Policies, string(reason.PolicyID))
		}
		slices.Sort(d.Policies)
	}
	if d.Policies == nil {
		d.Policies = []string{}
	}
	return d
}

// cedarRequest builds the Cedar request and entities of a call.
func (s *Set) cedarRequest(r Request) (cedar.Request, types.EntityMap) {
	host := types.NewEntityUID(HostType, types.String(r.Host))
	action, etype, id := ActionCall, types.EntityType(ToolType), r.Tool.Server+"/"+r.Tool.Name
	if !r.IsCall() {
		action, etype = r.Action, PromptType
		if r.Action == ActionRead || r.URI != "" {
			etype, id = ResourceType, r.Tool.Server+"/"+r.URI
		}
	}
	tool := types.NewEntityUID(etype, types.String(id))
	ann := types.RecordMap{}
	if r.Tool.Signed {
		a := r.Tool.Annotations
		for name, v := range map[string]*bool{"readOnlyHint": a.ReadOnly, "destructiveHint": a.Destructive,
			"idempotentHint": a.Idempotent, "openWorldHint": a.OpenWorld} {
			if v != nil {
				ann[types.String(name)] = types.Boolean(*v)
			}
		}
	}
	attrs := types.RecordMap{
		"server":      types.String(r.Tool.Server),
		"name":        types.String(r.Tool.Name),
		"version":     types.String(r.Tool.Version),
		"provider":    types.String(r.Tool.Provider),
		"signed":      types.Boolean(r.Tool.Signed),
		"scopes":      stringSet(ExpandScopes(r.Tool.Scopes)),
		"annotations": types.NewRecord(ann),
	}
	if etype == ResourceType {
		attrs["uri"] = types.String(r.URI)
	}
	entities := types.EntityMap{
		host: {UID: host},
		tool: {UID: tool, Attributes: types.NewRecord(attrs)},
	}
	actions := slices.Clone(r.Context.SessionActions)
	slices.Sort(actions)
	req := cedar.Request{
		Principal: host,
		Action:    types.NewEntityUID(ActionType, types.String(action)),
		Resource:  tool,
		Context: types.NewRecord(types.RecordMap{
			"sessionScopes":   stringSet(ExpandScopes(r.Context.SessionScopes)),
			"sessionActions":  stringSet(slices.Compact(actions)),
			"callsThisMinute": types.Long(r.Context.CallsThisMinute),
			"callsOfThisTool": types.Long(r.Context.CallsOfThisTool),
			"argumentsDigest": types.String(r.Context.ArgumentsDigest),
		}),
	}
	return req, entities
}

func stringSet(ss []string) types.Set {
	vs := make([]types.Value, len(ss))
	for i, s := range ss {
		vs[i] = types.String(s)
	}
	return types.NewSet(vs...)
}

// ExpandScopes returns the scopes with, for each colon in a scope, the
// prefix up to it followed by "*" ("a:b:c" adds "a:*" and "a:b:*"),
// sorted and without duplicates: Cedar cannot match a pattern against the
// members of a set, and this lets a policy name a family of scopes.
func ExpandScopes(scopes []string) []string {
	out := make([]string, 0, 2*len(scopes))
	for _, sc := range scopes {
		out = append(out, sc)
		for i := range len(sc) {
			if sc[i] == ':' {
				out = append(out, sc[:i+1]+"*")
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Summary is a decision in one line: "allow", "ask (p1, p2)", "forbid
// (p1)", "forbid (no policy permits it)".
func (d Decision) Summary() string {
	switch {
	case d.NoPermit():
		return "forbid (no policy permits it)"
	case d.Effect == Allow:
		return "allow"
	}
	return d.Effect.String() + " (" + strings.Join(d.Policies, ", ") + ")"
}
