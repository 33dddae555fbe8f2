package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/colour"
	"github.com/etdi-dev/etdi/internal/hostconfig"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/policy"
)

// checkSummary counts the servers of one etdi check by outcome.
type checkSummary struct {
	Servers int `json:"servers"`
	// OK: exit 0 (warnings allowed).
	OK int `json:"ok"`
	// NeedsApproval: exit 13, nothing worse.
	NeedsApproval int `json:"needsApproval"`
	// Blocked: a security finding, exit 10, 11, 12 or 14.
	Blocked int `json:"blocked"`
	// NotChecked: an operational error (exit 1).
	NotChecked int `json:"notChecked"`
}

// summarize sorts each server by its own exit code.
func summarize(reps []*checkReport) checkSummary {
	s := checkSummary{Servers: len(reps)}
	for _, r := range reps {
		switch r.ExitCode {
		case exitOK:
			s.OK++
		case exitApproval:
			s.NeedsApproval++
		case exitSignature, exitRugPull, exitImpersonation, exitRevoked:
			s.Blocked++
		default:
			s.NotChecked++
		}
	}
	return s
}

// String is the summary line: "3 servers: 1 ok, 1 needs approval, 1
// blocked, 0 not checked".
func (s checkSummary) String() string {
	noun := "servers"
	if s.Servers == 1 {
		noun = "server"
	}
	return fmt.Sprintf("%d %s: %d ok, %d needs approval, %d blocked, %d not checked",
		s.Servers, noun, s.OK, s.NeedsApproval, s.Blocked, s.NotChecked)
}

// checkView is how etdi check prints its prose report: quiet (only
// errors), verbose (every tool of every server), or by default one line
// for each server that needs nothing and the full report of each that
// does; colour from paint.
type checkView struct {
	quiet, verbose bool
	paint          colour.Painter
}

// printChecks prints the prose report of every server as v says. One-line
// servers follow each other; a full report is set apart by a blank line.
func printChecks(w io.Writer, reps []*checkReport, v checkView) {
	first, prevFull := true, false
	for _, rep := range reps {
		switch {
		case v.quiet && !hasProblem(rep):
			continue
		case v.quiet:
			if !first {
				say(w, "\n")
			}
			printProblems(w, rep, v.paint)
			prevFull = true
		case !v.verbose && settled(rep):
			if prevFull {
				say(w, "\n")
			}
			printSettled(w, rep, v.paint)
			prevFull = false
		default:
			if !first {
				say(w, "\n")
			}
			printCheck(w, rep, v.paint)
			prevFull = true
		}
		first = false
	}
}

// hasProblem reports whether a server is not ok: it could not be checked
// or has an error finding. Warnings alone (unsigned tools under the warn
// policy) never change the exit code and are not a problem here.
func hasProblem(rep *checkReport) bool {
	return rep.Error != "" || rep.ExitCode != exitOK
}

// settled reports whether a server needs nothing from the person: it was
// checked (or the host does not start it), exits 0, approved nothing in
// this run, every tool is as approved (none removed), the call-time
// policies allow the first call of each, and it has no finding but
// information and the unsigned_tool warnings that its one line states as
// its state.
func settled(rep *checkReport) bool {
	if hasProblem(rep) || len(rep.Approved) > 0 || rep.InstructionsRecorded != nil || len(rep.Ignored) > 0 || rep.Registry != nil && rep.Registry.Note != "" {
		return false
	}
	if rep.Disabled && rep.HostHonoursDisabled != string(hostconfig.Yes) {
		return false // checked although disabled: said in full
	}
	for _, f := range rep.Findings {
		if f.Severity == finding.Error || (f.Severity == finding.Warning && !unsignedState(f)) {
			return false
		}
	}
	for _, t := range rep.Tools {
		if t.Status != pin.StatusOK { // a tool removed: a change, shown
			return false
		}
	}
	for _, c := range rep.Calls {
		if c.Effect != policy.Allow || len(c.Errors) > 0 { // a call the policies forbid or ask about
			return false
		}
	}
	return true
}

// unsignedState reports whether f is an unsigned_tool warning: a tool the
// policy lets run unsigned (warn), said once per server as its state.
func unsignedState(f finding.Finding) bool {
	return f.Kind == finding.UnsignedTool && f.Severity == finding.Warning && f.Tool != ""
}

