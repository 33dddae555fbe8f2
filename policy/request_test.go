package policy

import (
	"testing"

	"github.com/cedar-policy/cedar-go/types"
	"github.com/cedar-policy/cedar-go/x/exp/schema"
	"github.com/cedar-policy/cedar-go/x/exp/schema/validate"
)

// strictValidator builds a validator of Schema apart from the package's.
func strictValidator(t *testing.T) *validate.Validator {
	t.Helper()
	var s schema.Schema
	s.SetFilename("etdi.cedarschema")
	if err := s.UnmarshalCedar([]byte(Schema)); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	return validate.New(r, validate.WithStrict())
}

// TestCedarRequestValidates checks that the request and entities etdi
// builds are of the schema policies are validated against: a policy that
// validates reads only what the request has.
func TestCedarRequestValidates(t *testing.T) {
	v := strictValidator(t)
	all := Annotations{ReadOnly: boolp(true), Destructive: boolp(false), Idempotent: boolp(true), OpenWorld: boolp(false)}
	tools := map[string]Tool{
		"signed, all annotations":  {Server: "acme:files", Name: "read_file", Version: "1.0.0", Provider: "acme", Signed: true, Scopes: []string{"files:read:home", "net:fetch"}, Annotations: all},
		"signed, one annotation":   {Server: "acme:files", Name: "rm", Version: "1.0.0", Provider: "acme", Signed: true, Annotations: Annotations{Destructive: boolp(true)}},
		"signed, no annotations":   {Server: "acme:files", Name: "ls", Signed: true},
		"unsigned, annotations":    {Server: "unsigned:files", Name: "rm", Scopes: []string{"files:write"}, Annotations: all},
		"unsigned, no annotations": {Server: "unsigned:files", Name: "ls"},
		"zero":                     {},
		"odd text":                 {Server: "a/b", Name: "x\u202ey\x00", Scopes: []string{":", "::", "a::b"}},
	}
	contexts := []Context{
		{},
		{SessionScopes: []string{"files:read", "net:fetch"}, CallsThisMinute: 29, CallsOfThisTool: 4, ArgumentsDigest: ArgumentsDigest(nil)},
		{CallsThisMinute: -1, CallsOfThisTool: 1 << 62, ArgumentsDigest: ArgumentsDigest([]byte("not json"))},
	}
	var s Set
	for name, tool := range tools {
		for _, host := range []string{"claude-code", ""} {
			for _, ctx := range contexts {
				req, entities := s.cedarRequest(Request{Host: host, Tool: tool, Context: ctx})
				if err := v.Request(req); err != nil {
					t.Errorf("%s: request does not validate: %v", name, err)
				}
				if err := v.Entities(entities); err != nil {
					t.Errorf("%s: entities do not validate: %v", name, err)
				}
				for uid, e := range entities {
					if err := v.Entity(e); err != nil {
						t.Errorf("%s: entity %s does not validate: %v", name, uid, err)
					}
				}
				if _, ok := entities[req.Principal]; !ok {
					t.Errorf("%s: no entity for the principal %s", name, req.Principal)
				}
				res, ok := entities[req.Resource]
				if !ok {
					t.Fatalf("%s: no entity for the resource %s", name, req.Resource)
				}
				if want := tool.Server + "/" + tool.Name; string(req.Resource.ID) != want || string(req.Resource.Type) != ToolType {
					t.Errorf("%s: resource %s, want %s::%q", name, req.Resource, ToolType, want)
				}
				a, _ := res.Attributes.Get("annotations")
				n := a.(types.Record).Len()
				if want := countHints(tool); n != want {
					t.Errorf("%s: %d annotations reach policies, want %d", name, n, want)
				}
			}
		}
	}
}

func countHints(t Tool) int {
	if !t.Signed {
		return 0
	}
	n := 0
	for _, h := range []*bool{t.Annotations.ReadOnly, t.Annotations.Destructive, t.Annotations.Idempotent, t.Annotations.OpenWorld} {
		if h != nil {
			n++
		}
	}
	return n
}

// TestValidatorIsStrict checks that the validator of the test above does
// refuse what the schema does not declare, so its passing means
// something.
func TestValidatorIsStrict(t *testing.T) {
	v := strictValidator(t)
	var s Set
	req, entities := s.cedarRequest(Request{Host: "h", Tool: Tool{Server: "s", Name: "n", Signed: true, Annotations: Annotations{ReadOnly: boolp(true)}}})

	bad := req
	bad.Context = types.NewRecord(types.RecordMap{"callsThisMinute": types.String("3")})
	if err := v.Request(bad); err == nil {
		t.Error("a context missing attributes, of the wrong type, validates")
	}
	bad = req
	bad.Resource = types.NewEntityUID("Etdi::Server", "s")
	if err := v.Request(bad); err == nil {
		t.Error("a resource of an undeclared type validates")
	}

	tool := entities[req.Resource]
	tool.Attributes = types.NewRecord(types.RecordMap{"name": types.String("n")})
	if err := v.Entity(tool); err == nil {
		t.Error("a tool missing attributes validates")
	}
	tool = entities[req.Resource]
	m := types.RecordMap{}
	for k, val := range tool.Attributes.All() {
		m[k] = val
	}
	m["annotations"] = types.NewRecord(types.RecordMap{"readOnlyHint": types.Boolean(true), "titleHint": types.String("x")})
	tool.Attributes = types.NewRecord(m)
	if err := v.Entities(types.EntityMap{tool.UID: tool}); err == nil {
		t.Errorf("a tool with an undeclared annotation: %v", err)
	}
}
