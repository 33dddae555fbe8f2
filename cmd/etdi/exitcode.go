package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/etdi-dev/etdi/verify"
)

// Exit codes (SPEC.md §11). CI and launch gating depend on them.
const (
	exitOK            = 0
	exitError         = 1  // operational error: bad file, I/O, bad input
	exitUsage         = 2  // bad flags or arguments
	exitSignature     = 10 // missing or invalid signature
	exitRugPull       = 11 // rug pull or downgrade
	exitImpersonation = 12 // impersonation
	exitApproval      = 13 // approval required: new tool or new version
	exitRevoked       = 14 // revoked or expired
)

// kindExit maps each finding kind to its exit code. Findings of severity
// error only; warnings and information never change the exit code.
var kindExit = map[verify.Kind]int{
	verify.BundleInvalid:       exitSignature,
	verify.SignatureMissing:    exitSignature,
	verify.SignatureInvalid:    exitSignature,
	verify.UnsignedTool:        exitSignature,
	verify.Impersonation:       exitImpersonation,
	verify.DefinitionChanged:   exitRugPull,
	verify.Expired:             exitRevoked,
	verify.KeyNotValid:         exitRevoked,
	verify.NewTool:             exitApproval,
	verify.NewVersion:          exitApproval,
	verify.NewSigner:           exitApproval,
	verify.RugPull:             exitRugPull,
	verify.Downgrade:           exitRugPull,
	verify.SignerChanged:       exitImpersonation,
	verify.Shadowing:           exitImpersonation,
	verify.ConfusableName:      exitImpersonation,
	verify.Revoked:             exitRevoked,
	verify.InstructionsChanged: exitRugPull,
	// A definition that shows a configured secret is hostile as it stands
	// and cannot be approved: blocked as a rug pull is (SPEC.md §21).
	verify.SecretInDefinition: exitRugPull,
}

// severityRank orders exit codes when several findings apply: the most
// severe wins, 12 > 11 > 10 > 14 > 13.
var severityRank = map[int]int{
	exitImpersonation: 5,
	exitRugPull:       4,
	exitSignature:     3,
	exitRevoked:       2,
	exitApproval:      1,
}

// exitFor returns the exit code for a set of findings.
func exitFor(findings []verify.Finding) int {
	code := exitOK
	for _, f := range findings {
		if f.Severity != verify.Error {
			continue
		}
		c, ok := kindExit[f.Kind]
		if !ok {
			c = exitSignature // an unknown error finding never passes
		}
		code = worse(code, c)
	}
	return code
}

func worse(a, b int) int {
	if severityRank[b] > severityRank[a] {
		return b
	}
	return a
}

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
	var ue *usageError
	if errors.As(err, &ue) || !ranCommand {
		fmt.Fprintln(stderr, "etdi: hint: run 'etdi help' or add --help to the command")
		return exitUsage
	}
	return exitError
}
