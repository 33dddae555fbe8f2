package policy

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

var plainTool = Tool{Server: "acme:web", Name: "fetch", Version: "1.0.0", Provider: "acme", Signed: true, Scopes: []string{"net:fetch"}}

func TestAuthorizeNoPermit(t *testing.T) {
	for name, text := range map[string]string{
		"only forbids":               `@id("f") forbid (principal, action, resource) when { resource.name == "other" };`,
		"permit that does not match": `@id("p") permit (principal, action, resource) when { resource.name == "other" };`,
		"only asks":                  `@id("a") @ask("sure?") forbid (principal, action, resource);`,
	} {
		d := mustParse(t, "f.cedar", text).Authorize(Request{Host: "h", Tool: plainTool})
		checkDecision(t, name, d, Forbid, nil, nil)
		if !d.NoPermit() {
			t.Errorf("%s: NoPermit() is false", name)
		}
		if d.Policies == nil {
			t.Errorf("%s: Policies is nil, want empty (it is written as JSON)", name)
		}
		if got := d.Summary(); got != "forbid (no policy permits it)" {
			t.Errorf("%s: Summary() = %q", name, got)
		}
	}
}

func TestAuthorizeCombinations(t *testing.T) {
	const text = `
@id("permit-all") permit (principal, action, resource);
@id("permit-fetch") permit (principal, action, resource) when { resource.name == "fetch" };
@id("z-ask") @ask("z reason") forbid (principal, action, resource) when { resource.scopes.contains("z") };
@id("a-ask") @ask("a reason") forbid (principal, action, resource) when { resource.scopes.contains("a") };
@id("m-ask") @ask("m reason") forbid (principal, action, resource) when { resource.scopes.contains("m") };
@id("hard-2") forbid (principal, action, resource) when { resource.scopes.contains("h2") };
@id("hard-1") forbid (principal, action, resource) when { resource.scopes.contains("h1") };
`
	s := mustParse(t, "f.cedar", text)
	tool := func(name string, scopes ...string) Request {
		return Request{Host: "h", Tool: Tool{Server: "s", Name: name, Signed: true, Scopes: scopes}}
	}
	tests := []struct {
		name     string
		req      Request
		effect   Effect
		policies []string
		reasons  []string
		summary  string
	}{
		{"permits only", tool("fetch"), Allow, []string{"permit-all", "permit-fetch"}, nil, "allow"},
		{"one permit", tool("other"), Allow, []string{"permit-all"}, nil, "allow"},
		{"ask and permit", tool("x", "m"), Ask, []string{"m-ask"}, []string{"m reason"}, "ask (m-ask)"},
		{"asks in id order", tool("x", "z", "m", "a"), Ask, []string{"a-ask", "m-ask", "z-ask"},
			[]string{"a reason", "m reason", "z reason"}, "ask (a-ask, m-ask, z-ask)"},
		{"hard forbid beats ask", tool("x", "a", "h2"), Forbid, []string{"hard-2"}, nil, "forbid (hard-2)"},
		{"hard forbids in id order, asks left out", tool("x", "h2", "z", "h1"), Forbid, []string{"hard-1", "hard-2"}, nil, "forbid (hard-1, hard-2)"},
	}
	for _, tt := range tests {
		d := s.Authorize(tt.req)
		checkDecision(t, tt.name, d, tt.effect, tt.policies, tt.reasons)
		if d.NoPermit() {
			t.Errorf("%s: NoPermit() is true", tt.name)
		}
		if got := d.Summary(); got != tt.summary {
			t.Errorf("%s: Summary() = %q, want %q", tt.name, got, tt.summary)
		}
	}
}

// TestAuthorizeAskWithoutPermit checks that an ask does not stand in for
// a permit: with no permit the call is forbidden, not put to the person.
func TestAuthorizeAskWithoutPermit(t *testing.T) {
	s := mustParse(t, "f.cedar", `
@id("permit-signed") permit (principal, action, resource) when { resource.signed };
@id("ask-all") @ask("sure?") forbid (principal, action, resource);
`)
	d := s.Authorize(Request{Host: "h", Tool: Tool{Server: "unsigned:x", Name: "t"}})
	checkDecision(t, "unsigned", d, Forbid, nil, nil)
	d = s.Authorize(Request{Host: "h", Tool: plainTool})
	checkDecision(t, "signed", d, Ask, []string{"ask-all"}, []string{"sure?"})
}

