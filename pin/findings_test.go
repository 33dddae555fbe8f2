package pin

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
)

// findingRecords lists the finding records as "kind tool digest".
func findingRecords(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	err := s.Records(func(_ []byte, r *Record) error {
		if r.Type == RecordFinding {
			out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s", r.Kind, r.Tool, r.Digest)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func logLen(t testing.TB, s *Store) int64 {
	t.Helper()
	tree, err := s.VerifyLog()
	if err != nil {
		t.Fatal(err)
	}
	return tree.Size
}

// A tool that keeps needing approval is recorded once per server, tool
// and digest, however often it is checked.
func TestRepeatedFindingRecordedOnce(t *testing.T) {
	s := openTemp(t)
	srv := "acme:weather"
	v1 := tool(t, "get_weather", "1.0.0", weatherDef, keyA)
	f1 := tool(t, "get_forecast", "1.0.0", `{"name":"get_forecast"}`, keyA)
	for range 7 {
		expect(t, s, obs(srv, 1, v1, f1), "new_tool", "new_tool")
	}
	if got := findingRecords(t, s); len(got) != 2 {
		t.Fatalf("7 checks of 2 new tools wrote %d finding records: %v", len(got), got)
	}
	// The same tools on another server are other findings.
	expect(t, s, obs("acme:other", 1, v1, f1), "new_tool", "new_tool")
	if got := findingRecords(t, s); len(got) != 4 {
		t.Fatalf("another server's findings not recorded: %v", got)
	}
	// Another definition of the same tool is another finding.
	v1b := tool(t, "get_weather", "1.0.0", `{"name":"get_weather","description":"changed"}`, keyA)
	expect(t, s, obs(srv, 1, v1b, f1), "new_tool", "new_tool")
	got := findingRecords(t, s)
	if len(got) != 5 || got[4] != "new_tool get_weather "+v1b.Digest.String() {
		t.Fatalf("a new digest was not recorded: %v", got)
	}
	// Going back to the first definition is not new: it was recorded.
	expect(t, s, obs(srv, 1, v1, f1), "new_tool", "new_tool")
	if got := findingRecords(t, s); len(got) != 5 {
		t.Fatalf("a finding already recorded was recorded again: %v", got)
	}
	if _, err := s.VerifyLog(); err != nil {
		t.Fatal(err)
	}
}

// A clean check and a check with nothing new write no transaction at all:
// the history does not grow.
func TestNothingNewWritesNothing(t *testing.T) {
	s := openTemp(t)
	o := obs("acme:weather", 1, tool(t, "get_weather", "1.0.0", weatherDef, keyA))
	expect(t, s, o, "new_tool")
	n := logLen(t, s)
	expect(t, s, o, "new_tool")
	if logLen(t, s) != n {
		t.Fatal("a repeated finding grew the history")
	}
}

// Security findings that differ are never dropped: a rug pull to another
// definition, a finding that comes back after an approval or a
// revocation, and each of several equal findings in one check.
func TestDifferentFindingsStillRecorded(t *testing.T) {
	s := openTemp(t)
	srv := "acme:weather"
	v1 := tool(t, "get_weather", "1.0.0", weatherDef, keyA)
	mustApprove(t, s, obs(srv, 1, v1))
	rug1 := tool(t, "get_weather", "1.0.0", `{"name":"get_weather"}`, keyA)
	rug2 := tool(t, "get_weather", "1.0.0", `{"name":"get_weather","description":"x"}`, keyA)
	expect(t, s, obs(srv, 1, rug1), "rug_pull")
	expect(t, s, obs(srv, 1, rug1), "rug_pull")
	expect(t, s, obs(srv, 1, rug2), "rug_pull")
	want := []string{"rug_pull get_weather " + rug1.Digest.String(), "rug_pull get_weather " + rug2.Digest.String()}
	if got := findingRecords(t, s); !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	// The change approved, then v1 approved again, then the same rug pull
	// as the first: recorded again, it is a new event after a decision.
	mustApprove(t, s, obs(srv, 1, rug2), "get_weather")
	mustApprove(t, s, obs(srv, 1, v1), "get_weather")
	expect(t, s, obs(srv, 1, rug1), "rug_pull")
	if got := findingRecords(t, s); len(got) != 3 {
		t.Fatalf("the finding after a re-approval was not recorded: %v", got)
	}
	// A revocation of the tool is a decision too.
	if err := s.Revoke(Revocation{Server: srv, Tool: "get_weather", Version: "1.0.0", By: "sec"}); err != nil {
		t.Fatal(err)
	}
	expect(t, s, obs(srv, 1, v1), "revoked")
	expect(t, s, obs(srv, 1, v1), "revoked")
	got := findingRecords(t, s)
	if len(got) != 4 || !strings.HasPrefix(got[3], "revoked ") {
		t.Fatalf("revoked: %v", got)
	}
	// A key revocation about another server is a decision for every
	// server: the shadowing finding below comes back once after it.
	other := tool(t, "get_weather", "1.0.0", `{"name":"get_weather","description":"other"}`, keyB)
	expect(t, s, obs("evil:srv", 1, other), "shadowing")
	expect(t, s, obs("evil:srv", 1, other), "shadowing")
	if got := findingRecords(t, s); len(got) != 5 {
		t.Fatalf("shadowing: %v", got)
	}
	if err := s.Revoke(Revocation{KeyID: "sha256:" + strings.Repeat("cd", 32), By: "sec"}); err != nil {
		t.Fatal(err)
	}
	expect(t, s, obs("evil:srv", 1, other), "shadowing")
	if got := findingRecords(t, s); len(got) != 6 {
		t.Fatalf("shadowing after a key revocation: %v", got)
	}
}

// Each of several equal findings of one check is recorded; a later check
// with one more of them records only that one.
func TestEqualFindingsCounted(t *testing.T) {
	s := openTemp(t)
	o := obs("unsigned:x", 0, tool(t, "t", "", `{"name":"t"}`, Unsigned))
	w := finding.Finding{Kind: finding.UnsignedTool, Severity: finding.Warning, Tool: "t", Message: "tool t is not signed"}
	if _, err := s.Check(o, "tester", w, w); err != nil {
		t.Fatal(err)
	}
	if got := findingRecords(t, s); len(got) != 3 { // 2 warnings, 1 new_tool
		t.Fatalf("records %v", got)
	}
	if _, err := s.Check(o, "tester", w, w, w); err != nil {
		t.Fatal(err)
	}
	if got := findingRecords(t, s); len(got) != 4 {
		t.Fatalf("records %v", got)
	}
	if _, err := s.Check(o, "tester", w); err != nil {
		t.Fatal(err)
	}
	if got := findingRecords(t, s); len(got) != 4 {
		t.Fatalf("records %v", got)
	}
}

// Findings of verification passed to Check are recorded with their own
// kind and severity; information is never recorded.
func TestCheckRecordsExtraFindings(t *testing.T) {
	s := openTemp(t)
	srv := "acme:weather"
	v1 := tool(t, "get_weather", "1.0.0", weatherDef, keyA)
	mustApprove(t, s, obs(srv, 1, v1))
	extra := []finding.Finding{
		{Kind: finding.DefinitionChanged, Severity: finding.Error, Tool: "get_weather", Version: "1.0.0", Live: "sha256:" + strings.Repeat("1", 64), Message: "changed"},
		{Kind: finding.NotServed, Severity: finding.Info, Tool: "gone", Message: "not served"},
	}
	if _, err := s.Check(obs(srv, 1, v1), "tester", extra...); err != nil {
		t.Fatal(err)
	}
	var got []string
	s.Records(func(_ []byte, r *Record) error {
		if r.Type == RecordFinding {
			got = append(got, r.Kind+"/"+r.Severity+"/"+r.Server)
		}
		return nil
	})
	if want := []string{"definition_changed/error/" + srv}; !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
}

// A history of 2,000 finding records about 50 servers. A repeated
// finding recorded by the previous check is settled from the end of the
// history; one recorded first reads back to the start; Compare alone is
// the cost without recording.
func BenchmarkCheckRepeatedFinding(b *testing.B) {
	s, err := Open(b.TempDir()+"/pins.db", Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	one := func(srv, name string) *Observation {
		return obs(srv, 0, Observed{Name: name, Digest: digestOf(name), Canonical: []byte(`{"name":"` + name + `"}`), Signer: Unsigned})
	}
	for i := range 2000 {
		if _, err := s.Check(one(fmt.Sprintf("unsigned:s%d", i%50), fmt.Sprintf("tool_%d", i)), "bench"); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name string
		o    *Observation
		fn   func(*Observation) error
	}{
		{"recorded-last", one("unsigned:s49", "tool_1999"), func(o *Observation) error { _, err := s.Check(o, "bench"); return err }},
		{"recorded-first", one("unsigned:s0", "tool_0"), func(o *Observation) error { _, err := s.Check(o, "bench"); return err }},
		{"compare-only", one("unsigned:s0", "tool_0"), func(o *Observation) error { _, err := s.Compare(o); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			n := logLen(b, s)
			for b.Loop() {
				if err := bc.fn(bc.o); err != nil {
					b.Fatal(err)
				}
			}
			if logLen(b, s) != n {
				b.Fatal("a repeated finding was recorded again")
			}
		})
	}
}

func digestOf(name string) etdi.Digest {
	d, _ := etdi.DigestJSON([]byte(`{"name":"` + name + `"}`))
	return d
}

// An approved, unchanged unsigned tool's unsigned_tool warning is its
// state, not an event: checks after the approval record nothing, however
// many. A tool that needs a decision (new, or changed) still has its
// warning recorded with its other findings, and an unsigned_tool error
// (the policy blocks unsigned tools) is recorded as before.
func TestApprovedUnsignedToolNotRecordedEachCheck(t *testing.T) {
	s := openTemp(t)
	srv := "unsigned:notes"
	a := tool(t, "add_note", "", `{"name":"add_note"}`, Unsigned)
	b := tool(t, "read_notes", "", `{"name":"read_notes"}`, Unsigned)
	warn := func(ts ...Observed) []finding.Finding {
		var out []finding.Finding
		for _, x := range ts {
			out = append(out, finding.Finding{Kind: finding.UnsignedTool, Severity: finding.Warning, Server: srv, Tool: x.Name,
				Live: x.Digest.String(), Message: fmt.Sprintf("tool %q of %s is not signed (policy: warn); pinned by digest", x.Name, srv)})
		}
		return out
	}
	check := func(o *Observation, extra []finding.Finding) {
		t.Helper()
		if _, err := s.Check(o, "tester", extra...); err != nil {
			t.Fatal(err)
		}
	}
	o := obs(srv, 0, a, b)
	check(o, warn(a, b))
	want := []string{"unsigned_tool add_note " + a.Digest.String(), "unsigned_tool read_notes " + b.Digest.String(),
		"new_tool add_note " + a.Digest.String(), "new_tool read_notes " + b.Digest.String()}
	if got := findingRecords(t, s); !slices.Equal(got, want) {
		t.Fatalf("first check recorded %v, want %v", got, want)
	}
	mustApprove(t, s, o)
	n := logLen(t, s)
	for range 5 {
		check(o, warn(a, b))
	}
	if got := logLen(t, s); got != n {
		t.Fatalf("five checks of approved, unchanged unsigned tools grew the history from %d to %d records: %v", n, got, findingRecords(t, s)[len(want):])
	}
	// read_notes changes: its warning goes with its rug pull; add_note,
	// unchanged, is still not recorded.
	b2 := tool(t, "read_notes", "", `{"name":"read_notes","description":"changed"}`, Unsigned)
	check(obs(srv, 0, a, b2), warn(a, b2))
	got := findingRecords(t, s)[len(want):]
	if !slices.Equal(got, []string{"unsigned_tool read_notes " + b2.Digest.String(), "rug_pull read_notes " + b2.Digest.String()}) {
		t.Fatalf("after a change: %v", got)
	}
	// A blocking unsigned_tool error is a finding of the server: recorded.
	blocked := finding.Finding{Kind: finding.UnsignedTool, Severity: finding.Error, Server: srv, Message: "server unsigned:notes has no bundle and the trust policy blocks unsigned tools"}
	check(o, []finding.Finding{blocked})
	if got := findingRecords(t, s); got[len(got)-1] != "unsigned_tool" {
		t.Fatalf("a blocking unsigned_tool was not recorded: %v", got)
	}
	// Another warning about an approved, unchanged tool is recorded.
	mixed := finding.Finding{Kind: finding.MixedScript, Severity: finding.Warning, Server: srv, Tool: "add_note", Live: a.Digest.String(), Message: "tool \"add_note\" mixes scripts"}
	check(o, []finding.Finding{mixed})
	if got := findingRecords(t, s); got[len(got)-1] != "mixed_script add_note "+a.Digest.String() {
		t.Fatalf("another warning about an approved tool was not recorded: %v", got)
	}
	// So is a tool's unsigned_tool error (a bundle that does not sign it,
	// under block), though the tool is approved as observed.
	toolErr := finding.Finding{Kind: finding.UnsignedTool, Severity: finding.Error, Server: srv, Tool: "add_note", Live: a.Digest.String(), Message: "tool \"add_note\" is not signed by the bundle (policy: block)"}
	check(o, []finding.Finding{toolErr})
	if got := findingRecords(t, s); got[len(got)-1] != "unsigned_tool add_note "+a.Digest.String() {
		t.Fatalf("a tool's unsigned_tool error was not recorded: %v", got)
	}
}
