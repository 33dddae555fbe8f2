package policy

import (
	"slices"
	"testing"
	"time"
)

// The policies of a set written for tool calls alone (the examples'
// baseline permit names the call action only).
const callsOnly = `
@id("baseline") permit (principal, action == Etdi::Action::"call", resource);
@id("no-net") forbid (principal, action == Etdi::Action::"call", resource) when { resource.scopes.contains("net:*") };
`

var (
	docPrompt   = Tool{Server: "acme:files", Name: "summarize", Scopes: []string{"fs:read"}}
	docResource = Tool{Server: "acme:files", Name: "file:///{path}", Scopes: []string{"fs:read"}}
)

// A forbid of the read action refuses a resources/read, without touching
// tool calls or prompts.
func TestAuthorizeReadForbid(t *testing.T) {
	s := mustParse(t, "f.cedar", callsOnly+`
@id("no-ssh") forbid (principal, action == Etdi::Action::"read", resource) when { resource.uri like "*/.ssh/*" };
@id("no-read-after-net") forbid (principal, action == Etdi::Action::"read", resource) when { context.sessionScopes.contains("net:*") };
`)
	read := func(uri string, ctx Context) Request {
		return Request{Host: "h", Action: ActionRead, Tool: docResource, URI: uri, Context: ctx}
	}
	checkDecision(t, "read of a key", s.Authorize(read("file:///home/u/.ssh/id_rsa", Context{})), Forbid, []string{"no-ssh"}, nil)
	checkDecision(t, "read after a net call", s.Authorize(read("file:///notes", Context{SessionScopes: []string{"net:fetch"}})), Forbid, []string{"no-read-after-net"}, nil)
	// Harmless: a read the forbids do not match is allowed although no
	// permit names the read action.
	checkDecision(t, "plain read", s.Authorize(read("file:///notes", Context{})), Allow, nil, nil)
	checkDecision(t, "get", s.Authorize(Request{Host: "h", Action: ActionGet, Tool: docPrompt}), Allow, nil, nil)
	// The existing call policies decide calls as before.
	checkDecision(t, "call", s.Authorize(Request{Host: "h", Tool: plainTool}), Forbid, []string{"no-net"}, nil)
	checkDecision(t, "call ok", s.Authorize(Request{Host: "h", Tool: Tool{Server: "s", Name: "x"}}), Allow, []string{"baseline"}, nil)
	// A call that no permit matches is still forbidden.
	only := mustParse(t, "g.cedar", `@id("f") forbid (principal, action == Etdi::Action::"read", resource);`)
	if d := only.Authorize(Request{Host: "h", Tool: plainTool}); !d.NoPermit() {
		t.Errorf("a call no permit matches: %+v", d)
	}
	checkDecision(t, "read forbidden", only.Authorize(read("file:///x", Context{})), Forbid, []string{"f"}, nil)
}

// Each action names its own entity type and attributes; a policy without
// an action constraint decides them all.
func TestAuthorizeActionsEntities(t *testing.T) {
	s := mustParse(t, "f.cedar", `
@id("all") permit (principal, action, resource);
@id("prompt") forbid (principal, action == Etdi::Action::"get", resource is Etdi::Prompt) when { resource.name == "bad" && resource.server == "acme:files" };
@id("complete-prompt") forbid (principal, action == Etdi::Action::"complete", resource is Etdi::Prompt) when { resource.name == "bad" };
@id("complete-res") forbid (principal, action == Etdi::Action::"complete", resource is Etdi::Resource) when { resource.uri == "file:///{path}" };
@id("scopes") @ask("fs") forbid (principal, action, resource) when { resource.scopes.contains("fs:*") && context.sessionActions.contains("call") };
@id("entity") forbid (principal, action, resource == Etdi::Resource::"acme:files/file:///etc/passwd");
`)
	bad := docPrompt
	bad.Name, bad.Scopes = "bad", nil
	checkDecision(t, "get bad", s.Authorize(Request{Action: ActionGet, Tool: bad}), Forbid, []string{"prompt"}, nil)
	checkDecision(t, "complete bad prompt", s.Authorize(Request{Action: ActionComplete, Tool: bad}), Forbid, []string{"complete-prompt"}, nil)
	res := docResource
	res.Scopes = nil
	checkDecision(t, "complete template", s.Authorize(Request{Action: ActionComplete, Tool: res, URI: "file:///{path}"}), Forbid, []string{"complete-res"}, nil)
	checkDecision(t, "read by entity id", s.Authorize(Request{Action: ActionRead, Tool: res, URI: "file:///etc/passwd"}), Forbid, []string{"entity"}, nil)
	checkDecision(t, "read asks after a call", s.Authorize(Request{Action: ActionRead, Tool: docResource, URI: "file:///a",
		Context: Context{SessionActions: []string{ActionCall}}}), Ask, []string{"scopes"}, []string{"fs"})
	checkDecision(t, "read before any call", s.Authorize(Request{Action: ActionRead, Tool: docResource, URI: "file:///a"}), Allow, []string{"all"}, nil)
	// An ask on a get no permit names still asks.
	ask := mustParse(t, "a.cedar", `@id("a") @ask("why") forbid (principal, action == Etdi::Action::"get", resource);`)
	checkDecision(t, "ask without permit", ask.Authorize(Request{Action: ActionGet, Tool: docPrompt}), Ask, []string{"a"}, []string{"why"})
}

