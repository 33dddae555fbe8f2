package etdi

import (
	"fmt"
	"strconv"
	"time"

	"github.com/etdi-dev/etdi/strictjson"
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
	if sequence > strictjson.MaxSafeInteger {
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
	return strictjson.AppendCanonical(nil, s.value())
}

func str(s string) *strictjson.Value { return &strictjson.Value{Kind: strictjson.String, Str: s} }

func obj2(ms ...strictjson.Member) *strictjson.Value {
	return &strictjson.Value{Kind: strictjson.Object, Members: ms}
}

func (s *Statement) value() *strictjson.Value {
	subjects := &strictjson.Value{Kind: strictjson.Array}
	tools := &strictjson.Value{Kind: strictjson.Array}
	for _, t := range s.Tools {
		subjects.Elems = append(subjects.Elems, obj2(
			strictjson.Member{Name: "name", Value: str(SubjectName(t.Name, t.Version))},
			strictjson.Member{Name: "digest", Value: obj2(strictjson.Member{Name: "sha256", Value: str(t.Digest.Hex())})},
		))
		perms := &strictjson.Value{Kind: strictjson.Array, Elems: []*strictjson.Value{}}
		for _, p := range t.Permissions {
			pm := obj2(strictjson.Member{Name: "scope", Value: str(p.Scope)})
			if p.Description != "" {
				pm.Members = append(pm.Members, strictjson.Member{Name: "description", Value: str(p.Description)})
			}
			perms.Elems = append(perms.Elems, pm)
		}
		tools.Elems = append(tools.Elems, obj2(
			strictjson.Member{Name: "name", Value: str(t.Name)},
			strictjson.Member{Name: "version", Value: str(t.Version)},
			strictjson.Member{Name: "permissions", Value: perms},
			strictjson.Member{Name: "definition", Value: strictjson.RawValue(string(t.Canonical))},
		))
	}
	provider := obj2(strictjson.Member{Name: "id", Value: str(s.Provider.ID)})
	if s.Provider.Name != "" {
		provider.Members = append(provider.Members, strictjson.Member{Name: "name", Value: str(s.Provider.Name)})
	}
	server := ServerValue(s.Server)
	return obj2(
		strictjson.Member{Name: "_type", Value: str(StatementType)},
		strictjson.Member{Name: "subject", Value: subjects},
		strictjson.Member{Name: "predicateType", Value: str(PredicateType)},
		strictjson.Member{Name: "predicate", Value: obj2(
			strictjson.Member{Name: "provider", Value: provider},
			strictjson.Member{Name: "server", Value: server},
			strictjson.Member{Name: "tools", Value: tools},
			strictjson.Member{Name: "issuedAt", Value: str(s.IssuedAt.Format(time.RFC3339))},
			strictjson.Member{Name: "expires", Value: str(s.Expires.Format(time.RFC3339))},
			strictjson.Member{Name: "sequence", Value: &strictjson.Value{Kind: strictjson.Number, Num: float64(s.Sequence)}},
		)},
	)
}

// ParseStatement parses and validates a DSSE payload as an etdi statement
// (SPEC.md §5). Beyond the field rules it checks that the subjects list
// exactly one entry per tool, named "<name>@<version>", whose sha256 equals
// the digest recomputed from the tool's definition.
func ParseStatement(payload []byte) (*Statement, error) {
	tc := newToolsCollector("predicate.tools", true)
	v, err := strictjson.ParseStream(payload, tc.hook("predicate", "tools"))
	if err != nil {
		return nil, err
	}
	o, err := strictjson.Root(v).Object()
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

func checkSubjects(f strictjson.Field, tools []Tool) error {
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
