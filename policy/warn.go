package policy

import (
	"fmt"
	"strings"

	"github.com/cedar-policy/cedar-go/types"
	cedarast "github.com/cedar-policy/cedar-go/x/exp/ast"
)

// Baseline is the permit policy a [Set] without any permit for tool calls
// needs, as the warning about it gives it.
const Baseline = `@id("baseline") permit (principal, action == Etdi::Action::"call", resource);`

// Warnings are what the [Set]'s policies do that is valid but most likely
// a mistake: a permit whose conditions can never hold, and above all no
// permit that can match a tool call (no permit at all, permits only for
// other actions, or only permits that never hold), so that every call
// would be forbidden. Each says what to add or change.
func (s *Set) Warnings() []string { return append([]string(nil), s.warnings...) }

// warn computes the Set's warnings once its policies are loaded.
func (s *Set) warn(permits []*cedarast.Policy, ids []string) {
	var never []string
	forCalls := 0
	for i, p := range permits {
		if neverHolds(p) {
			never = append(never, ids[i])
			s.warnings = append(s.warnings, fmt.Sprintf("permit %s can never match: its conditions are always false (when { false } or unless { true }); "+
				"remove it or write the condition it should have", ids[i]))
			continue
		}
		if admitsCall(p.Action) {
			forCalls++
		}
	}
	switch {
	case len(permits) == 0:
		s.warnings = append(s.warnings, "no permit policy: every tool call would be forbidden (a call no permit matches is refused, "+
			"forbid policies only take away); add a permit, e.g.: "+Baseline)
	case forCalls == 0:
		why := "the permits name only other actions (get, read, complete)"
		if len(never) == len(permits) {
			why = "no permit can ever match (" + strings.Join(never, ", ") + ")"
		}
		s.warnings = append(s.warnings, "no permit policy can match a tool call: "+why+"; every tool call would be forbidden; "+
			"add a permit for calls, e.g.: "+Baseline)
	}
}

// admitsCall says whether a policy's action scope includes the call
// action.
func admitsCall(scope cedarast.IsActionScopeNode) bool {
	call := types.NewEntityUID(ActionType, ActionCall)
	switch sc := scope.(type) {
	case cedarast.ScopeTypeAll:
		return true
	case cedarast.ScopeTypeEq:
		return sc.Entity == call
	case cedarast.ScopeTypeIn:
		return sc.Entity == call
	case cedarast.ScopeTypeInSet:
		for _, e := range sc.Entities {
			if e == call {
				return true
			}
		}
		return false
	}
	return true // a scope this code does not know: assume it may
}

// neverHolds says whether one of the policy's conditions is a literal
// that fails it: when { false } or unless { true }.
func neverHolds(p *cedarast.Policy) bool {
	for _, c := range p.Conditions {
		v, ok := c.Body.(cedarast.NodeValue)
		if !ok {
			continue
		}
		b, ok := v.Value.(types.Boolean)
		if !ok {
			continue
		}
		if (c.Condition == cedarast.ConditionWhen && !bool(b)) || (c.Condition == cedarast.ConditionUnless && bool(b)) {
			return true
		}
	}
	return false
}
