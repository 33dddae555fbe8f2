package etdi

import (
	"fmt"
	"strconv"
	"time"
)

// Statement is the signed content of a bundle: an in-toto Statement v1 whose
// predicate is the etdi tool manifest (SPEC.md §5).
type Statement struct {
	Provider Provider
	Server   Server
	Tools    []Tool
	IssuedAt time.Time
	Expires  time.Time
	// Sequence increases with every bundle a provider issues for a server;
	// clients refuse a lower sequence than one they have seen.
	Sequence uint64
}

// NewStatement builds the statement for manifest m.
func NewStatement(m *Manifest, issuedAt, expires time.Time, sequence uint64) (*Statement, error) {
	if !expires.After(issuedAt) {
		return nil, fmt.Errorf("expiry %s is not after issue time %s", expires.Format(time.RFC3339), issuedAt.Format(time.RFC3339))
	}
	if sequence > MaxSafeInteger {
		return nil, fmt.Errorf("sequence %d is beyond 2^53-1", sequence)
	}
	return &Statement{
		Provider: m.Provider,
		Server:   m.Server,
		Tools:    m.Tools,
		IssuedAt: issuedAt.UTC().Truncate(time.Second),
		Expires:  expires.UTC().Truncate(time.Second),
		Sequence: sequence,
	}, nil
}

// Tool returns the tool named name, or nil.
func (s *Statement) Tool(name string) *Tool {
	for i := range s.Tools {
		if s.Tools[i].Name == name {
			return &s.Tools[i]
		}
	}
	return nil
}

// SubjectName is the in-toto subject name of a tool version: "<name>@<version>".
func SubjectName(name, version string) string { return name + "@" + version }

// Payload returns the statement serialized as RFC 8785 canonical JSON, the
// exact bytes that are signed.
func (s *Statement) Payload() []byte {
	return AppendCanonical(nil, s.value())
}

func str(s string) *Value { return &Value{Kind: String, Str: s} }

func obj2(ms ...Member) *Value { return &Value{Kind: Object, Members: ms} }

func (s *Statement) value() *Value {
	subjects := &Value{Kind: Array}
	tools := &Value{Kind: Array}
	for _, t := range s.Tools {
		subjects.Elems = append(subjects.Elems, obj2(
			Member{Name: "name", Value: str(SubjectName(t.Name, t.Version))},
			Member{Name: "digest", Value: obj2(Member{Name: "sha256", Value: str(t.Digest.Hex())})},
		))
		perms := &Value{Kind: Array, Elems: []*Value{}}
		for _, p := range t.Permissions {
			pm := obj2(Member{Name: "scope", Value: str(p.Scope)})
			if p.Description != "" {
				pm.Members = append(pm.Members, Member{Name: "description", Value: str(p.Description)})
			}
			perms.Elems = append(perms.Elems, pm)
		}
		tools.Elems = append(tools.Elems, obj2(
			Member{Name: "name", Value: str(t.Name)},
			Member{Name: "version", Value: str(t.Version)},
			Member{Name: "permissions", Value: perms},
			Member{Name: "definition", Value: RawValue(string(t.Canonical))},
		))
	}
	provider := obj2(Member{Name: "id", Value: str(s.Provider.ID)})
	if s.Provider.Name != "" {
		provider.Members = append(provider.Members, Member{Name: "name", Value: str(s.Provider.Name)})
	}
	server := ServerValue(s.Server)
	return obj2(
		Member{Name: "_type", Value: str(StatementType)},
		Member{Name: "subject", Value: subjects},
		Member{Name: "predicateType", Value: str(PredicateType)},
		Member{Name: "predicate", Value: obj2(
			Member{Name: "provider", Value: provider},
			Member{Name: "server", Value: server},
			Member{Name: "tools", Value: tools},
			Member{Name: "issuedAt", Value: str(s.IssuedAt.Format(time.RFC3339))},
			Member{Name: "expires", Value: str(s.Expires.Format(time.RFC3339))},
			Member{Name: "sequence", Value: &Value{Kind: Number, Num: float64(s.Sequence)}},
		)},
	)
}

