package policy

import (
	"slices"
	"strings"
	"testing"
)

// fuzzRequest is the request FuzzParse authorizes with every Set it
// parses: a signed tool with annotations, in a session with history.
var fuzzRequest = Request{
	Host: "claude-code",
	Tool: Tool{
		Server: "acme:files", Name: "write_file", Version: "1.4.2", Provider: "acme", Signed: true,
		Scopes:      []string{"files:write", "net:fetch"},
		Annotations: Annotations{Destructive: boolp(true), ReadOnly: boolp(false)},
	},
	Context: Context{
		SessionScopes:   []string{"files:read", "shell:exec"},
		CallsThisMinute: 31, CallsOfThisTool: 5,
		ArgumentsDigest: ArgumentsDigest([]byte(`{"path":"/tmp/x","content":"hi"}`)),
	},
}

// FuzzParse reads arbitrary bytes as a policy file: Parse never panics,
// refuses with an error or returns a Set whose every policy has a valid
// @id, and Authorize never panics and decides one of the three effects,
// naming only the Set's policies.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(Source{Name: "fuzz.cedar", Text: data})
		if err != nil {
			if s != nil {
				t.Fatal("Parse returned a Set with an error")
			}
			if !strings.HasPrefix(err.Error(), "policy: ") {
				t.Fatalf("error %q", err)
			}
			return
		}
		ps := s.Policies()
		if len(ps) == 0 {
			t.Fatal("a Set without policies")
		}
		ids := map[string]Rule{}
		for _, p := range ps {
			if !idPattern().MatchString(p.ID) {
				t.Fatalf("policy id %q", p.ID)
			}
			if _, dup := ids[p.ID]; dup {
				t.Fatalf("two policies %q", p.ID)
			}
			ids[p.ID] = p
			if p.Effect != "permit" && p.Effect != "forbid" {
				t.Fatalf("policy %s: effect %q", p.ID, p.Effect)
			}
			if p.Ask != "" && (p.Effect != "forbid" || strings.TrimSpace(p.Ask) == "" || len(p.Ask) > maxAsk) {
				t.Fatalf("policy %s: %s with @ask %q", p.ID, p.Effect, p.Ask)
			}
			if !strings.HasPrefix(p.Position, "fuzz.cedar:") {
				t.Fatalf("policy %s: position %q", p.ID, p.Position)
			}
		}
		for _, r := range []Request{fuzzRequest, {}} {
			d := s.Authorize(r)
			if d.Effect != Allow && d.Effect != Ask && d.Effect != Forbid {
				t.Fatalf("effect %d", d.Effect)
			}
			if d.Policies == nil || !slices.IsSorted(d.Policies) {
				t.Fatalf("policies %q", d.Policies)
			}
			for _, id := range d.Policies {
				// An allow names permits, an ask forbids with @ask, a
				// forbid forbids without.
				p, ok := ids[id]
				var fits bool
				switch d.Effect {
				case Allow:
					fits = p.Effect == "permit"
				case Ask:
					fits = p.Effect == "forbid" && p.Ask != ""
				case Forbid:
					fits = p.Effect == "forbid" && p.Ask == ""
				}
				if !ok || !fits {
					t.Fatalf("%s names policy %q (%+v)", d.Summary(), id, p)
				}
			}
			switch d.Effect {
			case Allow:
				if len(d.Policies) == 0 {
					t.Fatal("allowed by no policy")
				}
			case Ask:
				if len(d.Policies) == 0 || len(d.Reasons) != len(d.Policies) {
					t.Fatalf("ask %q with reasons %q", d.Policies, d.Reasons)
				}
			}
		}
	})
}

// FuzzSummarizeArguments gives arbitrary bytes as a call's arguments: the
// summary is valid UTF-8, holds no character a terminal would act on or
// hide (bar its own line breaks), and is bounded.
func FuzzSummarizeArguments(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		s := SummarizeArguments(data)
		checkSummary(t, s)
		if len(s) > summaryTotal+len("... and 99999999 more") {
			t.Fatalf("summary of %d bytes", len(s))
		}
		if strings.Count(s, "\n") > summaryMembers {
			t.Fatalf("summary of %d lines", strings.Count(s, "\n")+1)
		}
		if d := ArgumentsDigest(data); !strings.HasPrefix(d, "sha256:") && !strings.HasPrefix(d, "raw-sha256:") {
			t.Fatalf("digest %q", d)
		}
	})
}
