package main

import (
	"bufio"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/suspect"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/policy"
	"github.com/etdi-dev/etdi/strictjson"
)

// observedTool is what a person is shown of an offered tool (or prompt,
// resource, resource template).
type observedTool struct {
	canonical   []byte
	permissions []etdi.Permission
	// call is what the call-time policies decide of its first call in a
	// session (nil without policies, or for other items).
	call *policy.Decision
}

// toolDefs returns what o offers by pin.ItemRef: a prompt and a tool of
// one name are two entries, never one shown for the other.
func toolDefs(o *pin.Observation, calls []guard.CallDecision) map[string]observedTool {
	m := map[string]observedTool{}
	for _, t := range o.Tools {
		m[pin.ItemRef(t.Item, t.Name)] = observedTool{t.Canonical, t.Permissions, nil}
	}
	for _, c := range calls {
		if d, ok := m[c.Tool]; ok {
			d.call = &c.Decision
			m[c.Tool] = d
		}
	}
	return m
}

// approveInteractively asks a person about what r found, then approves
// what they chose. The database is not held while they decide: approving
// opens it again and compares again, and if anything to decide changed
// meanwhile (another etdi approved or revoked something) the person is
// asked again about the new state. It returns the report after approving
// and what was approved.
func (e *env) approveInteractively(r *guard.Report, calls []guard.CallDecision) (*guard.Report, *guard.ApproveResult, error) {
	in := bufio.NewReader(e.stdin)
	defs := toolDefs(r.Observation, calls)
	c := r.Comparison
	e.showInstructions(r.Observation, c)
	for {
		update := false
		tools, accept, proceed, err := e.askApprovals(in, r.Server, c, defs, &update)
		if err != nil {
			return nil, nil, err
		}
		if !proceed {
			return r.After(c), nil, nil
		}
		decided := decisions(c)
		res, err := guard.Approve(e.ctx, r, guard.ApproveOptions{Tools: tools, AcceptInstructions: accept, Update: update,
			Review: func(now *pin.Comparison) bool { return decisions(now) == decided }})
		if err != nil {
			return nil, nil, err
		}
		if res.Withdrawn {
			say(e.stderr, "\netdi: the pins of %s changed while you decided; here is what is to decide now\n", r.Server)
			c = res.Comparison
			continue
		}
		return r.After(res.Comparison), res, nil
	}
}

// decisions is what a person decides about in c: every error and
// suspicious-text finding, as one comparable string.
func decisions(c *pin.Comparison) string {
	var ds []string
	for _, f := range c.Findings {
		if f.Severity == finding.Error || f.Kind == finding.SuspiciousText {
			ds = append(ds, strings.Join([]string{string(f.Kind), f.Tool, f.Live, f.PinnedDigest, f.Pointer, f.Message}, "\x00"))
		}
	}
	slices.Sort(ds)
	return strings.Join(ds, "\x01")
}

// askApprovals shows each tool that needs a decision, with everything
// approving it grants and any suspicious text, and asks about it:
// y approves it, n (the default) does not, a approves it and every other
// new tool and version of this server (each still shown), j shows the
// full definition as JSON and asks again. It returns the tools to
// approve, whether to accept changed instructions, and whether anything
// was chosen.
func (e *env) askApprovals(in *bufio.Reader, server string, c *pin.Comparison, defs map[string]observedTool, update *bool) ([]string, bool, bool, error) {
	var ans approvalAnswers
	asked := map[string]bool{}
	for _, f := range c.Findings {
		ref := pin.ItemRef(f.Item, f.Tool)
		if f.Severity != finding.Error || f.Kind == finding.Revoked || asked[ref+"\x00"+string(f.Kind)] {
			continue
		}
		asked[ref+"\x00"+string(f.Kind)] = true
		say(e.stderr, "\n")
		printFindingsWith(e.stderr, []finding.Finding{f}, defs)
		if f.Kind == finding.ServerUpdated && f.AsksApproval() {
			*update = ans.all || e.askUpdate(in, f)
			continue
		}
		if f.Tool == "" && !f.Kind.AboutInstructions() {
			continue // about the whole server: nothing to approve
		}
		e.showApprovalContext(c, f, defs[ref])
		eof, err := e.askApproval(in, server, f, ref, defs, &ans)
		if err != nil {
			return nil, false, false, err
		}
		if eof {
			break
		}
	}
	return ans.names, ans.accept, len(ans.names) > 0 || ans.accept || *update, nil
}

