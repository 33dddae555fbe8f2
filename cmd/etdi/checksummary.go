package main

import (
	"fmt"
	"io"

	"github.com/etdi-dev/etdi/verify"
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

// printChecks prints the prose report of every server; quiet prints only
// the servers with a problem, and of them only the problems.
func printChecks(w io.Writer, reps []*checkReport, quiet bool) {
	first := true
	for _, rep := range reps {
		if quiet && !hasProblem(rep) {
			continue
		}
		if !first {
			say(w, "\n")
		}
		first = false
		if quiet {
			printProblems(w, rep)
		} else {
			printCheck(w, rep)
		}
	}
}

// hasProblem reports whether a server is not ok: it could not be checked
// or has an error finding. Warnings alone (unsigned tools under the warn
// policy) never change the exit code and are not a problem here.
func hasProblem(rep *checkReport) bool {
	return rep.Error != "" || rep.ExitCode != exitOK
}

// printProblems is printCheck without what is fine: no verification line,
// no tool table, no notes and no approvals.
func printProblems(w io.Writer, rep *checkReport) {
	say(w, "== %s\n", rep.Target)
	if rep.Error != "" {
		say(w, "ERROR: %s\n", rep.Error)
		return
	}
	var problems []verify.Finding
	for _, f := range rep.Findings {
		if levelOf(f).Severity != verify.Info {
			problems = append(problems, f)
		}
	}
	printFindingsWith(w, problems, rep.defs)
}