// TestAuthorizeEvaluationErrors checks that a forbid policy that cannot
// be evaluated forbids (Cedar alone would skip it), and that a permit
// that cannot be evaluated does not permit.
func TestAuthorizeEvaluationErrors(t *testing.T) {
	const overflow = "context.callsThisMinute * 9223372036854775807 > 0"
	tests := []struct {
		name     string
		text     string
		calls    int64
		effect   Effect
		policies []string
		reasons  []string
		errors   []string
	}{
		{"forbid that overflows", `@id("base") permit (principal, action, resource);
@id("overflow") forbid (principal, action, resource) when { ` + overflow + ` };`,
			2, Forbid, []string{"overflow"}, nil, []string{"overflow: "}},
		{"forbid that does not overflow", `@id("base") permit (principal, action, resource);
@id("overflow") forbid (principal, action, resource) when { ` + overflow + ` };`,
			0, Allow, []string{"base"}, nil, nil},
		{"forbid that overflows in unless", `@id("base") permit (principal, action, resource);
@id("overflow") forbid (principal, action, resource) unless { context.callsOfThisTool + 9223372036854775807 > context.callsThisMinute };`,
			2, Allow, []string{"base"}, nil, nil}, // callsOfThisTool is 0: no overflow
		{"ask that overflows asks", `@id("base") permit (principal, action, resource);
@id("overflow") @ask("cannot tell") forbid (principal, action, resource) when { ` + overflow + ` };`,
			2, Ask, []string{"overflow"}, []string{"cannot tell"}, []string{"overflow: "}},
		{"hard forbid that overflows beats an ask", `@id("base") permit (principal, action, resource);
@id("ask") @ask("sure?") forbid (principal, action, resource);
@id("overflow") forbid (principal, action, resource) when { ` + overflow + ` };`,
			2, Forbid, []string{"overflow"}, nil, []string{"overflow: "}},
		{"permit that overflows does not permit", `@id("overflow") permit (principal, action, resource) when { ` + overflow + ` };`,
			2, Forbid, nil, nil, []string{"overflow: "}},
		{"permit that overflows beside one that permits", `@id("base") permit (principal, action, resource);
@id("overflow") permit (principal, action, resource) when { ` + overflow + ` };`,
			2, Allow, []string{"base"}, nil, []string{"overflow: "}},
		{"errors in id order", `@id("base") permit (principal, action, resource);
@id("z") permit (principal, action, resource) when { ` + overflow + ` };
@id("a") permit (principal, action, resource) when { ` + overflow + ` };`,
			2, Allow, []string{"base"}, nil, []string{"a: ", "z: "}},
	}
	for _, tt := range tests {
		s := mustParse(t, "f.cedar", tt.text)
		d := s.Authorize(Request{Host: "h", Tool: plainTool, Context: Context{CallsThisMinute: tt.calls}})
		checkDecision(t, tt.name, d, tt.effect, tt.policies, tt.reasons)
		if len(d.Errors) != len(tt.errors) {
			t.Errorf("%s: errors %q, want %d", tt.name, d.Errors, len(tt.errors))
			continue
		}
		for i, e := range d.Errors {
			if !strings.HasPrefix(e, tt.errors[i]) || !strings.Contains(e, "overflow") {
				t.Errorf("%s: error %d is %q, want %q and why", tt.name, i, e, tt.errors[i])
			}
		}
	}
}