// ParseStatement parses and validates a DSSE payload as an etdi statement
// (SPEC.md §5). Beyond the field rules it checks that the subjects list
// exactly one entry per tool, named "<name>@<version>", whose sha256 equals
// the digest recomputed from the tool's definition.
func ParseStatement(payload []byte) (*Statement, error) {
	tc := newToolsCollector("predicate.tools", true)
	v, err := ParseStream(payload, tc.hook("predicate", "tools"))
	if err != nil {
		return nil, err
	}
	o, err := Root(v).Object()
	if err != nil {
		return nil, err
	}
	if err := o.Only("_type", "subject", "predicateType", "predicate"); err != nil {
		return nil, err
	}
	if t, err := o.Field("_type").Str(); err != nil {
		return nil, err
	} else if t != StatementType {
		return nil, o.Field("_type").Errorf("%q is not %q", truncate(t, 80), StatementType)
	}
	if t, err := o.Field("predicateType").Str(); err != nil {
		return nil, err
	} else if t != PredicateType {
		return nil, o.Field("predicateType").Errorf("%q is not %q", truncate(t, 80), PredicateType)
	}
	po, err := o.Field("predicate").Object()
	if err != nil {
		return nil, err
	}
	if err := po.Only("provider", "server", "tools", "issuedAt", "expires", "sequence"); err != nil {
		return nil, err
	}
	s := &Statement{}
	if s.Provider, err = parseProvider(po.Field("provider")); err != nil {
		return nil, err
	}
	if s.Server, err = parseServer(po.Field("server")); err != nil {
		return nil, err
	}
	if s.Tools, err = tc.finish(po.Field("tools")); err != nil {
		return nil, err
	}
	if s.IssuedAt, err = po.Field("issuedAt").Time(); err != nil {
		return nil, err
	}
	if s.Expires, err = po.Field("expires").Time(); err != nil {
		return nil, err
	}
	if !s.Expires.After(s.IssuedAt) {
		return nil, po.Field("expires").Errorf("not after issuedAt")
	}
	if s.Sequence, err = po.Field("sequence").Uint(); err != nil {
		return nil, err
	}
	if err := checkSubjects(o.Field("subject"), s.Tools); err != nil {
		return nil, err
	}
	return s, nil
}

func checkSubjects(f Field, tools []Tool) error {
	a, err := f.Array()
	if err != nil {
		return err
	}
	want := make(map[string]*Tool, len(tools))
	for i := range tools {
		want[SubjectName(tools[i].Name, tools[i].Version)] = &tools[i]
	}
	seen := make(map[string]bool, len(tools))
	for i := range a.V.Elems {
		ef := a.Elem(i)
		so, err := ef.Object()
		if err != nil {
			return err
		}
		if err := so.Only("name", "digest", "uri", "downloadLocation", "mediaType", "annotations"); err != nil {
			return err
		}
		name, err := so.Field("name").Str()
		if err != nil {
			return err
		}
		t, ok := want[name]
		if !ok {
			return so.Field("name").Errorf("subject %q matches no tool name@version in the predicate", truncate(name, 300))
		}
		if seen[name] {
			return so.Field("name").Errorf("duplicate subject %q", name)
		}
		seen[name] = true
		do, err := so.Field("digest").Object()
		if err != nil {
			return err
		}
		h, err := do.Field("sha256").Str()
		if err != nil {
			return err
		}
		d, err := ParseDigest(h)
		if err != nil || len(h) != 64 {
			return do.Field("sha256").Errorf("invalid sha256 digest %q", truncate(h, 80))
		}
		if d != t.Digest {
			return &DigestMismatchError{Subject: name, Signed: d, Computed: t.Digest}
		}
	}
	for name := range want {
		if !seen[name] {
			return f.Errorf("no subject for tool %q", name)
		}
	}
	return nil
}

// DigestMismatchError reports a subject whose digest does not match the
// definition it names: the statement contradicts itself.
type DigestMismatchError struct {
	Subject  string
	Signed   Digest
	Computed Digest
}

func (e *DigestMismatchError) Error() string {
	return fmt.Sprintf("subject %s: digest %s does not match the definition's digest %s",
		strconv.Quote(e.Subject), e.Signed.Short(), e.Computed.Short())
}
