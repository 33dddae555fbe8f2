package gate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/pin"
)

// tellBlocked tells the host what the gate withheld since it last told
// it: one notifications/message at level warning, and a line each in the
// log.
func (g *Gate) tellBlocked() {
	if len(g.st.toTell) == 0 {
		return
	}
	type entry struct {
		Item    string `json:"item,omitempty"`
		Name    string `json:"name"`
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}
	var es []entry
	var names []string
	// The review asks for approval when approving can let any of them
	// through; for revoked or unsigned items alone it is the check.
	kind := ""
	if !slices.ContainsFunc(g.st.toTell, func(r refusal) bool {
		k := finding.Kind(r.kind)
		return !k.Known() || k.Approvability() != finding.NotApprovable || k.AboutInstructions()
	}) {
		kind = g.st.toTell[0].kind
	}
	for i, r := range g.st.toTell {
		g.logf("withheld %s %q: %s: %s", pin.ItemWord(r.item), clipText(r.name), r.kind, r.message)
		if i < maxTold { // a listing of thousands is told by count beyond these
			// The message may quote free text (a revocation's reason):
			// escaped, as the log and the refusal session escape it.
			es = append(es, entry{r.item, g.mask(clipText(g.secrets.String(r.name))), r.kind, termtext.Escape(g.mask(r.message))})
			names = append(names, pin.ItemRef(r.item, g.mask(clipText(g.secrets.String(r.name)))))
		}
	}
	n := len(g.st.toTell)
	g.st.toTell = nil
	slices.Sort(names)
	more := ""
	if n > len(names) {
		more = fmt.Sprintf(" and %d more", n-len(names))
	}
	msg := fmt.Sprintf("etdi withheld %d item(s) of %s that are not approved as the server offers them now: %s%s (review: %s)",
		n, orUnknown(g.st.server), strings.Join(names, ", "), more, g.review(kind))
	params, _ := json.Marshal(map[string]any{"level": "warning", "logger": EtdiLogger,
		"data": map[string]any{"message": msg, "server": g.st.server, "blocked": es, "review": g.review(kind)}})
	g.toHost.send(mcpclient.EncodeRequest(nil, "notifications/message", params))
}

// tellUpdated tells the host, once a session, that the server was
// updated and its approved definitions are relayed (a server_updated
// warning: trust policy allow, or ask in a gate): one
// notifications/message at level warning, and a line in the log.
func (g *Gate) tellUpdated(r *guard.Report) {
	for _, f := range r.Findings {
		if f.Kind != finding.ServerUpdated || f.Severity != finding.Warning {
			continue
		}
		told := f.PinnedServed + " -> " + f.Served
		if g.st.updateTold == told {
			return
		}
		g.st.updateTold = told
		msg := g.mask(g.secrets.String(f.Message))
		if f.Rule != pin.UpdateAllow {
			msg += " (to approve the update: " + g.review(string(finding.ServerUpdated)) + ")"
		}
		g.logf("%s", msg)
		params, _ := json.Marshal(map[string]any{"level": "warning", "logger": EtdiLogger,
			"data": map[string]any{"message": "etdi: " + termtext.Escape(msg), "server": g.st.server, "kind": string(finding.ServerUpdated),
				"pinnedServed": g.mask(f.PinnedServed), "served": g.mask(f.Served)}})
		g.toHost.send(mcpclient.EncodeRequest(nil, "notifications/message", params))
		return
	}
}

// maxTold bounds the entries one notification names.
const maxTold = 100

func orUnknown(s string) string {
	if s == "" {
		return "the server"
	}
	return s
}
