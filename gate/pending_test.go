package gate

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/pin"
)

// atkExtra is a tool the atk server offers beside the approved one, never
// approved; atkExtraResource a resource likewise.
const (
	atkExtra         = `{"name":"send_report","description":"Send the weather report.","inputSchema":{"type":"object"}}`
	atkExtraResource = `{"uri":"weather://alerts","name":"alerts"}`
)

// extraHandler is the atk server with atkExtra among its tools, and, once
// *newResource is set, atkExtraResource among its resources.
func extraHandler(newResource *bool) atkHandler {
	return func(m *mcpclient.Message, own bool) []string {
		switch m.Method {
		case "tools/list":
			return []string{res(m, `{"tools":[`+atkTool+`,`+atkExtra+`]}`)}
		case "resources/list":
			if *newResource {
				return []string{res(m, `{"resources":[`+atkResource+`,`+atkExtraResource+`]}`)}
			}
		}
		return cleanHandler(m, own)
	}
}

// reviewTold returns the review command of the gate's notifications/message
// among what the host read aside.
func (a *atkGate) reviewTold(t *testing.T) string {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, msg := range a.aside {
		m, err := mcpclient.Decode([]byte(msg))
		if err != nil || m.Method != "notifications/message" {
			continue
		}
		var p struct {
			Data struct{ Review string } `json:"data"`
		}
		if json.Unmarshal(m.Params, &p) == nil && p.Data.Review != "" {
			return p.Data.Review
		}
	}
	t.Fatalf("the host was told no review command: %q", a.aside)
	return ""
}

// waitNotice reads what the host receives until a notification of method
// arrives (the gate forwards a list_changed once it listed again).
func (a *atkGate) waitNotice(t *testing.T, method string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		data, err := a.host.Read(ctx)
		if err != nil {
			t.Fatalf("no %s reached the host: %v", method, err)
		}
		a.mu.Lock()
		a.aside = append(a.aside, string(data))
		a.mu.Unlock()
		if m, err := mcpclient.Decode(data); err == nil && m.Method == method {
			return
		}
	}
}

// reviewFile is the saved listing a review command names (--tools FILE).
func reviewFile(t *testing.T, review string) string {
	t.Helper()
	_, rest, ok := strings.Cut(review, " --tools ")
	if !ok {
		t.Fatalf("the review command names no saved listing: %s", review)
	}
	path, _, _ := strings.Cut(rest, " --approve")
	return strings.Trim(path, "'")
}

// approveFile approves what the saved listing at path offers, as the
// review command (etdi check --tools FILE --approve) does, and returns
// the tools approved.
func approveFile(t *testing.T, opts guard.Options, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := guard.ReadListing(data)
	if err != nil {
		t.Fatal(err)
	}
	r, err := guard.Check(context.Background(), l, opts)
	if err != nil {
		t.Fatal(err)
	}
	ap, err := guard.Approve(context.Background(), r, guard.ApproveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range ap.Approved {
		out = append(out, pin.ItemRef(a.Pin.Item, a.Pin.Tool))
	}
	return out
}

func toolNamesOf(t *testing.T, answer string) []string {
	var out []string
	for _, tool := range sdkTools(t, answer) {
		out = append(out, tool.Name)
	}
	return out
}

// A tool withheld at the start of a session, then a re-list of the
// resources alone (after notifications/resources/list_changed): the
// listing saved for review keeps the withheld tool, so the review command
// the host was told approves it, and the next session lets it through.
// Before, the re-list saved "tools": [] over it and the review approved
// nothing.
func TestPendingKeepsKindsNotListedAgain(t *testing.T) {
	for _, tc := range []struct {
		name        string
		newResource bool
		want        []string
	}{
		{"resources unchanged", false, []string{"send_report"}},
		{"a new resource too", true, []string{"send_report", "resource:weather://alerts"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := atkOptions(t)
			newResource := false
			a := startAtk(t, opts, extraHandler(&newResource))
			a.init(t)
			if got := toolNamesOf(t, a.ask(t, "tools/list", `{}`, 10*time.Second)); strings.Join(got, " ") != "get_weather" {
				t.Fatalf("tools through the gate: %v", got)
			}
			review := a.reviewTold(t)
			path := reviewFile(t, review)
			newResource = tc.newResource
			a.server.write(`{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}`)
			a.waitNotice(t, "notifications/resources/list_changed")

			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("the listing named by %q: %v", review, err)
			}
			l, err := guard.ReadListing(data)
			if err != nil || len(l.Tools) != 2 || !l.Live || l.Instructions == nil {
				t.Fatalf("after the resources were listed again the saved listing has %d tools, live %v (%v):\n%s", len(l.Tools), l.Live, err, data)
			}
			if got := approveFile(t, opts.Options, path); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("the review command %q approved %v, want %v", review, got, tc.want)
			}
			b := startAtk(t, opts, extraHandler(&newResource))
			b.init(t)
			if got := toolNamesOf(t, b.ask(t, "tools/list", `{}`, 10*time.Second)); strings.Join(got, " ") != "get_weather send_report" {
				t.Fatalf("after the review, tools through the gate: %v\n%s", got, strings.Join(b.log, "\n"))
			}
		})
	}
}

// A re-list that withholds nothing of its kinds keeps the file while
// another kind is still withheld, and the file goes once nothing is.
func TestPendingRemovedWhenNothingWithheld(t *testing.T) {
	opts := atkOptions(t)
	newResource := true
	a := startAtk(t, opts, extraHandler(&newResource))
	a.init(t)
	a.ask(t, "tools/list", `{}`, 10*time.Second)
	path := reviewFile(t, a.reviewTold(t))
	// The resource goes: the resources withhold nothing, the tool still is.
	newResource = false
	a.server.write(`{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}`)
	a.waitNotice(t, "notifications/resources/list_changed")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the file went while a tool is withheld: %v", err)
	}
	l, err := guard.ReadListing(data)
	if err != nil || len(l.Tools) != 2 || len(l.Resources) != 1 {
		t.Fatalf("saved: %d tools, %d resources (%v)", len(l.Tools), len(l.Resources), err)
	}
	// The tool is approved (from the file), and the tools listed again.
	if got := approveFile(t, opts.Options, path); strings.Join(got, " ") != "send_report" {
		t.Fatalf("approved %v", got)
	}
	a.server.write(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	a.waitNotice(t, "notifications/tools/list_changed")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("nothing is withheld, and the saved listing is still there (%v)", err)
	}
}

// A re-list of the tools replaces the tools of the saved listing: a tool
// the server adds later is in the file the review command names.
func TestPendingToolsListedAgain(t *testing.T) {
	opts := atkOptions(t)
	added := false
	a := startAtk(t, opts, func(m *mcpclient.Message, own bool) []string {
		if m.Method == "tools/list" && added {
			return []string{res(m, `{"tools":[`+atkTool+`,`+atkExtra+`,{"name":"delete_reports","inputSchema":{"type":"object"}}]}`)}
		}
		return extraHandler(new(bool))(m, own)
	})
	a.init(t)
	a.ask(t, "tools/list", `{}`, 10*time.Second)
	path := reviewFile(t, a.reviewTold(t))
	added = true
	a.server.write(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	a.waitNotice(t, "notifications/tools/list_changed")
	if got := approveFile(t, opts.Options, path); strings.Join(got, " ") != "send_report delete_reports" {
		t.Fatalf("the review approved %v", got)
	}
}