// Gets, reads and completions count for the session: their scopes, the
// actions, the calls of the minute, and their own count by name.
func TestSessionCountsReads(t *testing.T) {
	var s Session
	s.Did(ActionRead, docResource, at(0))
	s.Did(ActionGet, docPrompt, at(1))
	s.Called(Tool{Name: "file:///{path}"}, at(2)) // a tool named like the template
	c := s.ContextOf(ActionRead, docResource.Name, nil, at(3))
	if c.CallsThisMinute != 3 || c.CallsOfThisTool != 1 || !slices.Equal(c.SessionScopes, []string{"fs:read"}) ||
		!slices.Equal(c.SessionActions, []string{ActionCall, ActionGet, ActionRead}) {
		t.Errorf("context of a read: %+v", c)
	}
	if n := s.Context("file:///{path}", nil, at(3)).CallsOfThisTool; n != 1 {
		t.Errorf("a tool's count includes reads of its name: %d", n)
	}
	if n := s.ContextOf(ActionComplete, "summarize", nil, at(3)).CallsOfThisTool; n != 0 {
		t.Errorf("a completion counts gets: %d", n)
	}
	if c := s.ContextOf(ActionCall, "x", nil, at(2).Add(2*time.Minute)); c.CallsThisMinute != 0 || len(c.SessionActions) != 3 {
		t.Errorf("a minute later: %+v", c)
	}
}

// The policies docs/walkthrough.md shows for prompts and resources validate and
// decide as it says.
func TestReadmeReadPolicies(t *testing.T) {
	s := mustParse(t, "readme.cedar", callsOnly+`
@id("no-keys-as-resources")
forbid (principal, action == Etdi::Action::"read", resource)
when { resource.uri like "*/.ssh/*" };

@id("no-net-after-reading")
forbid (principal, action == Etdi::Action::"call", resource)
when { resource.scopes.contains("net:*") && context.sessionActions.contains("read") };
`)
	checkDecision(t, "key", s.Authorize(Request{Action: ActionRead, Tool: docResource, URI: "file:///home/u/.ssh/id_ed25519"}), Forbid, []string{"no-keys-as-resources"}, nil)
	net := Tool{Server: "s", Name: "fetch", Scopes: []string{"net:fetch"}}
	checkDecision(t, "net after read", s.Authorize(Request{Tool: net, Context: Context{SessionActions: []string{ActionRead}}}), Forbid, []string{"no-net", "no-net-after-reading"}, nil)
}

// A permit that names the read action is what allows a read: one limited
// to some resources limits reads to them (Cedar's default deny), while a
// set whose permits name only calls leaves reads as approval decides.
func TestAuthorizePermitNamingReadLimits(t *testing.T) {
	s := mustParse(t, "f.cedar", callsOnly+`
@id("docs") permit (principal, action == Etdi::Action::"read", resource) when { resource.uri like "file:///docs/*" };
`)
	read := func(uri string) Request {
		return Request{Host: "h", Action: ActionRead, Tool: docResource, URI: uri}
	}
	checkDecision(t, "read in docs", s.Authorize(read("file:///docs/a.md")), Allow, []string{"docs"}, nil)
	if d := s.Authorize(read("file:///etc/passwd")); !d.NoPermit() {
		t.Errorf("a read the naming permit does not match: %+v", d)
	}
	// The get action is named by no permit: still allowed.
	checkDecision(t, "get", s.Authorize(Request{Host: "h", Action: ActionGet, Tool: docPrompt}), Allow, nil, nil)
	// Named in a set of actions, too.
	set := mustParse(t, "g.cedar", `@id("gr") permit (principal, action in [Etdi::Action::"get", Etdi::Action::"read"], resource) when { resource.server == "other" };`)
	if d := set.Authorize(Request{Host: "h", Action: ActionGet, Tool: docPrompt}); !d.NoPermit() {
		t.Errorf("a get the naming permit does not match: %+v", d)
	}
	// A bare action scope names no action.
	all := mustParse(t, "a.cedar", `@id("all") permit (principal, action, resource) when { resource.server == "other" };`)
	checkDecision(t, "read under a bare scope", all.Authorize(read("file:///x")), Allow, nil, nil)
}