// TestAuthorizeUnsignedAnnotations checks that the annotations of an
// unsigned tool are not shown to policies, whatever its definition says.
func TestAuthorizeUnsignedAnnotations(t *testing.T) {
	s := mustParse(t, "f.cedar", `
@id("read-only") permit (principal, action, resource) when { resource.annotations has readOnlyHint };
@id("destructive") permit (principal, action, resource) when { resource.annotations has destructiveHint };
@id("idempotent") permit (principal, action, resource) when { resource.annotations has idempotentHint && resource.annotations.idempotentHint };
@id("open-world") permit (principal, action, resource) when { resource.annotations has openWorldHint && !resource.annotations.openWorldHint };
@id("none") permit (principal, action, resource) unless {
  resource.annotations has readOnlyHint || resource.annotations has destructiveHint ||
  resource.annotations has idempotentHint || resource.annotations has openWorldHint
};
`)
	ann := AnnotationsOf([]byte(`{"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}}`))
	if ann.ReadOnly == nil || !*ann.ReadOnly {
		t.Fatalf("AnnotationsOf: %+v", ann)
	}
	unsigned := Tool{Server: "unsigned:files", Name: "read", Annotations: ann}
	checkDecision(t, "unsigned", s.Authorize(Request{Host: "h", Tool: unsigned}), Allow, []string{"none"}, nil)

	signed := unsigned
	signed.Signed = true
	checkDecision(t, "signed", s.Authorize(Request{Host: "h", Tool: signed}), Allow,
		[]string{"destructive", "idempotent", "open-world", "read-only"}, nil)

	signed.Annotations = Annotations{ReadOnly: boolp(false)}
	checkDecision(t, "signed, readOnlyHint only", s.Authorize(Request{Host: "h", Tool: signed}), Allow, []string{"read-only"}, nil)
}

// TestAuthorizeAttributes checks that each attribute of the request
// reaches policies with the value etdi gives it.
func TestAuthorizeAttributes(t *testing.T) {
	s := mustParse(t, "f.cedar", `
@id("host") permit (principal == Etdi::Host::"claude-code", action, resource);
@id("uid") permit (principal, action == Etdi::Action::"call", resource == Etdi::Tool::"acme:files/read_file");
@id("server") permit (principal, action, resource) when { resource.server == "acme:files" };
@id("name") permit (principal, action, resource) when { resource.name like "read_*" };
@id("version") permit (principal, action, resource) when { resource.version == "1.2.0" };
@id("provider") permit (principal, action, resource) when { resource.provider == "acme" };
@id("signed") permit (principal, action, resource) when { resource.signed };
@id("scope") permit (principal, action, resource) when { resource.scopes.contains("files:read:home") };
@id("scope-family") permit (principal, action, resource) when { resource.scopes.containsAll(["files:*", "files:read:*"]) };
@id("session-scope") permit (principal, action, resource) when { context.sessionScopes.contains("net:*") };
@id("calls") permit (principal, action, resource) when { context.callsThisMinute == 7 && context.callsOfThisTool == 3 };
@id("digest") permit (principal, action, resource) when { context.argumentsDigest like "sha256:*" };
@id("never") permit (principal, action, resource) when { resource.scopes.contains("files:read") };
`)
	tool := Tool{Server: "acme:files", Name: "read_file", Version: "1.2.0", Provider: "acme", Signed: true, Scopes: []string{"files:read:home"}}
	ctx := Context{SessionScopes: []string{"net:fetch"}, CallsThisMinute: 7, CallsOfThisTool: 3, ArgumentsDigest: ArgumentsDigest([]byte(`{"path":"/"}`))}
	d := s.Authorize(Request{Host: "claude-code", Tool: tool, Context: ctx})
	checkDecision(t, "all", d, Allow, []string{"calls", "digest", "host", "name", "provider", "scope", "scope-family",
		"server", "session-scope", "signed", "uid", "version"}, nil)
}

func TestEffect(t *testing.T) {
	for e, want := range map[Effect]string{Forbid: "forbid", Ask: "ask", Allow: "allow", Effect(7): "forbid"} {
		if got := e.String(); got != want {
			t.Errorf("Effect(%d).String() = %q", e, got)
		}
	}
	b, err := json.Marshal(Decision{Effect: Ask, Policies: []string{"a"}, Reasons: []string{"why"}})
	if err != nil || string(b) != `{"decision":"ask","policies":["a"],"reasons":["why"]}` {
		t.Errorf("json: %s %v", b, err)
	}
}

// TestAuthorizeConcurrent runs decisions of one Set from several
// goroutines (run with -race).
func TestAuthorizeConcurrent(t *testing.T) {
	s := mustParse(t, "f.cedar", `
@id("base") permit (principal, action, resource);
@id("rate") forbid (principal, action, resource) when { context.callsThisMinute >= 10 };
`)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				n := int64((g + i) % 20)
				d := s.Authorize(Request{Host: "h", Tool: plainTool, Context: Context{CallsThisMinute: n}})
				want := Allow
				if n >= 10 {
					want = Forbid
				}
				if d.Effect != want {
					t.Errorf("calls %d: %s", n, d.Summary())
					return
				}
			}
		})
	}
	wg.Wait()
}