// printSettled prints the one line of a server that needs nothing: its
// name (host and file), its identity, how many tools it offers and its
// state.
func printSettled(w io.Writer, rep *checkReport, p colour.Painter) {
	if rep.Disabled {
		say(w, p.Good("ok")+"  %s: disabled in its file; the host does not start it: not checked\n", rep.Target)
		return
	}
	if rc := rep.Registry; rc != nil && rc.Bundle != "" {
		say(w, p.Good("ok")+"  %s: %s (bundle %s), %s\n", rep.Target, identityText(rep), rc.Bundle, itemCount(rep.Tools))
		return
	}
	say(w, p.Good("ok")+"  %s: %s, %s\n", rep.Target, identityText(rep), itemCount(rep.Tools))
}

// identityText is who vouches for a server, in a few words: its provider
// and signer, or "unsigned", with the policy that lets it run when it is
// unsigned or has unsigned tools.
func identityText(rep *checkReport) string {
	unsigned := 0
	for _, f := range rep.Findings {
		if unsignedState(f) {
			unsigned++
		}
	}
	if r := rep.Verification; r != nil && r.Verified {
		var by []string
		if r.Signer != nil {
			by = append(by, signerText(r.Signer))
		}
		if r.Token != nil {
			by = append(by, fmt.Sprintf("token of %s for %s", r.Token.Issuer, r.Token.Subject))
		}
		s := fmt.Sprintf("%s signed by %s", rep.Server, strings.Join(by, " and "))
		if unsigned > 0 {
			s += fmt.Sprintf(" (%d %s not signed, allowed by policy)", unsigned, plural(unsigned, "tool", "tools"))
		}
		return s
	}
	if strings.HasPrefix(rep.Server, "unsigned:") {
		return "unsigned, allowed by policy"
	}
	return rep.Server
}

// unsignedLine states once, for the full report, that the server's tools
// are unsigned and the policy lets them run, instead of a warning a tool.
func unsignedLine(rep *checkReport) string {
	var names []string
	for _, f := range rep.Findings {
		if unsignedState(f) {
			names = append(names, pin.ItemRef(f.Item, f.Tool))
		}
	}
	switch {
	case len(names) == 0:
		return ""
	case rep.Verification == nil:
		return fmt.Sprintf("unsigned, allowed by policy (warn): its %d %s pinned by digest", len(names), plural(len(names), "tool is", "tools are"))
	}
	return fmt.Sprintf("%d %s not signed by the bundle, allowed by policy (warn) and pinned by digest: %s", len(names), plural(len(names), "tool", "tools"), strings.Join(names, ", "))
}

// itemCount is "14 tools", with the server's other items when it offers
// any: "3 tools, 2 prompts, 1 resource".
func itemCount(ts []pin.ToolState) string {
	n := map[string]int{}
	for _, t := range ts {
		if t.Status != pin.StatusRemoved {
			n[t.Item]++
		}
	}
	out := []string{fmt.Sprintf("%d %s", n[pin.ItemTool], plural(n[pin.ItemTool], "tool", "tools"))}
	for _, it := range []struct{ item, one, many string }{
		{pin.ItemPrompt, "prompt", "prompts"}, {pin.ItemResource, "resource", "resources"}, {pin.ItemTemplate, "resource template", "resource templates"}} {
		if n[it.item] > 0 {
			out = append(out, fmt.Sprintf("%d %s", n[it.item], plural(n[it.item], it.one, it.many)))
		}
	}
	return strings.Join(out, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// printProblems is the --quiet report of a server that is not ok: its
// heading and its errors only (no tool table, warnings or notes).
func printProblems(w io.Writer, rep *checkReport, p colour.Painter) {
	say(w, p.Strong("==")+" %s\n", rep.Target)
	if rep.Error != "" {
		say(w, p.Bad("ERROR")+": %s\n", rep.Error)
		return
	}
	var problems []finding.Finding
	for _, f := range rep.Findings {
		if f.Severity == finding.Error {
			problems = append(problems, f)
		}
	}
	printFindingsWith(w, problems, rep.defs)
}
