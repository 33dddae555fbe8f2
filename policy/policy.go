// Package policy decides, with Cedar policies, whether a call to an
// approved tool may go ahead, must be put to the person first, or is
// forbidden (docs/policies.md#call-time-policies).
//
// A [Set] is loaded from policy files and validated, strictly, against
// etdi's schema ([Schema]) before anything is decided: a policy that does
// not parse or that reads an attribute the schema does not declare is an
// error at load, never an open gate. Authorize evaluates one request:
// the tool as approved and verified, and the session so far.
//
// The decision is Cedar's, with two additions: a forbid policy annotated
// @ask("reason") means "ask the person" rather than "no", and a forbid
// policy whose evaluation fails counts as matching (Cedar skips it), so a
// policy that cannot be evaluated never lets a call through.
package policy

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/cedar-policy/cedar-go"
	cedarast "github.com/cedar-policy/cedar-go/x/exp/ast"
	"github.com/cedar-policy/cedar-go/x/exp/schema"
	"github.com/cedar-policy/cedar-go/x/exp/schema/validate"
)

// Schema is etdi's Cedar schema (the file etdi.cedarschema), against which
// every policy is validated.
//
//go:embed etdi.cedarschema
var Schema string

// Entity types and the actions of etdi's schema.
const (
	HostType     = "Etdi::Host"
	ToolType     = "Etdi::Tool"
	PromptType   = "Etdi::Prompt"
	ResourceType = "Etdi::Resource"
	ActionType   = "Etdi::Action"
	// ActionCall is a tools/call of a tool.
	ActionCall = "call"
	// ActionGet is a prompts/get of a prompt.
	ActionGet = "get"
	// ActionRead is a resources/read (or resources/subscribe) of a
	// resource, listed or matching a resource template.
	ActionRead = "read"
	// ActionComplete is a completion/complete of a prompt's or a resource
	// template's argument.
	ActionComplete = "complete"
)

// Bounds of what a [Set] is loaded from.
const (
	// MaxFileSize bounds one policy file.
	MaxFileSize = 1 << 20
	// MaxPolicies bounds the policies of a Set.
	MaxPolicies = 10_000
	// maxAsk bounds the reason of an @ask annotation.
	maxAsk = 512
)

