package guard

import (
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/policy"
)

// CallDecision is what the call-time policies decide of the first call of
// one tool in a session: what the person approving it should know.
type CallDecision struct {
	Tool string `json:"tool"`
	policy.Decision
}

// GivenScopes are the scopes the approvals r's comparison matched gave
// unsigned items ([pin.ToolState.Scopes]), by item and name: only an item
// that matches its approval ("ok") has them, with that approval's digest.
func (r *Report) GivenScopes() map[[2]string][]string {
	m := map[[2]string][]string{}
	if r == nil {
		return m
	}
	for _, st := range r.Tools {
		if st.Status == pin.StatusOK && len(st.Scopes) > 0 {
			m[[2]string{st.Item, st.Name}] = st.Scopes
		}
	}
	return m
}

// CallDecisions decides, for every tool r observed, its first call in a
// fresh session (no earlier calls, arguments {}), from a host named host.
// Policies that read the session ([policy.Set.Session]) may decide later
// calls otherwise. A tool that matches its approval has the scopes the
// approval gave it (r after the approval shows those of the approval).
// nil when r established nothing.
func CallDecisions(r *Report, set *policy.Set, host string) []CallDecision {
	if r == nil || r.Observation == nil || set == nil {
		return nil
	}
	var out []CallDecision
	given := r.GivenScopes()
	for _, o := range r.Observation.Tools {
		if o.Item != pin.ItemTool {
			continue
		}
		t := policy.ToolOfApproved(r.Observation.Server, r.Observation.Provider, o, given[[2]string{o.Item, o.Name}])
		d := set.Authorize(policy.Request{Host: host, Tool: t,
			Context: policy.Context{ArgumentsDigest: policy.ArgumentsDigest(nil)}})
		out = append(out, CallDecision{Tool: o.Name, Decision: d})
	}
	return out
}
