package gate

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Attack: params whose members the gate reads appear twice, or under
// another case, at any level the gate reads. The gate read the first (or
// the exact spelling) while a server that takes the last, or matches
// names case-insensitively, read the other: a duplicate ref.name had a
// completion/complete of a prompt never listed forwarded, a duplicate
// clientInfo renamed the host for the call-time policies.
// Breaks: every member the gate reads is read strictly (docs/gate.md#runtime-gate).
func TestAttackParamsDuplicateOrCaseVariant(t *testing.T) {
	for _, c := range []struct{ name, method, params string }{
		{"call Name", "tools/call", `{"name":"get_weather","arguments":{},"Name":"delete_all"}`},
		{"call name twice", "tools/call", `{"name":"get_weather","name":"delete_all"}`},
		{"call Arguments", "tools/call", `{"name":"get_weather","arguments":{},"Arguments":{"city":"~/.ssh"}}`},
		{"call name not a string", "tools/call", `{"name":["get_weather"]}`},
		{"prompt NAME", "prompts/get", `{"name":"weather_report","NAME":"never_listed"}`},
		{"read URI", "resources/read", `{"uri":"weather://cities","URI":"file:///etc/passwd"}`},
		{"read uri twice", "resources/read", `{"uri":"weather://cities","uri":"file:///etc/passwd"}`},
		{"subscribe Uri", "resources/subscribe", `{"uri":"weather://cities","Uri":"file:///etc/passwd"}`},
		{"complete ref.Name", "completion/complete", `{"ref":{"type":"ref/prompt","name":"weather_report","Name":"never_listed"},"argument":{"name":"a","value":"b"}}`},
		{"complete ref.name twice", "completion/complete", `{"ref":{"type":"ref/prompt","name":"weather_report","name":"never_listed"},"argument":{"name":"a","value":"b"}}`},
		{"complete ref.TYPE", "completion/complete", `{"ref":{"type":"ref/prompt","name":"weather_report","TYPE":"ref/resource","uri":"file:///x"},"argument":{"name":"a","value":"b"}}`},
		{"complete Ref", "completion/complete", `{"ref":{"type":"ref/prompt","name":"weather_report"},"Ref":{"type":"ref/prompt","name":"never_listed"},"argument":{"name":"a","value":"b"}}`},
		{"complete ref not an object", "completion/complete", `{"ref":"ref/prompt","argument":{"name":"a","value":"b"}}`},
		{"list Cursor", "tools/list", `{"Cursor":"page2"}`},
		{"initialize clientinfo", "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"atk-host","version":"1"},"clientinfo":{"name":"evil","version":"1"}}`},
		{"initialize clientInfo twice", "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"atk-host","version":"1"},"clientInfo":{"name":"evil","version":"1"}}`},
		{"initialize clientInfo.Name", "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"atk-host","Name":"evil","version":"1"}}`},
		{"initialize elicitation twice", "initialize", `{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{},"Elicitation":null},"clientInfo":{"name":"h","version":"1"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := startAtk(t, atkOptions(t), cleanHandler)
			if c.method != "initialize" {
				a.init(t)
				a.ask(t, "tools/list", `{}`, 5*time.Second)
				a.ask(t, "prompts/list", `{}`, 5*time.Second)
				a.ask(t, "resources/list", `{}`, 5*time.Second)
			}
			before := len(a.server.received())
			ans := a.ask(t, c.method, c.params, 5*time.Second)
			if !strings.Contains(ans, `"code":-32602`) {
				t.Errorf("%s %s: want -32602, got %s", c.method, c.params, ans)
			}
			if got := a.server.received()[before:]; len(got) > 0 {
				t.Errorf("%s reached the server: %v", c.method, got)
			}
		})
	}
}

// A notifications/cancelled whose requestId is there twice is not relayed:
// the gate and the server would cancel different requests.
func TestAttackCancelledDuplicateRequestID(t *testing.T) {
	a := startAtk(t, atkOptions(t), cleanHandler)
	a.init(t)
	a.host.Write(t.Context(), []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"RequestId":8}}`))
	a.ask(t, "ping", `{}`, 5*time.Second) // after the notification, in order
	if slices.Contains(a.server.received(), "notifications/cancelled") {
		t.Errorf("the server received the cancellation: %v", a.server.received())
	}
}

// Harmless: members the gate does not read, in any order, and extra
// members beside the ones it does, pass as they are.
func TestRegressionParamsExtraMembersPass(t *testing.T) {
	a := startAtk(t, atkOptions(t), cleanHandler)
	if ans := a.ask(t, "initialize", `{"clientInfo":{"version":"1","title":"A Host","name":"atk-host","icons":[]},"capabilities":{"roots":{},"elicitation":{"form":{}}},"protocolVersion":"2025-06-18","_meta":{"x":1}}`, 10*time.Second); !strings.Contains(ans, `"result"`) {
		t.Fatalf("initialize: %s", ans)
	}
	a.notify(t, "notifications/initialized")
	if a.g == nil {
		t.Fatal("no gate")
	}
	a.ask(t, "tools/list", `{"_meta":{"progressToken":1}}`, 5*time.Second)
	a.ask(t, "prompts/list", `{}`, 5*time.Second)
	a.ask(t, "resources/list", `{}`, 5*time.Second)
	for _, c := range []struct{ method, params, want string }{
		{"tools/call", `{"_meta":{"progressToken":2},"arguments":{"city":"x","City":"y"},"name":"get_weather","extra":true}`, "sunny"},
		{"prompts/get", `{"arguments":{},"name":"weather_report"}`, "sunny"},
		{"resources/read", `{"_meta":{},"uri":"weather://cities"}`, "sunny"},
		{"completion/complete", `{"context":{"arguments":{}},"argument":{"value":"b","name":"a"},"ref":{"name":"weather_report","type":"ref/prompt","x":1}}`, `"code":-32601`},
	} {
		if ans := a.ask(t, c.method, c.params, 5*time.Second); !strings.Contains(ans, c.want) {
			t.Errorf("%s %s: want %s, got %s", c.method, c.params, c.want, ans)
		}
	}
	if !slices.Contains(a.server.received(), "completion/complete") {
		t.Errorf("completion/complete not forwarded: %v", a.server.received())
	}
}
