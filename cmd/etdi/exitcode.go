package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/etdi-dev/etdi/finding"
)

// Exit codes (SPEC.md §11): those of findings come from the one finding
// vocabulary ([finding.ExitCode]); 1 and 2 are the etdi command's own, set
// by no library decision.
const (
	exitOK            = finding.ExitOK
	exitError         = 1 // operational error: bad file, I/O, bad input
	exitUsage         = 2 // bad flags or arguments
	exitSignature     = finding.ExitSignature
	exitRugPull       = finding.ExitRugPull
	exitImpersonation = finding.ExitImpersonation
	exitApproval      = finding.ExitApproval
	exitRevoked       = finding.ExitRevoked
)

// exitFor returns the exit code for a set of findings.
func exitFor(findings []finding.Finding) int { return finding.ExitCode(findings) }

// worse returns the more severe of two exit codes.
func worse(a, b int) int { return finding.Worse(a, b) }

// exitCodeError ends a command with a specific exit code after the command
// has already reported why.
type exitCodeError struct{ code int }

func (e *exitCodeError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// usageError is a problem with flags or arguments (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// hintError carries a hint printed after the error.
type hintError struct {
	err  error
	hint string
}

// commandHintError carries a command to run printed after the error,
// escaped where it was made (each untrusted part, termtext.Escape), so
// that the command, quoted for a shell, is printed as it is pasted.
type commandHintError struct {
	err     error
	command string
}

func (e *commandHintError) Error() string { return e.err.Error() }
func (e *commandHintError) Unwrap() error { return e.err }

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }

// listError is an error that is a sentence followed by a list (paths
// searched, records that disagree): it is printed one item a line, each
// escaped on its own, so that a newline inside an item cannot start a
// line of its own.
type listError interface {
	error
	List() (sentence string, items []string)
}

// linesError is a listError made here.
type linesError struct {
	err   error // the sentence; errors.Is sees it
	items []string
}

func (e *linesError) Error() string {
	return e.err.Error() + ":\n  " + strings.Join(e.items, "\n  ")
}
func (e *linesError) Unwrap() error            { return e.err }
func (e *linesError) List() (string, []string) { return e.err.Error(), e.items }

// sayError prints err after "etdi: error: ", escaped (termtext.Escape):
// a listError, even wrapped, as its lines.
func sayError(stderr io.Writer, err error) {
	msg := err.Error()
	var le listError
	if errors.As(err, &le) {
		if prefix, ok := strings.CutSuffix(msg, le.Error()); ok {
			sentence, items := le.List()
			say(stderr, "etdi: error: %s%s:\n", prefix, sentence)
			for _, it := range items {
				say(stderr, "  %s\n", it)
			}
			return
		}
	}
	say(stderr, "etdi: error: %s\n", msg)
}

// report prints err and returns the process exit code.
func report(stderr io.Writer, err error, ranCommand bool) int {
	if err == nil {
		return exitOK
	}
	var ec *exitCodeError
	if errors.As(err, &ec) {
		return ec.code
	}
	sayError(stderr, err)
	var he *hintError
	if errors.As(err, &he) {
		say(stderr, "etdi: hint: %s\n", he.hint)
	}
	var ch *commandHintError
	if errors.As(err, &ch) {
		fmt.Fprintf(stderr, "etdi: hint: run: %s\n", ch.command)
	}
	var ue *usageError
	if errors.As(err, &ue) || !ranCommand {
		fmt.Fprintln(stderr, "etdi: hint: run 'etdi help' or add --help to the command")
		return exitUsage
	}
	return exitError
}
