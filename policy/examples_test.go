package policy

import (
	"path/filepath"
	"testing"
	"time"
)

// loadExample loads one of examples/policies.
func loadExample(t testing.TB, name string) *Set {
	t.Helper()
	s, err := LoadFiles(filepath.Join("..", "examples", "policies", name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type exampleCase struct {
	name     string
	tool     Tool
	ctx      Context
	effect   Effect
	policies []string
	reasons  []string
}

func runExample(t *testing.T, file string, cases []exampleCase) {
	t.Helper()
	s := loadExample(t, file)
	for _, c := range cases {
		d := s.Authorize(Request{Host: "claude-code", Tool: c.tool, Context: c.ctx})
		checkDecision(t, file+": "+c.name, d, c.effect, c.policies, c.reasons)
		if len(d.Errors) > 0 {
			t.Errorf("%s: %s: evaluation errors %q", file, c.name, d.Errors)
		}
	}
}

var (
	signedTool = Tool{Server: "acme:files", Name: "read_file", Version: "1.2.0", Provider: "acme", Signed: true}
	baseline   = []string{"baseline"}
)

func with(t Tool, f func(*Tool)) Tool {
	t.Scopes = append([]string(nil), t.Scopes...)
	f(&t)
	return t
}

func TestExampleForbidScope(t *testing.T) {
	shell := func(scopes ...string) Tool {
		return with(signedTool, func(t *Tool) { t.Name, t.Scopes = "run", scopes })
	}
	unsigned := func(scopes ...string) Tool {
		return Tool{Server: "unsigned:sh", Name: "run", Scopes: scopes}
	}
	runExample(t, "forbid-scope.cedar", []exampleCase{
		{"signed shell tool", shell("shell:exec"), Context{}, Forbid, []string{"no-shell"}, nil},
		{"unsigned shell tool", unsigned("shell:exec"), Context{}, Forbid, []string{"no-shell"}, nil},
		{"shell among other scopes", shell("files:read", "shell:exec", "net:fetch"), Context{}, Forbid, []string{"no-shell"}, nil},
		{"shell:exec called before", shell("files:read"), Context{SessionScopes: []string{"shell:exec"}}, Allow, baseline, nil},
		{"any shell scope", shell("shell:read"), Context{}, Forbid, []string{"no-shell"}, nil},
		{"deeper shell scope", shell("shell:exec:sudo"), Context{}, Forbid, []string{"no-shell"}, nil},
		{"no colon", shell("shellexec"), Context{}, Allow, baseline, nil},
		{"case differs", shell("Shell:Exec"), Context{}, Allow, baseline, nil},
		{"no scopes", shell(), Context{}, Allow, baseline, nil},
		{"tool named shell:exec", with(signedTool, func(t *Tool) { t.Name = "shell:exec" }), Context{}, Allow, baseline, nil},
	})
}

func TestExampleAskDestructive(t *testing.T) {
	const destructive = "this tool may delete or overwrite data"
	const unsignedReason = "this tool is not signed by a trusted provider"
	signed := func(def string) Tool {
		return with(signedTool, func(t *Tool) { t.Annotations = AnnotationsOf([]byte(def)) })
	}
	unsigned := func(def string) Tool {
		return Tool{Server: "unsigned:files", Name: "delete_file", Scopes: []string{"files:write"}, Annotations: AnnotationsOf([]byte(def))}
	}
	runExample(t, "ask-destructive.cedar", []exampleCase{
		{"signed, destructive", signed(`{"name":"rm","annotations":{"destructiveHint":true}}`),
			Context{}, Ask, []string{"ask-destructive"}, []string{destructive}},
		{"signed, destructive and read-only", signed(`{"annotations":{"destructiveHint":true,"readOnlyHint":true}}`),
			Context{}, Ask, []string{"ask-destructive"}, []string{destructive}},
		{"signed, not destructive", signed(`{"annotations":{"destructiveHint":false}}`), Context{}, Allow, baseline, nil},
		{"signed, read-only", signed(`{"annotations":{"readOnlyHint":true}}`), Context{}, Allow, baseline, nil},
		{"signed, no annotations", signed(`{"name":"read_file"}`), Context{}, Allow, baseline, nil},
		{"signed, destructiveHint not a boolean", signed(`{"annotations":{"destructiveHint":"true"}}`), Context{}, Allow, baseline, nil},
		// Unsigned annotations are not trusted, whatever they claim.
		{"unsigned, claims read-only and not destructive", unsigned(`{"annotations":{"destructiveHint":false,"readOnlyHint":true}}`),
			Context{}, Ask, []string{"ask-unsigned"}, []string{unsignedReason}},
		{"unsigned, destructive", unsigned(`{"annotations":{"destructiveHint":true}}`),
			Context{}, Ask, []string{"ask-unsigned"}, []string{unsignedReason}},
		{"unsigned, no annotations", unsigned(`{}`), Context{}, Ask, []string{"ask-unsigned"}, []string{unsignedReason}},
	})
}

func TestExampleExfiltration(t *testing.T) {
	fetch := Tool{Server: "acme:web", Name: "fetch", Version: "2.0.0", Provider: "acme", Signed: true, Scopes: []string{"net:fetch"}}
	read := Tool{Server: "acme:files", Name: "read_file", Version: "1.0.0", Provider: "acme", Signed: true, Scopes: []string{"files:read"}}
	forbidden := []string{"no-net-after-files"}
	runExample(t, "exfiltration.cedar", []exampleCase{
		{"net after files:read", fetch, Context{SessionScopes: []string{"files:read"}}, Forbid, forbidden, nil},
		{"net after files:read among others", fetch, Context{SessionScopes: []string{"a:b", "files:read", "net:fetch"}}, Forbid, forbidden, nil},
		{"net:post:form after files:read", with(fetch, func(t *Tool) { t.Scopes = []string{"net:post:form"} }),
			Context{SessionScopes: []string{"files:read"}}, Forbid, forbidden, nil},
		{"tool that reads files and reaches the net, after files:read", with(fetch, func(t *Tool) { t.Scopes = []string{"files:read", "net:fetch"} }),
			Context{SessionScopes: []string{"files:read"}}, Forbid, forbidden, nil},
		{"net after files:read:secrets", fetch, Context{SessionScopes: []string{"files:read:secrets"}}, Forbid, forbidden, nil},
		// Near misses.
		{"net, nothing before", fetch, Context{}, Allow, baseline, nil},
		{"net after files:write only", fetch, Context{SessionScopes: []string{"files:write"}}, Allow, baseline, nil},
		{"net after net", fetch, Context{SessionScopes: []string{"net:fetch"}}, Allow, baseline, nil},
		{"files:read after net", read, Context{SessionScopes: []string{"net:fetch"}}, Allow, baseline, nil},
		{"files:read after files:read", read, Context{SessionScopes: []string{"files:read"}}, Allow, baseline, nil},
		{"tool that reads files and reaches the net, first call", with(fetch, func(t *Tool) { t.Scopes = []string{"files:read", "net:fetch"} }),
			Context{}, Allow, baseline, nil},
		{"scope network (not net:*) after files:read", with(fetch, func(t *Tool) { t.Scopes = []string{"network"} }),
			Context{SessionScopes: []string{"files:read"}}, Allow, baseline, nil},
	})

	// The same flow driven by a Session, as a gate does.
	s := loadExample(t, "exfiltration.cedar")
	var sess Session
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	call := func(tool Tool) Decision {
		now = now.Add(time.Second)
		d := s.Authorize(Request{Host: "h", Tool: tool, Context: sess.Context(tool.Name, []byte(`{"url":"https://example.com"}`), now)})
		if d.Effect == Allow {
			sess.Called(tool, now)
		}
		return d
	}
	checkDecision(t, "session: fetch first", call(fetch), Allow, baseline, nil)
	checkDecision(t, "session: read after fetch", call(read), Allow, baseline, nil)
	checkDecision(t, "session: fetch after read", call(fetch), Forbid, forbidden, nil)
	// A minute later the session still remembers the read.
	now = now.Add(time.Hour)
	checkDecision(t, "session: fetch an hour after read", call(fetch), Forbid, forbidden, nil)
}

func TestExampleRateLimit(t *testing.T) {
	tool := Tool{Server: "acme:web", Name: "search", Signed: true, Scopes: []string{"net:fetch"}}
	writer := Tool{Server: "acme:files", Name: "write_file", Signed: true, Scopes: []string{"files:write"}}
	rate := []string{"rate-30-per-minute"}
	writes := []string{"writes-5-per-session"}
	runExample(t, "rate-limit.cedar", []exampleCase{
		{"first call", tool, Context{}, Allow, baseline, nil},
		{"29 calls this minute", tool, Context{CallsThisMinute: 29}, Allow, baseline, nil},
		{"30 calls this minute", tool, Context{CallsThisMinute: 30}, Forbid, rate, nil},
		{"31 calls this minute", tool, Context{CallsThisMinute: 31}, Forbid, rate, nil},
		{"writer, 4 calls before", writer, Context{CallsOfThisTool: 4}, Allow, baseline, nil},
		{"writer, 5 calls before", writer, Context{CallsOfThisTool: 5}, Forbid, writes, nil},
		{"non-writer, 500 calls before", tool, Context{CallsOfThisTool: 500}, Allow, baseline, nil},
		{"writer, both limits", writer, Context{CallsThisMinute: 30, CallsOfThisTool: 5}, Forbid, []string{"rate-30-per-minute", "writes-5-per-session"}, nil},
		{"files:write:tmp is not files:write", with(writer, func(t *Tool) { t.Scopes = []string{"files:write:tmp"} }),
			Context{CallsOfThisTool: 5}, Allow, baseline, nil},
	})

	// Driven by a Session: 30 calls in a minute go through, the 31st does
	// not (29 before it: allowed; 30 before it: forbidden), and a minute
	// later calls go through again.
	s := loadExample(t, "rate-limit.cedar")
	var sess Session
	t0 := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	for i := range 30 {
		now := t0.Add(time.Duration(i) * time.Second)
		d := s.Authorize(Request{Host: "h", Tool: tool, Context: sess.Context(tool.Name, nil, now)})
		if d.Effect != Allow {
			t.Fatalf("call %d of the minute: %s", i+1, d.Summary())
		}
		sess.Called(tool, now)
	}
	d := s.Authorize(Request{Host: "h", Tool: tool, Context: sess.Context(tool.Name, nil, t0.Add(30*time.Second))})
	checkDecision(t, "31st call in the minute", d, Forbid, rate, nil)
	d = s.Authorize(Request{Host: "h", Tool: tool, Context: sess.Context(tool.Name, nil, t0.Add(60*time.Second))})
	checkDecision(t, "a minute after the first call", d, Allow, baseline, nil)

	// The writer: five calls, then no more however slowly.
	for i := range 5 {
		now := t0.Add(time.Duration(i) * time.Hour)
		d := s.Authorize(Request{Host: "h", Tool: writer, Context: sess.Context(writer.Name, nil, now)})
		if d.Effect != Allow {
			t.Fatalf("write %d: %s", i+1, d.Summary())
		}
		sess.Called(writer, now)
	}
	d = s.Authorize(Request{Host: "h", Tool: writer, Context: sess.Context(writer.Name, nil, t0.Add(10*time.Hour))})
	checkDecision(t, "sixth write", d, Forbid, writes, nil)
}

// TestExamplesScopes checks that every scopes overlay of the examples
// parses.
func TestExamplesScopes(t *testing.T) {
	matches, err := filepath.Glob(filepath.Join("..", "examples", "policies", "*.scopes.json"))
	if err != nil || len(matches) == 0 {
		t.Fatalf("overlays: %q %v", matches, err)
	}
	for _, m := range matches {
		if _, err := LoadScopes(m); err != nil {
			t.Error(err)
		}
	}
}

// TestExamplesDescribe checks what the examples declare of themselves.
func TestExamplesDescribe(t *testing.T) {
	for file, session := range map[string]bool{
		"forbid-scope.cedar": false, "ask-destructive.cedar": false,
		"exfiltration.cedar": true, "rate-limit.cedar": true, "reference-servers.cedar": true,
	} {
		if got := loadExample(t, file).Session(); got != session {
			t.Errorf("%s: Session() = %v, want %v", file, got, session)
		}
	}
	// All five load together only if their ids are unique, which they are
	// not: each has its baseline.
	matches, err := filepath.Glob(filepath.Join("..", "examples", "policies", "*.cedar"))
	if err != nil || len(matches) != 5 {
		t.Fatalf("examples: %q %v", matches, err)
	}
	if _, err := LoadFiles(matches...); err == nil {
		t.Error("the examples loaded together despite sharing @id baseline")
	}
}

// The starter policy for the reference servers, with the scopes its
// overlay gives: reads pass, writes and deletes are asked about, the
// environment is never read, nothing reaches the network after a read,
// and an unsigned tool without scopes is asked about.
func TestExampleReferenceServers(t *testing.T) {
	ov, err := LoadScopes(filepath.Join("..", "examples", "policies", "reference-servers.scopes.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := ov.Servers(); len(got) != 5 || got[0] != "everything" || got[4] != "memory" {
		t.Fatalf("servers %v", got)
	}
	scoped := func(server, name string) Tool {
		ss, ok := ov.tools[server][name]
		if !ok {
			t.Fatalf("the overlay has no %s/%s", server, name)
		}
		return Tool{Server: "unsigned:" + server, Name: name, Scopes: ss}
	}
	askFiles := []string{"this tool creates, overwrites, edits or moves files"}
	runExample(t, "reference-servers.cedar", []exampleCase{
		{"read_file", scoped("filesystem", "read_file"), Context{}, Allow, baseline, nil},
		{"write_file", scoped("filesystem", "write_file"), Context{}, Ask, []string{"ask-file-writes"}, askFiles},
		{"move_file", scoped("filesystem", "move_file"), Context{}, Ask, []string{"ask-file-writes"}, askFiles},
		{"read_graph", scoped("memory", "read_graph"), Context{}, Allow, baseline, nil},
		{"create_entities", scoped("memory", "create_entities"), Context{}, Allow, baseline, nil},
		{"delete_entities", scoped("memory", "delete_entities"), Context{}, Ask, []string{"ask-memory-deletes"}, []string{"this tool deletes from the knowledge graph"}},
		{"git_status", scoped("git", "git_status"), Context{}, Allow, baseline, nil},
		{"git_commit", scoped("git", "git_commit"), Context{}, Ask, []string{"ask-git-writes"},
			[]string{"this tool changes the repository: it stages, commits, resets or switches branches"}},
		{"get-env", scoped("everything", "get-env"), Context{}, Forbid, []string{"no-env"}, nil},
		{"echo", scoped("everything", "echo"), Context{}, Allow, baseline, nil},
		{"fetch first", scoped("fetch", "fetch"), Context{}, Allow, baseline, nil},
		{"fetch after a file read", scoped("fetch", "fetch"), Context{SessionScopes: []string{"files:read"}}, Forbid, []string{"no-net-after-reads"}, nil},
		{"fetch after git", scoped("fetch", "fetch"), Context{SessionScopes: []string{"git:read"}}, Forbid, []string{"no-net-after-reads"}, nil},
		{"unsigned without scopes", Tool{Server: "unsigned:notes", Name: "add_note"}, Context{}, Ask, []string{"ask-unscoped-unsigned"},
			[]string{"this tool is not signed and was given no scopes: nobody said what it does"}},
		{"signed without scopes", signedTool, Context{}, Allow, baseline, nil},
	})
	if w := loadExample(t, "reference-servers.cedar").Warnings(); len(w) != 0 {
		t.Fatalf("warnings %q", w)
	}
}