// idPattern is what an @id may be: it names the policy in errors, in the
// JSON-RPC error of a blocked call and in the history.
var idPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$`) })

// validator is the schema's strict validator, built once, when the first
// policy is parsed (not when etdi starts).
var validator = sync.OnceValue(func() *validate.Validator {
	var s schema.Schema
	s.SetFilename("etdi.cedarschema")
	if err := s.UnmarshalCedar([]byte(Schema)); err != nil {
		panic("policy: etdi's schema does not parse: " + err.Error())
	}
	r, err := s.Resolve()
	if err != nil {
		panic("policy: etdi's schema does not resolve: " + err.Error())
	}
	return validate.New(r, validate.WithStrict())
})

// Rule describes one loaded Cedar policy of a [Set]: its @id, effect and
// where it was written. (The trust policy, which keys and identities etdi
// trusts, is a different thing: package trust.)
type Rule struct {
	// ID is the policy's @id annotation.
	ID string `json:"id"`
	// Effect is "permit" or "forbid".
	Effect string `json:"effect"`
	// Ask is the reason of a forbid policy annotated @ask: the call is put
	// to the person instead of refused.
	Ask string `json:"ask,omitempty"`
	// Session says the policy reads the request's context: its decision
	// may change as the session goes on.
	Session bool `json:"session,omitempty"`
	// Position is "file:line:column".
	Position string `json:"position"`
}

// Set is a validated set of policies, safe for concurrent use.
type Set struct {
	// permits and forbids are evaluated apart, so a decision knows both
	// whether any permit matched and which forbids did.
	permits, forbids *cedar.PolicySet
	policies         map[cedar.PolicyID]*Rule
	order            []string
	files            []string
	// named are the actions a permit names in its scope (action ==
	// Etdi::Action::"read", or action in [...]): for a get, read or
	// complete they turn Cedar's default deny on (Authorize).
	named map[string]bool
	// warnings are those of Warnings.
	warnings []string
}

// LoadFiles reads and validates policy files into one [Set]; @id must be
// unique across them.
func LoadFiles(paths ...string) (*Set, error) {
	if len(paths) == 0 {
		return nil, errors.New("policy: no policy file")
	}
	var srcs []Source
	for _, p := range paths {
		data, err := readBounded(p)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, Source{Name: p, Text: data})
	}
	return Parse(srcs...)
}

// Source is the text of one policy file and the name errors give it.
type Source struct {
	Name string
	Text []byte
}

func readBounded(path string) ([]byte, error) { return readBoundedLimit(path, MaxFileSize) }

func readBoundedLimit(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("policy: reading %s: %w", path, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("policy: %s is larger than %d bytes", path, max)
	}
	return data, nil
}

// Parse parses and validates policy texts into one [Set]. Every file must
// hold at least one policy, every policy an @id unique across them, and
// every policy must validate against [Schema]; @ask belongs on forbid
// policies only. All the errors found are returned together.
func Parse(srcs ...Source) (*Set, error) {
	if len(srcs) == 0 {
		return nil, errors.New("policy: no policy file")
	}
	s := &Set{permits: cedar.NewPolicySet(), forbids: cedar.NewPolicySet(), policies: map[cedar.PolicyID]*Rule{}}
	var errs []error
	where := map[string]string{}
	var permitASTs []*cedarast.Policy
	var permitIDs []string
	for _, src := range srcs {
		s.files = append(s.files, src.Name)
		if len(src.Text) > MaxFileSize {
			errs = append(errs, fmt.Errorf("%s: larger than %d bytes", src.Name, MaxFileSize))
			continue
		}
		list, err := cedar.NewPolicyListFromBytes(src.Name, src.Text)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", src.Name, err))
			continue
		}
		if len(list) == 0 {
			// An empty file is more likely a mistake (a truncated copy, a
			// wrong path) than a wish to forbid every call.
			errs = append(errs, fmt.Errorf("%s: holds no policy", src.Name))
			continue
		}
		for _, p := range list {
			if len(s.policies) >= MaxPolicies {
				return nil, fmt.Errorf("policy: more than %d policies", MaxPolicies)
			}
			d, err := describe(p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if first, dup := where[d.ID]; dup {
				errs = append(errs, fmt.Errorf("%s: @id %q is also the id of the policy at %s", d.Position, d.ID, first))
				continue
			}
			where[d.ID] = d.Position
			if err := validator().Policy(d.ID, (*cedarast.Policy)(p.AST())); err != nil {
				errs = append(errs, fmt.Errorf("%s: does not validate against etdi's schema: %w", d.Position, err))
				continue
			}
			id := cedar.PolicyID(d.ID)
			s.policies[id] = d
			s.order = append(s.order, d.ID)
			if p.Effect() == cedar.Permit {
				s.permits.Add(id, p)
				s.nameActions((*cedarast.Policy)(p.AST()).Action)
				permitASTs, permitIDs = append(permitASTs, (*cedarast.Policy)(p.AST())), append(permitIDs, d.ID)
			} else {
				s.forbids.Add(id, p)
			}
		}
	}
	if len(errs) > 0 {
		// One line: the errors of a file, each with its position, are
		// read together in a terminal or a log.
		return nil, errors.New("policy: " + strings.ReplaceAll(errors.Join(errs...).Error(), "\n", "; "))
	}
	s.warn(permitASTs, permitIDs)
	return s, nil
}

// describe reads a policy's annotations and what it depends on.
func describe(p *cedar.Policy) (*Rule, error) {
	pos := p.Position()
	d := &Rule{Effect: "permit", Position: fmt.Sprintf("%s:%d:%d", pos.Filename, pos.Line, pos.Column)}
	if p.Effect() == cedar.Forbid {
		d.Effect = "forbid"
	}
	ann := p.Annotations()
	id, ok := ann["id"]
	if !ok {
		return nil, fmt.Errorf("%s: a policy needs an @id(\"...\") annotation: decisions, blocked calls and the history name it", d.Position)
	}
	if !idPattern().MatchString(string(id)) {
		return nil, fmt.Errorf("%s: @id %q is not 1-128 letters, digits and . _ : / - (beginning with a letter or digit)", d.Position, clip(string(id)))
	}
	d.ID = string(id)
	if ask, ok := ann["ask"]; ok {
		switch {
		case d.Effect != "forbid":
			return nil, fmt.Errorf("%s: @ask belongs on a forbid policy (policy %s is a permit)", d.Position, d.ID)
		case strings.TrimSpace(string(ask)) == "":
			return nil, fmt.Errorf("%s: @ask of policy %s needs a reason to show the person", d.Position, d.ID)
		case len(ask) > maxAsk:
			return nil, fmt.Errorf("%s: @ask of policy %s is longer than %d bytes", d.Position, d.ID, maxAsk)
		}
		d.Ask = string(ask)
	}
	for _, c := range p.AST().Conditions {
		cedarast.Inspect(cedarast.NewNode(c.Body), func(n cedarast.IsNode) bool {
			if v, ok := n.(cedarast.NodeTypeVariable); ok && v.Name == "context" {
				d.Session = true
			}
			return !d.Session
		})
	}
	return d, nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// Policies describes the [Set]'s policies in the order they were loaded.
func (s *Set) Policies() []Rule {
	out := make([]Rule, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, *s.policies[cedar.PolicyID(id)])
	}
	return out
}

// Files are the names of the files the [Set] was loaded from.
func (s *Set) Files() []string { return slices.Clone(s.files) }

// Session says whether any policy reads the request's context, so a
// decision taken at approval may differ later in a session.
func (s *Set) Session() bool {
	for _, p := range s.policies {
		if p.Session {
			return true
		}
	}
	return false
}

// nameActions records the actions a permit's action scope names. A scope
// of every action (a bare "action") names none: a policy set written for
// calls alone keeps prompts and resources as approval leaves them.
func (s *Set) nameActions(scope cedarast.IsActionScopeNode) {
	if s.named == nil {
		s.named = map[string]bool{}
	}
	switch sc := scope.(type) {
	case cedarast.ScopeTypeEq:
		s.named[string(sc.Entity.ID)] = true
	case cedarast.ScopeTypeIn:
		s.named[string(sc.Entity.ID)] = true
	case cedarast.ScopeTypeInSet:
		for _, e := range sc.Entities {
			s.named[string(e.ID)] = true
		}
	}
}
