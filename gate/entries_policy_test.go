package gate

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/policy"
	"github.com/etdi-dev/etdi/trust"
)

// startAtkPolicies starts the atk gate with call-time policies, and has
// the host list everything.
func startAtkPolicies(t *testing.T, policies string, h atkHandler) *atkGate {
	t.Helper()
	opts := atkOptionsOf(t, h)
	set, err := policy.Parse(policy.Source{Name: "test.cedar", Text: []byte(policies)})
	if err != nil {
		t.Fatal(err)
	}
	opts.Policies = set
	a := startAtk(t, opts, h)
	a.init(t)
	for _, l := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
		a.ask(t, l, `{}`, 5*time.Second)
	}
	return a
}

// atkOptionsOf is atkOptions with the listing of h approved.
func atkOptionsOf(t testing.TB, h atkHandler) Options {
	t.Helper()
	opts := Options{Options: guard.Options{Policy: &trust.Policy{Unsigned: trust.Warn}, Pins: filepath.Join(t.TempDir(), "pins.db"),
		Name: "atk", By: "tester"}, Timeout: 5 * time.Second, FlushEvery: 50 * time.Millisecond}
	a, b := pipePair()
	serveAtk(b, h)
	l, err := guard.List(context.Background(), a, guard.FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	r, err := guard.Check(context.Background(), l, opts.Options)
	if err != nil {
		t.Fatal(err)
	}
	if ap, err := guard.Approve(context.Background(), r, guard.ApproveOptions{AcceptInstructions: true}); err != nil || ap.ExitCode() != 0 {
		t.Fatalf("approve: %v %+v", err, ap)
	}
	return opts
}

// atkWithTemplate is the clean server with a resource template.
func atkWithTemplate(m *mcpclient.Message, own bool) []string {
	if m.Method == "resources/templates/list" {
		return []string{res(m, `{"resourceTemplates":[{"uriTemplate":"file:///{path}","name":"files"}]}`)}
	}
	return cleanHandler(m, own)
}

const atkBaseline = `@id("baseline") permit (principal, action == Etdi::Action::"call", resource);
`

// Attack: a policy against reading files is sidestepped by reading them
// as resources (resources/read was gated by approval alone). Breaks: a
// forbid of the read action blocks resources/read, for a listed resource
// and for a URI matching a listed template, and resources/subscribe.
func TestPolicyForbidsRead(t *testing.T) {
	a := startAtkPolicies(t, atkBaseline+`@id("no-files") forbid (principal, action == Etdi::Action::"read", resource) when { resource.uri like "file://*" };
@id("no-cities") forbid (principal, action == Etdi::Action::"read", resource == Etdi::Resource::"unsigned:atk/weather://cities");
`, atkWithTemplate)
	for _, c := range []struct{ method, params, policy string }{
		{"resources/read", `{"uri":"file:///home/u/.ssh/id_rsa"}`, "no-files"},
		{"resources/subscribe", `{"uri":"file:///home/u/.ssh/id_rsa"}`, "no-files"},
		{"resources/read", `{"uri":"weather://cities"}`, "no-cities"},
	} {
		ans := a.ask(t, c.method, c.params, 5*time.Second)
		b := blockedData(t, ans)
		if b.Kind != PolicyForbid || !slices.Equal(b.Policies, []string{c.policy}) {
			t.Errorf("%s %s: %s", c.method, c.params, ans)
		}
	}
	for _, got := range a.server.received() {
		if strings.HasPrefix(got, "resources/read") || strings.HasPrefix(got, "resources/subscribe") {
			t.Errorf("%s reached the server", got)
		}
	}
	// Tool calls and prompts are decided as before.
	if ans := a.ask(t, "tools/call", `{"name":"get_weather","arguments":{}}`, 5*time.Second); !strings.Contains(ans, "sunny") {
		t.Errorf("call: %s", ans)
	}
	if ans := a.ask(t, "prompts/get", `{"name":"weather_report"}`, 5*time.Second); !strings.Contains(ans, "sunny") {
		t.Errorf("prompt: %s", ans)
	}
}

// A forbid of the get and complete actions blocks prompts/get and
// completion/complete; an @ask on them refuses (only tool calls are put
// to the person).
func TestPolicyForbidsGetAndComplete(t *testing.T) {
	a := startAtkPolicies(t, atkBaseline+`@id("no-report") forbid (principal, action == Etdi::Action::"get", resource is Etdi::Prompt) when { resource.name == "weather_report" && resource.server == "unsigned:atk" };
@id("ask-complete") @ask("completing leaks") forbid (principal, action == Etdi::Action::"complete", resource is Etdi::Resource);
@id("no-complete-prompt") forbid (principal, action == Etdi::Action::"complete", resource is Etdi::Prompt) when { context.argumentsDigest != "" };
`, atkWithTemplate)
	b := blockedData(t, a.ask(t, "prompts/get", `{"name":"weather_report"}`, 5*time.Second))
	if b.Kind != PolicyForbid || b.Prompt != "weather_report" || !slices.Equal(b.Policies, []string{"no-report"}) {
		t.Errorf("prompts/get: %+v", b)
	}
	b = blockedData(t, a.ask(t, "completion/complete", `{"ref":{"type":"ref/resource","uri":"file:///{path}"},"argument":{"name":"path","value":"a"}}`, 5*time.Second))
	if b.Kind != PolicyAsk || b.answer() != AnswerUnsupported || !slices.Equal(b.Policies, []string{"ask-complete"}) {
		t.Errorf("completion of a template: %+v", b)
	}
	b = blockedData(t, a.ask(t, "completion/complete", `{"ref":{"type":"ref/prompt","name":"weather_report"},"argument":{"name":"x","value":"a"}}`, 5*time.Second))
	if b.Kind != PolicyForbid || !slices.Equal(b.Policies, []string{"no-complete-prompt"}) {
		t.Errorf("completion of a prompt: %+v", b)
	}
	for _, got := range a.server.received() {
		if strings.HasPrefix(got, "prompts/get") || strings.HasPrefix(got, "completion/complete") {
			t.Errorf("%s reached the server", got)
		}
	}
}

// Harmless: a policy set written for tool calls alone keeps letting
// approved prompts and resources through.
func TestPolicyCallsOnlyLetsReadsThrough(t *testing.T) {
	a := startAtkPolicies(t, atkBaseline, atkWithTemplate)
	for _, c := range []struct{ method, params string }{
		{"resources/read", `{"uri":"weather://cities"}`},
		{"resources/read", `{"uri":"file:///notes.txt"}`},
		{"prompts/get", `{"name":"weather_report"}`},
	} {
		if ans := a.ask(t, c.method, c.params, 5*time.Second); !strings.Contains(ans, "sunny") {
			t.Errorf("%s %s: %s", c.method, c.params, ans)
		}
	}
}

// Reads, gets and completions count for the session: a rule against
// calling a tool after reading (exfiltration), and the rate of the
// minute, see them.
func TestPolicyReadsCountForSession(t *testing.T) {
	a := startAtkPolicies(t, atkBaseline+`@id("no-call-after-read") forbid (principal, action == Etdi::Action::"call", resource) when { context.sessionActions.contains("read") };
@id("rate") forbid (principal, action == Etdi::Action::"get", resource) when { context.callsThisMinute >= 2 };
@id("one-each") forbid (principal, action == Etdi::Action::"read", resource) when { context.callsOfThisTool >= 1 };
`, atkWithTemplate)
	if ans := a.ask(t, "tools/call", `{"name":"get_weather","arguments":{}}`, 5*time.Second); !strings.Contains(ans, "sunny") {
		t.Fatalf("call before any read: %s", ans)
	}
	if ans := a.ask(t, "resources/read", `{"uri":"file:///a"}`, 5*time.Second); !strings.Contains(ans, "sunny") {
		t.Fatalf("read: %s", ans)
	}
	if b := blockedData(t, a.ask(t, "tools/call", `{"name":"get_weather","arguments":{}}`, 5*time.Second)); !slices.Equal(b.Policies, []string{"no-call-after-read"}) {
		t.Errorf("call after a read: %+v", b)
	}
	// The template counts once for every URI it matches; the listed
	// resource is another.
	if b := blockedData(t, a.ask(t, "resources/read", `{"uri":"file:///b"}`, 5*time.Second)); !slices.Equal(b.Policies, []string{"one-each"}) {
		t.Errorf("second read through the template: %+v", b)
	}
	if ans := a.ask(t, "resources/read", `{"uri":"weather://cities"}`, 5*time.Second); !strings.Contains(ans, "sunny") {
		t.Errorf("read of another resource: %s", ans)
	}
	// Two forwarded (the call and the first read, and the third): a get is
	// the third of the minute.
	if b := blockedData(t, a.ask(t, "prompts/get", `{"name":"weather_report"}`, 5*time.Second)); !slices.Equal(b.Policies, []string{"rate"}) {
		t.Errorf("get after reads: %+v", b)
	}
}

// The scopes a prompt or resource shows the policies are those of the
// server's approved tools.
func TestApprovedScopes(t *testing.T) {
	r := &guard.Report{Observation: &pin.Observation{Tools: []pin.Observed{
		{Item: itemTool, Name: "a", Permissions: permissions("net:fetch", "fs:read")},
		{Item: itemTool, Name: "b", Permissions: permissions("fs:read")},
		{Item: itemTool, Name: "withheld", Permissions: permissions("shell:exec")},
		{Item: itemPrompt, Name: "a", Permissions: permissions("prompt:scope")},
	}}}
	got := approvedScopes(r, map[string]string{"a": "sha256:1", "b": "sha256:2"})
	if !slices.Equal(got, []string{"fs:read", "net:fetch"}) {
		t.Errorf("approvedScopes = %q", got)
	}
	if got := approvedScopes(nil, map[string]string{"a": "x"}); len(got) != 0 {
		t.Errorf("without a report: %q", got)
	}
}

func permissions(scopes ...string) []etdi.Permission {
	var out []etdi.Permission
	for _, s := range scopes {
		out = append(out, etdi.Permission{Scope: s})
	}
	return out
}

// Attack: a forbid of one file is sidestepped by naming it another way
// that a server reading files resolves to the same file: dot segments,
// an empty segment, an unreserved character percent-encoded, a
// backslash, the scheme in capitals (when the template's is). Breaks: a
// forbid of the read action blocks the resource however the URI spells
// it; what the policies cannot compare is refused.
func TestAttackReadURISpelledOtherwise(t *testing.T) {
	a := startAtkPolicies(t, atkBaseline+`@id("no-passwd") forbid (principal, action == Etdi::Action::"read", resource) when { resource.uri == "file:///etc/passwd" };
`, func(m *mcpclient.Message, own bool) []string {
		if m.Method == "resources/templates/list" {
			return []string{res(m, `{"resourceTemplates":[{"uriTemplate":"{scheme}:///{+path}","name":"files"}]}`)}
		}
		return cleanHandler(m, own)
	})
	for _, uri := range []string{
		"file:///etc/./passwd", "file:///tmp/../etc/passwd", "file:///etc//passwd", "file:////etc/passwd",
		"file:///etc/%70asswd", "file:///etc/%2e%2e/etc/passwd", "file:///etc\\passwd", "FILE:///etc/passwd",
		"file:///etc/passwd/.", "file:///etc/passwd\u0000",
	} {
		params, _ := json.Marshal(map[string]string{"uri": uri})
		if ans := a.ask(t, "resources/read", string(params), 5*time.Second); strings.Contains(ans, "sunny") || !strings.Contains(ans, `"error"`) {
			t.Errorf("%q was read: %s", uri, ans)
		}
	}
	for _, got := range a.server.received() {
		if strings.HasPrefix(got, "resources/read") {
			t.Errorf("%s reached the server", got)
		}
	}
}

// Attack: dot segments between encoded slashes, which a server that
// decodes the path before it resolves it follows out of the directory
// a template names: "file:///docs/..%2F..%2Fetc%2Fpasswd". Breaks: a
// forbid of the read action blocks the file however the URI spells it.
func TestAttackReadURIEncodedDotSegments(t *testing.T) {
	a := startAtkPolicies(t, atkBaseline+`@id("no-etc") forbid (principal, action == Etdi::Action::"read", resource) when { resource.uri like "file:///etc/*" };
`, atkWithTemplate)
	for _, uri := range []string{"file:///..%2Fetc%2Fpasswd", "file:///a%2F..%2F..%2Fetc%2Fpasswd", "file:///..%5Cetc%5Cpasswd", "file:///x%2f..%2f..%2fetc/passwd"} {
		params, _ := json.Marshal(map[string]string{"uri": uri})
		if ans := a.ask(t, "resources/read", string(params), 5*time.Second); strings.Contains(ans, "sunny") || !strings.Contains(ans, `"error"`) {
			t.Errorf("%q was read: %s", uri, ans)
		}
	}
	for _, got := range a.server.received() {
		if strings.HasPrefix(got, "resources/read") {
			t.Errorf("%s reached the server", got)
		}
	}
	// Harmless: URIs in their normal form, reserved characters encoded.
	for _, uri := range []string{"file:///docs/a%20b.txt", "file:///docs/a%2Fb", "file:///docs/", "file:///x?q=1#f", "file:///docs/a..b%2F.c", "file:///docs/...%2F.x"} {
		params, _ := json.Marshal(map[string]string{"uri": uri})
		if ans := a.ask(t, "resources/read", string(params), 5*time.Second); !strings.Contains(ans, "sunny") {
			t.Errorf("%q was not read: %s", uri, ans)
		}
	}
}

// Attack: a forbid of one file sidestepped by a trailing slash, which a
// server that cleans the path drops: "file:///etc/passwd/". Breaks: a
// forbid of the read action blocks the file however the URI spells it.
func TestAttackReadURITrailingSlash(t *testing.T) {
	a := startAtkPolicies(t, atkBaseline+`@id("no-passwd") forbid (principal, action == Etdi::Action::"read", resource) when { resource.uri == "file:///etc/passwd" };
`, atkWithTemplate)
	for _, uri := range []string{"file:///etc/passwd/"} {
		params, _ := json.Marshal(map[string]string{"uri": uri})
		b := blockedData(t, a.ask(t, "resources/read", string(params), 5*time.Second))
		if b.Kind != PolicyForbid || !slices.Equal(b.Policies, []string{"no-passwd"}) {
			t.Errorf("%q: %+v", uri, b)
		}
	}
	// Harmless: a directory's URI the policies do not refuse.
	if ans := a.ask(t, "resources/read", `{"uri":"file:///docs/"}`, 5*time.Second); !strings.Contains(ans, "sunny") {
		t.Errorf("file:///docs/ was not read: %s", ans)
	}
}

// Attack: a forbid of one file sidestepped by a query or a fragment,
// which a server reading files drops ("file:///etc/passwd?x",
// "file:///etc/passwd#x"), by the host "localhost", which names the
// local machine in a file URI, or any host, which a server reading the
// path alone ignores, or by leaving the empty host out
// ("file:/etc/passwd", RFC 8089). Breaks: a forbid of the read
// action blocks the file however the URI spells it.
func TestAttackReadURIQueryFragment(t *testing.T) {
	a := startAtkPolicies(t, atkBaseline+`@id("no-passwd") forbid (principal, action == Etdi::Action::"read", resource) when { resource.uri == "file:///etc/passwd" };
`, func(m *mcpclient.Message, own bool) []string {
		if m.Method == "resources/templates/list" {
			return []string{res(m, `{"resourceTemplates":[{"uriTemplate":"file:{+path}","name":"files"}]}`)}
		}
		return cleanHandler(m, own)
	})
	for _, uri := range []string{"file:///etc/passwd?x", "file:///etc/passwd#x", "file:///etc/passwd?", "file:///etc/passwd#",
		"file:///etc/passwd/?x#y", "file://localhost/etc/passwd", "file://LocalHost/etc/passwd?x", "file:/etc/passwd", "file:/etc/passwd#x", "file://server/etc/passwd", "file://h.example/etc/passwd?x",
		"file:///etc%2Fpasswd", "file:///etc%2fpasswd?x", "file:///etc%5Cpasswd", "file://localhost/etc%2Fpasswd"} {
		params, _ := json.Marshal(map[string]string{"uri": uri})
		b := blockedData(t, a.ask(t, "resources/read", string(params), 5*time.Second))
		if b.Kind != PolicyForbid || !slices.Equal(b.Policies, []string{"no-passwd"}) {
			t.Errorf("%q: %+v", uri, b)
		}
	}
	for _, got := range a.server.received() {
		if strings.HasPrefix(got, "resources/read") {
			t.Errorf("%s reached the server", got)
		}
	}
	// Harmless: another file with a query, on another host, and one
	// whose fragment names the forbidden one.
	for _, uri := range []string{"file:///etc/hosts?x", "file://server/etc/hosts", "file:///docs/a#passwd", "file:///docs/a?/etc/passwd"} {
		params, _ := json.Marshal(map[string]string{"uri": uri})
		if ans := a.ask(t, "resources/read", string(params), 5*time.Second); !strings.Contains(ans, "sunny") {
			t.Errorf("%q was not read: %s", uri, ans)
		}
	}
}

// Harmless: a read a permit allows by its whole URI is not refused
// because no permit names it without its query: only a policy that
// forbids or asks about the other spelling refuses it.
func TestPolicyReadPermitWithQuery(t *testing.T) {
	a := startAtkPolicies(t, atkBaseline+`@id("docs") permit (principal, action == Etdi::Action::"read", resource) when { resource.uri == "file:///docs/a?v=1" };
`, func(m *mcpclient.Message, own bool) []string {
		if m.Method == "resources/templates/list" {
			return []string{res(m, `{"resourceTemplates":[{"uriTemplate":"file:{+path}","name":"files"}]}`)}
		}
		return cleanHandler(m, own)
	})
	if ans := a.ask(t, "resources/read", `{"uri":"file:///docs/a?v=1"}`, 5*time.Second); !strings.Contains(ans, "sunny") {
		t.Errorf("the permitted read: %s", ans)
	}
	if ans := a.ask(t, "resources/read", `{"uri":"file:///docs/a?v=2"}`, 5*time.Second); strings.Contains(ans, "sunny") {
		t.Errorf("a read no permit names: %s", ans)
	}
}

// Attack: a permit that lets only directories be read (URIs ending in
// "/") is sidestepped by a file's URI with a trailing slash, which a
// server cleaning the path reads as the file. Breaks: the URI without
// its trailing slashes must be permitted too.
func TestAttackReadURITrailingSlashPermit(t *testing.T) {
	a := startAtkPolicies(t, atkBaseline+`@id("dirs-only") permit (principal, action == Etdi::Action::"read", resource) when { resource.uri like "file:///*/" };
`, atkWithTemplate)
	b := blockedData(t, a.ask(t, "resources/read", `{"uri":"file:///etc/passwd/"}`, 5*time.Second))
	if b.Kind != PolicyForbid || len(b.Policies) != 0 {
		t.Fatalf("%+v", b)
	}
}