// approvalAnswers is what askApprovals was told so far: the tools to
// approve, whether to accept changed instructions, and whether every
// other new tool and version is approved without asking.
type approvalAnswers struct {
	names       []string
	accept, all bool
}

// choose records that the finding f about ref is approved: its
// instructions accepted, or its tool added to those to approve.
func (ans *approvalAnswers) choose(f finding.Finding, ref string) {
	if f.Kind.AboutInstructions() {
		ans.accept = true
	} else {
		ans.names = append(ans.names, ref)
	}
}

// showApprovalContext shows what approving the tool of f also decides:
// how the call-time policies treat its calls (d.call), and the warnings
// about it.
func (e *env) showApprovalContext(c *pin.Comparison, f finding.Finding, d observedTool) {
	if d.call != nil {
		say(e.stderr, "  its calls, under the call-time policies: %s\n", d.call.Summary())
		for i, r := range d.call.Reasons {
			say(e.stderr, "    ask: %s (policy %s)\n", r, d.call.Policies[i])
		}
	}
	for _, w := range c.Findings {
		if w.Tool == f.Tool && w.Item == f.Item && w.Severity == finding.Warning && f.Tool != "" {
			printFindings(e.stderr, []finding.Finding{w})
		}
	}
}

// askApproval decides the finding f about ref into ans: approved without
// asking after "all", else as the answer says (j shows the definition
// and asks again). It says whether the input ended, which stops asking.
func (e *env) askApproval(in *bufio.Reader, server string, f finding.Finding, ref string, defs map[string]observedTool, ans *approvalAnswers) (bool, error) {
	what := "approve " + pin.ItemWord(f.Item) + " " + f.Tool
	if f.Kind.AboutInstructions() {
		what = "accept the new instructions of " + server
	}
	if ans.all && f.Kind.AsksApproval() {
		say(e.stderr, "%s: yes (all of %s)\n", what, server)
		ans.choose(f, ref)
		return false, nil
	}
	for {
		say(e.stderr, "%s? [y]es, [N]o, [a]ll new tools and versions of %s, show the full [j]son: ", what, server)
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			if errors.Is(err, io.EOF) {
				say(e.stderr, "\n")
				return true, nil
			}
			return false, err
		}
		a := strings.ToLower(strings.TrimSpace(line))
		if a == "j" || a == "json" {
			if d, ok := defs[ref]; ok {
				sayJSON(e.stderr, "    ", d.canonical)
			} else {
				say(e.stderr, "    (no definition to show)\n")
			}
			continue
		}
		yes := a == "y" || a == "yes"
		if a == "a" || a == "all" {
			yes, ans.all = true, true
		}
		if yes {
			ans.choose(f, ref)
		}
		return false, nil
	}
}

// askUpdate asks whether to approve a server's update (server_updated):
// what served its approved definitions and what serves them now are in
// the finding shown above. No (the default) leaves it to decide.
func (e *env) askUpdate(in *bufio.Reader, f finding.Finding) bool {
	say(e.stderr, "approve the update of %s? [y]es, [N]o: ", f.Server)
	line, _ := in.ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}

// showInstructions shows the server's instructions before a first
// approval records them: they steer the model like a description does.
func (e *env) showInstructions(o *pin.Observation, c *pin.Comparison) {
	if !o.InstructionsKnown || o.Instructions == nil || *o.Instructions == "" {
		return
	}
	for _, f := range c.Findings {
		if f.Kind == finding.NewTool {
			say(e.stderr, "\nserver %s sends these instructions to the model; approving records them:\n", o.Server)
			sayBlock(e.stderr, "    ", *o.Instructions)
			v := &strictjson.Value{Kind: strictjson.Object, Members: []strictjson.Member{{Name: "instructions", Value: &strictjson.Value{Kind: strictjson.String, Str: *o.Instructions}}}}
			for _, m := range suspect.Scan(v, nil) {
				say(e.stderr, "warning: suspicious_text: server instructions: %s\n    at %s: %s\n", m.Reason, m.Pointer, m.Text)
			}
			return
		}
	}
}

// printSuspicious prints the suspicious_text warnings of the tools about
// to be approved (all, or those named).
func printSuspicious(w io.Writer, c *pin.Comparison, tools []string) {
	for _, f := range c.Findings {
		if f.Kind == finding.SuspiciousText && (len(tools) == 0 || slices.Contains(tools, f.Tool)) {
			printFindings(w, []finding.Finding{f})
		}
	}
}
