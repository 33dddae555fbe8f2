package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// env is what commands need from the process: streams and the environment.
// Tests and the demo run commands in-process with their own env.
type env struct {
	ctx       context.Context
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
	lookupEnv func(string) (string, bool)
	// ranCommand is set once flags and arguments were accepted, so that
	// later errors are operational (exit 1) and earlier ones usage (exit 2).
	ranCommand bool
	// quiet (check --quiet) silences progress lines.
	quiet bool
	// args are the command line after "etdi", for commands that print
	// it back (with a flag added).
	args []string
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, lookupEnv: os.LookupEnv}
	return e.run(args)
}

func (e *env) run(args []string) int {
	e.args = args
	root := e.newRoot()
	root.SetArgs(args)
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	err := root.ExecuteContext(e.ctx)
	return report(e.stderr, err, e.ranCommand)
}

func (e *env) newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "etdi",
		Short: "Sign and verify MCP tool definitions (ETDI)",
		Long: `etdi makes Model Context Protocol tools trustworthy.

On a new machine, one command protects every host's MCP servers (trust
policy, review, approval, wrapping); etdi review decides what changes later:
  etdi init
  etdi review

A provider signs versioned tool manifests with a provider key:
  etdi key generate --out acme
  etdi sign --key acme.key --out weather.etdi.json weather.manifest.json

A client verifies a bundle, and optionally the live tools/list of the server,
against its trust policy before it lets a model see the tools:
  etdi trust add --trust trust.json --provider acme --key acme.pub
  etdi verify --trust trust.json --tools live.json weather.etdi.json

Exit codes: 0 ok, 1 error, 2 usage, 10 missing or invalid signature,
11 rug pull or downgrade, 12 impersonation, 13 approval required,
14 revoked or expired. With several findings the most severe wins
(12 > 11 > 10 > 14 > 13). See SPEC.md for the formats.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, args []string) {
			e.ranCommand = true
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.Version = readBuildInfo().Version
	root.SetVersionTemplate(readBuildInfo().String() + "\n")
	root.AddCommand(e.versionCmd(), e.fetchCmd(), e.policyCmd(), e.keyCmd(), e.signCmd(), e.verifyCmd(), e.trustCmd(), e.checkCmd(), e.pinCmd(), e.diffCmd(), e.auditCmd(), e.manifestCmd(), e.digestCmd(), e.demoCmd(), e.wrapCmd(), e.unwrapCmd(), e.runCmd(), e.initCmd(), e.reviewCmd(), e.registryCmd(), e.installCmd())
	rejectUnknownSubcommands(root)
	return root
}

// rejectUnknownSubcommands makes every command that only groups others
// (etdi, etdi pin, ...) print its help when run alone and refuse an
// unknown subcommand as a usage error (exit 2) that suggests the nearest
// one: cobra would print the group's help and exit 0.
func rejectUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		rejectUnknownSubcommands(sub)
	}
	if !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.SuggestionsMinimumDistance = 2
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return &usageError{fmt.Errorf("%s (the commands: %s --help)", msg, cmd.CommandPath())}
	}
}

// exactArgs is cobra.ExactArgs returning a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %d argument(s), got %d", cmd.CommandPath(), n, len(args))
		}
		return nil
	}
}

// readInput reads a file ("-" for stdin) of at most etdi.MaxManifestSize bytes.
func (e *env) readInput(path string) ([]byte, error) {
	var r io.Reader
	if path == "-" {
		r = e.stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, etdi.MaxManifestSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > etdi.MaxManifestSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, etdi.MaxManifestSize)
	}
	return data, nil
}

// password returns the key password from ETDI_PASSWORD or, on a terminal,
// a prompt. It never prompts without a terminal.
func (e *env) password(confirm bool) ([]byte, error) {
	if pw, ok := e.lookupEnv("ETDI_PASSWORD"); ok {
		if pw == "" {
			return nil, errors.New("ETDI_PASSWORD is set but empty")
		}
		return []byte(pw), nil
	}
	f, ok := e.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, &hintError{errors.New("no password: ETDI_PASSWORD is not set and standard input is not a terminal"),
			"export ETDI_PASSWORD in CI, or run on a terminal to be prompted"}
	}
	fmt.Fprint(e.stderr, "Password for the private key: ")
	pw, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(e.stderr)
	if err != nil {
		return nil, err
	}
	if len(pw) == 0 {
		return nil, errors.New("empty password")
	}
	if confirm {
		fmt.Fprint(e.stderr, "Repeat the password: ")
		again, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.stderr)
		if err != nil {
			return nil, err
		}
		if string(again) != string(pw) {
			return nil, errors.New("passwords do not match")
		}
	}
	return pw, nil
}

// stdinIsTerminal reports whether standard input is a terminal.
func (e *env) stdinIsTerminal() bool {
	f, ok := e.stdin.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress prints a line on standard error when it is a terminal; off a
// terminal, output stays machine-friendly.
func (e *env) progress(format string, args ...any) {
	if f, ok := e.stderr.(*os.File); ok && !e.quiet && term.IsTerminal(int(f.Fd())) {
		say(e.stderr, "etdi: "+format+"\n", args...)
	}
}

// writeJSON writes v as indented JSON to stdout.
func (e *env) writeJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// parseValidity parses a validity period: whole days ("30d") or a Go
// duration ("720h", "90m").
func parseValidity(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok && n != "" {
		days, err := strconv.ParseUint(n, 10, 16)
		if err != nil {
			return 0, fmt.Errorf("%q: want a whole number of days", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// parseTimeFlag parses an RFC 3339 time.
func parseTimeFlag(name, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, usagef("--%s %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", name, s)
	}
	return t, nil
}

// defaultTrust is the trust policy used without --trust: $ETDI_TRUST, else
// trust.json in the per-user etdi configuration directory.
func (e *env) defaultTrust() string { return e.defaultFile("ETDI_TRUST", "trust.json") }

// defaultPins is the pin database used without --pins: $ETDI_PINS, else
// pins.db in the per-user etdi configuration directory.
func (e *env) defaultPins() string { return e.defaultFile("ETDI_PINS", "pins.db") }

func (e *env) defaultFile(variable, name string) string {
	if v, ok := e.lookupEnv(variable); ok && v != "" {
		return v
	}
	return defaultPath(name)
}

// defaultPath returns a file under the per-user etdi configuration
// directory (created 0700 when etdi first writes there).
func defaultPath(name string) string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return name
	}
	return filepath.Join(dir, "etdi", name)
}
