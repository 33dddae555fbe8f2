package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/etdi-dev/etdi/verify"
)

// Exit codes (SPEC.md §11), from the one finding vocabulary in verify.
const (
	exitOK            = verify.ExitOK
	exitError         = verify.ExitError
	exitUsage         = verify.ExitUsage
	exitSignature     = verify.ExitSignature
	exitRugPull       = verify.ExitRugPull
	exitImpersonation = verify.ExitImpersonation
	exitApproval      = verify.ExitApproval
	exitRevoked       = verify.ExitRevoked
)

// exitFor returns the exit code for a set of findings.
func exitFor(findings []verify.Finding) int { return verify.ExitCode(findings) }

// worse returns the more severe of two exit codes.
func worse(a, b int) int { return verify.Worse(a, b) }

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

// report prints err and returns the process exit code.
func report(stderr io.Writer, err error, ranCommand bool) int {
	if err == nil {
		return exitOK
	}
	var ec *exitCodeError
	if errors.As(err, &ec) {
		return ec.code
	}
	say(stderr, "etdi: error: %s\n", err)
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
