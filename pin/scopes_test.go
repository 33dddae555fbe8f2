package pin

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

const writeDef = `{"name":"write_file","description":"Create or overwrite a file.","inputSchema":{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}}}}`
const readDef = `{"name":"read_file","description":"Read a file.","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}}}`

func filesObs(t *testing.T, write string) *Observation {
	return servedObs("files", npmTime, tool(t, "read_file", "", readDef, Unsigned), tool(t, "write_file", "", write, Unsigned))
}

// recordOf returns the last history record of the tool.
func lastRecordOf(t *testing.T, s *Store, tool string) Record {
	t.Helper()
	var last Record
	if err := s.Records(func(_ []byte, r *Record) error {
		if r.Tool == tool {
			last = *r
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return last
}

// Scopes given at approval are in the pin and its history record, sorted
// and each once, and the comparison of the unchanged tool carries them.
func TestApproveScopesRecorded(t *testing.T) {
	s := openTestStore(t, Options{})
	o := filesObs(t, writeDef)
	a, r, err := s.Approve(o, ApproveOptions{By: "x", ScopesAll: []string{"files:read"},
		Scopes: map[string][]string{"write_file": {"files:write", "files:read", "files:write"}}})
	if err != nil || len(r) != 0 || len(a) != 2 {
		t.Fatalf("%+v %+v %v", a, r, err)
	}
	p, _ := s.Get(UnsignedServerKey("files"), "write_file")
	if !slices.Equal(p.Scopes, []string{"files:read", "files:write"}) {
		t.Fatalf("pin scopes %v", p.Scopes)
	}
	if rec := lastRecordOf(t, s, "write_file"); !slices.Equal(rec.Scopes, p.Scopes) {
		t.Fatalf("record scopes %v", rec.Scopes)
	}
	if p, _ := s.Get(UnsignedServerKey("files"), "read_file"); !slices.Equal(p.Scopes, []string{"files:read"}) {
		t.Fatalf("read_file scopes %v", p.Scopes)
	}
	c := expect(t, s, o)
	for _, st := range c.Tools {
		want := map[string][]string{"read_file": {"files:read"}, "write_file": {"files:read", "files:write"}}[st.Name]
		if st.Status != StatusOK || !slices.Equal(st.Scopes, want) {
			t.Fatalf("state %+v", st)
		}
	}
	auditClean(t, s)
}

// Scopes are refused for a signed tool (its provider's permissions are
// its scopes), for a tool the server does not offer, and when malformed;
// nothing is approved then.
func TestApproveScopesRefused(t *testing.T) {
	s := openTestStore(t, Options{})
	signed := obs("acme:weather", 1, tool(t, "get_weather", "1.0.0", weatherDef, keyA, "net:fetch"))
	for name, opts := range map[string]ApproveOptions{
		"signed named": {Scopes: map[string][]string{"get_weather": {"net:none"}}},
		"signed all":   {ScopesAll: []string{"net:none"}},
	} {
		opts.By = "x"
		a, _, err := s.Approve(signed, opts)
		if err == nil || !strings.Contains(err.Error(), "signed") || len(a) != 0 {
			t.Fatalf("%s: %+v %v", name, a, err)
		}
	}
	expect(t, s, signed, "new_tool")
	o := filesObs(t, writeDef)
	for name, opts := range map[string]ApproveOptions{
		"unknown tool": {Scopes: map[string][]string{"delete_file": {"files:write"}}},
		"bad scope":    {Scopes: map[string][]string{"write_file": {"files write"}}},
		"empty scope":  {ScopesAll: []string{""}},
	} {
		opts.By = "x"
		if a, _, err := s.Approve(o, opts); err == nil || len(a) != 0 {
			t.Fatalf("%s: %+v %v", name, a, err)
		}
	}
	expect(t, s, o, "new_tool", "new_tool")
	many := make([]string, MaxScopes+1)
	for i := range many {
		many[i] = "s:" + strings.Repeat("a", i+1)
	}
	if _, err := NormalizeScopes(many); err == nil {
		t.Fatal("more than MaxScopes accepted")
	}
}

// A changed definition approved again keeps the scopes of the one
// approved before (shown as kept); the earlier variant keeps its own; new
// scopes given replace them.
func TestApproveScopesStayWithDigest(t *testing.T) {
	s := openTestStore(t, Options{})
	v1 := filesObs(t, writeDef)
	if _, _, err := s.Approve(v1, ApproveOptions{By: "x", Scopes: map[string][]string{"write_file": {"files:write"}}}); err != nil {
		t.Fatal(err)
	}
	v2 := filesObs(t, strings.Replace(writeDef, "Create or", "Create, append to or", 1))
	expect(t, s, v2, "rug_pull")
	a := mustApprove(t, s, v2, "write_file")
	if len(a) != 1 || !a[0].ScopesKept || !slices.Equal(a[0].Pin.Scopes, []string{"files:write"}) {
		t.Fatalf("re-approval %+v", a)
	}
	if rec := lastRecordOf(t, s, "write_file"); !slices.Equal(rec.Scopes, []string{"files:write"}) {
		t.Fatalf("record %+v", rec)
	}
	v3 := filesObs(t, strings.Replace(writeDef, "Create or", "Make or", 1))
	a, r, err := s.Approve(v3, ApproveOptions{By: "x", Tools: []string{"write_file"}, Scopes: map[string][]string{"write_file": {"files:write", "files:delete"}}})
	if err != nil || len(r) != 0 || len(a) != 1 || a[0].ScopesKept || !slices.Equal(a[0].Pin.Scopes, []string{"files:delete", "files:write"}) {
		t.Fatalf("%+v %+v %v", a, r, err)
	}
	for o, want := range map[*Observation][]string{v1: {"files:write"}, v2: {"files:write"}, v3: {"files:delete", "files:write"}} {
		c := expect(t, s, o)
		if i := slices.IndexFunc(c.Tools, func(st ToolState) bool { return st.Name == "write_file" }); !slices.Equal(c.Tools[i].Scopes, want) {
			t.Fatalf("scopes %v, want %v", c.Tools[i].Scopes, want)
		}
	}
	auditClean(t, s)
}

// Scopes given to an approved, unchanged tool approve it again with them,
// recorded; the same scopes again approve nothing.
func TestApproveScopesOfApprovedTool(t *testing.T) {
	s := openTestStore(t, Options{})
	o := filesObs(t, writeDef)
	mustApprove(t, s, o)
	opts := ApproveOptions{By: "y", Tools: []string{"write_file"}, Scopes: map[string][]string{"write_file": {"files:write"}}}
	a, r, err := s.Approve(o, opts)
	if err != nil || len(r) != 0 || len(a) != 1 || a[0].Kind != ScopesChanged || len(a[0].ScopesBefore) != 0 {
		t.Fatalf("%+v %+v %v", a, r, err)
	}
	rec := lastRecordOf(t, s, "write_file")
	if rec.Type != RecordReapprove || rec.Kind != ScopesChanged || rec.By != "y" || !slices.Equal(rec.Scopes, []string{"files:write"}) {
		t.Fatalf("record %+v", rec)
	}
	if a, _, err := s.Approve(o, opts); err != nil || len(a) != 0 {
		t.Fatalf("again: %+v %v", a, err)
	}
	expect(t, s, o)
	auditClean(t, s)
}

// Scopes written into the database outside etdi (removed, to escape a
// rule that forbids them) are not justified by the history.
func TestApproveScopesEdited(t *testing.T) {
	s := openTestStore(t, Options{})
	o := filesObs(t, writeDef)
	if _, _, err := s.Approve(o, ApproveOptions{By: "x", Scopes: map[string][]string{"write_file": {"files:write"}}}); err != nil {
		t.Fatal(err)
	}
	srv := UnsignedServerKey("files")
	s = edit(t, s, func(tx *bolt.Tx) {
		p := rawPin(t, tx, srv, "write_file")
		p.Scopes = nil
		putJSON(t, tx.Bucket(bPins), pinKey(srv, "write_file"), p)
	})
	var ue *UnjustifiedError
	if _, err := s.Compare(o); !errors.As(err, &ue) || !strings.Contains(err.Error(), "scopes") {
		t.Fatalf("compare: %v", err)
	}
}

// The audit of the database finds scopes edited outside etdi (added, to
// meet a rule that permits them) as the comparison does: its replay of
// the history compares the scopes too.
func TestAuditFindsEditedScopes(t *testing.T) {
	s := openTestStore(t, Options{})
	o := filesObs(t, writeDef)
	if _, _, err := s.Approve(o, ApproveOptions{By: "x", Scopes: map[string][]string{"read_file": {"files:read"}}}); err != nil {
		t.Fatal(err)
	}
	srv := UnsignedServerKey("files")
	s = edit(t, s, func(tx *bolt.Tx) {
		p := rawPin(t, tx, srv, "write_file")
		p.Scopes = []string{"files:read"}
		putJSON(t, tx.Bucket(bPins), pinKey(srv, "write_file"), p)
	})
	for _, audit := range []func() ([]Disagreement, error){
		s.VerifyPins,
		func() ([]Disagreement, error) { _, d, err := s.Audit(); return d, err },
	} {
		dis, err := audit()
		if err != nil {
			t.Fatal(err)
		}
		if len(dis) != 1 || !strings.Contains(dis[0].Msg, "scopes") {
			t.Fatalf("edited scopes not found: %v", dis)
		}
	}
}

// The same server under a second name, covered by the approval of the
// first (docs/storage.md#one-artifact-under-several-configuration-names), has the scopes that approval gave.
func TestApproveScopesShared(t *testing.T) {
	s := openTestStore(t, Options{})
	if _, _, err := s.Approve(filesObs(t, writeDef), ApproveOptions{By: "x", Scopes: map[string][]string{"write_file": {"files:write"}}}); err != nil {
		t.Fatal(err)
	}
	second := filesObs(t, writeDef)
	second.Server, second.Name = UnsignedServerKey("files2"), "files2"
	c := expect(t, s, second)
	i := slices.IndexFunc(c.Tools, func(st ToolState) bool { return st.Name == "write_file" })
	if c.Tools[i].ApprovedAs != UnsignedServerKey("files") || !slices.Equal(c.Tools[i].Scopes, []string{"files:write"}) {
		t.Fatalf("%+v", c.Tools[i])
	}
}

// Scopes given to the latest of several approved definitions keep the
// others approved, with their own scopes.
func TestApproveScopesOfVariant(t *testing.T) {
	s := openTestStore(t, Options{})
	v1 := filesObs(t, writeDef)
	v2 := filesObs(t, strings.Replace(writeDef, "Create or", "Create, append to or", 1))
	if _, _, err := s.Approve(v1, ApproveOptions{By: "x", Scopes: map[string][]string{"write_file": {"files:write"}}}); err != nil {
		t.Fatal(err)
	}
	mustApprove(t, s, v2, "write_file")
	a, r, err := s.Approve(v2, ApproveOptions{By: "x", Tools: []string{"write_file"}, Scopes: map[string][]string{"write_file": {"files:append"}}})
	if err != nil || len(r) != 0 || len(a) != 1 || a[0].Kind != ScopesChanged || !slices.Equal(a[0].ScopesBefore, []string{"files:write"}) {
		t.Fatalf("%+v %+v %v", a, r, err)
	}
	// The earlier definition matches a variant, not the latest: its
	// scopes are given by approving it under this name again.
	a, r, err = s.Approve(v1, ApproveOptions{By: "x", Tools: []string{"write_file"}, Scopes: map[string][]string{"write_file": {"files:none"}}})
	if err != nil || len(a) != 0 || len(r) != 1 || r[0].Kind != ScopesChanged {
		t.Fatalf("%+v %+v %v", a, r, err)
	}
	for o, want := range map[*Observation][]string{v1: {"files:write"}, v2: {"files:append"}} {
		c := expect(t, s, o)
		if i := slices.IndexFunc(c.Tools, func(st ToolState) bool { return st.Name == "write_file" }); !slices.Equal(c.Tools[i].Scopes, want) {
			t.Fatalf("scopes %v, want %v", c.Tools[i].Scopes, want)
		}
	}
	auditClean(t, s)
}

// A tool approved unsigned with scopes that becomes signed is approved
// with its provider's permissions alone: the scopes given to the unsigned
// definition do not follow it.
func TestApproveScopesNotToSigned(t *testing.T) {
	s := openTestStore(t, Options{})
	srv := UnsignedServerKey("files")
	if _, _, err := s.Approve(filesObs(t, writeDef), ApproveOptions{By: "x", Scopes: map[string][]string{"write_file": {"files:none"}}}); err != nil {
		t.Fatal(err)
	}
	signed := &Observation{Server: srv, Name: "files", Served: npmTime, Tools: []Observed{tool(t, "read_file", "", readDef, Unsigned),
		tool(t, "write_file", "1.0.0", writeDef, keyA, "files:write")}}
	expect(t, s, signed, "new_signer")
	a := mustApprove(t, s, signed, "write_file")
	if len(a) != 1 || len(a[0].Pin.Scopes) != 0 || a[0].ScopesKept {
		t.Fatalf("%+v", a)
	}
	auditClean(t, s)
}

// Approving an unsigned server's update (a new package version serving
// the approved definitions) keeps the scopes its tools were given, and
// records them: the store stays consistent with its history, and the
// tools keep the scopes the rules read.
func TestApproveUpdateKeepsScopes(t *testing.T) {
	s := openTemp(t)
	if _, _, err := s.Approve(memory(t, memV1, "", false), ApproveOptions{By: "x", Scopes: map[string][]string{"read_graph": {"memory:read"}}}); err != nil {
		t.Fatal(err)
	}
	a, r, err := s.Approve(memory(t, memV2, UpdateAsk, false), ApproveOptions{By: "x"})
	if err != nil || len(a) != 3 || len(r) != 0 {
		t.Fatalf("update: %+v %+v %v", a, r, err)
	}
	c, err := s.Compare(memory(t, memV2, "", false))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(c.Tools, func(st ToolState) bool { return st.Name == "read_graph" })
	if i < 0 || c.Tools[i].Status != StatusOK || !slices.Equal(c.Tools[i].Scopes, []string{"memory:read"}) {
		t.Fatalf("after the update: %+v", c.Tools)
	}
	if rec := lastRecordOf(t, s, "read_graph"); !slices.Equal(rec.Scopes, []string{"memory:read"}) {
		t.Fatalf("the update record has scopes %v", rec.Scopes)
	}
	auditClean(t, s)
}

// Recording what serves a scoped tool approved without it keeps and
// records its scopes too.
func TestRecordServedKeepsScopes(t *testing.T) {
	s := openTemp(t)
	if _, _, err := s.Approve(memory(t, "", "", false), ApproveOptions{By: "x", Scopes: map[string][]string{"read_graph": {"memory:read"}}}); err != nil {
		t.Fatal(err)
	}
	if a, err := s.RecordServed(memory(t, memV1, "", false), "x", time.Time{}); err != nil || len(a) != 3 {
		t.Fatalf("record served: %+v %v", a, err)
	}
	if rec := lastRecordOf(t, s, "read_graph"); rec.Served != memV1 || !slices.Equal(rec.Scopes, []string{"memory:read"}) {
		t.Fatalf("the record: %+v", rec)
	}
	if _, err := s.Compare(memory(t, memV1, "", false)); err != nil {
		t.Fatal(err)
	}
	auditClean(t, s)
}

// Scopes are given to tools alone: a server offering a tool named
// "prompt:x" beside a prompt x cannot have the scopes given to the tool
// land on the prompt (and the tool left unapproved).
func TestApproveScopesToolNotItemOfSameRef(t *testing.T) {
	s := openTemp(t)
	pr := tool(t, "x", "", `{"name":"x","description":"a prompt"}`, Unsigned)
	pr.Item = ItemPrompt
	o := &Observation{Server: UnsignedServerKey("c"), Name: "c", Tools: []Observed{
		pr, tool(t, "prompt:x", "", `{"name":"prompt:x","description":"a tool"}`, Unsigned)}}
	a, _, err := s.Approve(o, ApproveOptions{By: "x", Scopes: map[string][]string{"prompt:x": {"files:read"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ap := range a {
		if ap.Pin.Item != ItemTool && len(ap.Pin.Scopes) > 0 {
			t.Fatalf("the prompt got the tool's scopes: %+v", ap.Pin)
		}
	}
	if p, err := s.Get(UnsignedServerKey("c"), "prompt:x"); err != nil || (p != nil && !slices.Equal(p.Scopes, []string{"files:read"})) {
		t.Fatalf("the tool: %+v %v", p, err)
	}
	auditClean(t, s)
}
