package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/atomicfile"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/pin/lockfile"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/mod/sumdb/note"
)

// lockFlags name a team lockfile (docs/fleets.md#team-lockfile) and the keys its
// signature must verify with.
type lockFlags struct {
	path string
	keys []string
}

// register registers --lock and --lock-key; what says what --lock does.
func (f *lockFlags) register(fs *pflag.FlagSet, what string) {
	fs.StringVar(&f.path, "lock", "", what)
	fs.StringArrayVar(&f.keys, "lock-key", nil, "require the lockfile to be signed by this audit verifier key: the key itself or a file holding it (audit.pub); repeatable, any one of them")
}

// lockHelp is the help of --lock for commands that check.
const lockHelp = "check against this team lockfile, read-only, instead of a pin database: nothing is written, nothing can be approved (etdi pin export --lock writes one)"

// lockRefused ends a command whose lockfile does not verify (exit 10),
// is older than one accepted before with its key (exit 11, a downgrade)
// or has expired (exit 14).
func (e *env) lockRefused(path string, err error) error {
	var re *lockfile.RollbackError
	var xe *lockfile.ExpiredError
	switch {
	case errors.As(err, &re):
		say(e.stderr, "etdi: SECURITY ERROR: lockfile %s is refused: %s\n", path, err)
		return &exitCodeError{exitRugPull}
	case errors.As(err, &xe):
		say(e.stderr, "etdi: SECURITY ERROR: lockfile %s is refused: %s\n", path, err)
		return &exitCodeError{exitRevoked}
	}
	say(e.stderr, "etdi: error: lockfile %s does not verify: %s\n", path, err)
	return &exitCodeError{exitSignature}
}

// lockStatePath is where a check remembers the lockfile generations it
// accepted: beside the user's etdi configuration.
func lockStatePath() string { return defaultPath(lockfile.StateFile) }

// sayLines prints a multi-line message line by line (say escapes a
// newline), the first line after prefix.
func (e *env) sayLines(prefix string, msg string) {
	for i, line := range strings.Split(msg, "\n") {
		if i > 0 {
			prefix = "etdi:   "
			line = strings.TrimLeft(line, " ")
		}
		say(e.stderr, "%s%s\n", prefix, line)
	}
}

// readLock reads, parses and, with keys, verifies a lockfile. A lockfile
// that cannot be read or parsed is an error (exit 1); one whose content
// or signature does not verify, or that is unsigned while keys are given,
// is exit 10; an expired one exit 14; with keys, one of a generation
// lower than accepted before with its key (or of the same generation
// with other content) exit 11. A signature is not checked without keys:
// the lockfile is then trusted as the repository's review left it.
func (e *env) readLock(path string, keys []string) (*lockfile.File, error) {
	data, err := e.readInput(path)
	if err != nil {
		return nil, err
	}
	f, err := lockfile.Parse(data)
	var ve *lockfile.VerifyError
	if errors.As(err, &ve) {
		return nil, e.lockRefused(path, err)
	}
	if err != nil {
		return nil, &hintError{fmt.Errorf("lockfile %s: %w", path, err), "write lockfiles with etdi pin export --lock FILE; a lockfile is refused whole, never partly read"}
	}
	if len(keys) == 0 {
		if f.Signature != "" {
			say(e.stderr, "etdi: lockfile %s is signed; its signature is not checked without --lock-key\n", path)
		}
		if err := f.CheckExpiry(time.Time{}); err != nil {
			return nil, e.lockRefused(path, err)
		}
		return f, nil
	}
	var vs []note.Verifier
	for _, k := range keys {
		v, err := verifierKey(k)
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	if err := f.Accept(lockfile.AcceptOptions{Keys: vs, State: lockStatePath()}); err != nil {
		var ve *lockfile.VerifyError
		var re *lockfile.RollbackError
		var xe *lockfile.ExpiredError
		if errors.As(err, &ve) || errors.As(err, &re) || errors.As(err, &xe) {
			return nil, e.lockRefused(path, err)
		}
		return nil, err
	}
	return f, nil
}

// verifierKey is the note verifier key given as text or as a file holding
// it.
func verifierKey(k string) (note.Verifier, error) {
	if v, err := pin.ParseVerifierKey(k); err == nil {
		return v, nil
	}
	data, err := os.ReadFile(k)
	if errors.Is(err, os.ErrNotExist) {
		return nil, usagef("--lock-key %q is neither a verifier key (etdi-audit+...) nor a file", k)
	}
	if err != nil {
		return nil, err
	}
	if strings.Contains(string(data), pin.AuditKeyPEMType) {
		return nil, usagef("--lock-key %s is the private audit key; give its verifier key (audit.pub)", k)
	}
	v, err := pin.ParseVerifierKey(string(data))
	if err != nil {
		return nil, fmt.Errorf("--lock-key %s: %w", k, err)
	}
	return v, nil
}

// useLock makes pf a temporary pin database loaded from the lockfile of
// lf, for a read-only check, and returns what removes it. Without --lock
// it does nothing (--lock-key alone is a usage error).
func (e *env) useLock(cmd *cobra.Command, lf *lockFlags, pf *pinFlags) (func(), error) {
	if lf.path == "" {
		if len(lf.keys) > 0 {
			return nil, usagef("--lock-key needs --lock FILE")
		}
		return func() {}, nil
	}
	if cmd.Flags().Changed("pins") {
		return nil, usagef("--lock and --pins cannot be combined: --lock checks against the lockfile alone")
	}
	f, err := e.readLock(lf.path, lf.keys)
	if err != nil {
		return nil, err
	}
	path, remove, err := lockfile.Temporary(f)
	if err != nil {
		return nil, e.lockImportError(lf.path, err)
	}
	pf.path, pf.lock = path, lf.path
	return remove, nil
}

// lockImportError reports an import that failed, line by line.
func (e *env) lockImportError(path string, err error) error {
	var ce *lockfile.ConflictError
	e.sayLines("etdi: error: lockfile "+path+": ", err.Error())
	if errors.As(err, &ce) {
		say(e.stderr, "etdi: hint: review the differences (etdi pin show SERVER/TOOL), then import again with --replace to let the lockfile replace them\n")
	}
	return &exitCodeError{exitError}
}

// readOnlyLock refuses an approval asked for together with --lock.
func readOnlyLock(flag string) error {
	return usagef("%s approves, and --lock is read-only: approve into a pin database (etdi pin approve --pins DB ...), "+
		"then write the lockfile again with etdi pin export --pins DB --lock FILE", flag)
}

func (e *env) pinExportCmd() *cobra.Command {
	var pf pinFlags
	var lock, keyPath, expires string
	var sign bool
	var generation uint64
	cmd := &cobra.Command{
		Use:   "export --lock FILE [--pins DB] [--sign [--key AUDITKEY] [--generation N] [--expires 90d]]",
		Short: "Write the approvals of a pin database as a team lockfile to commit and review",
		Long: `Write what the pin database approved and revoked as a team lockfile
(docs/fleets.md#team-lockfile): canonical JSON with sorted members and entries, indented one
member per line, so a changed description is a one-line change in a pull
request, and the same approvals give the same bytes on every machine. Per
approved tool, prompt or resource: server, item kind, name, version,
digest, signer, provider, permissions, bundle sequence, what served it and
the approved definition; per server its approved instructions; every
revocation with its reason. Who approved and when are left out (the
lockfile's own history in the repository says that); nothing secret is in
it.

The history is replayed first: a database whose pins or revocations the
history does not justify is not exported (exit 10).

--sign signs the lockfile with the audit key (audit.key beside the pin
database, or --key; created on first use, like etdi audit checkpoint;
its password from ETDI_AUDIT_PASSWORD or a prompt): the signature is a
signed note in the lockfile's "signature" member over the SHA-256 of the
canonical form without it. Check it with --lock-key audit.pub.

A signed lockfile carries a generation and an expiry, both signed. A check
with --lock-key remembers the highest generation it accepted per audit key
(lock-generations.json beside the user's configuration) and refuses a
lower one (exit 11): an older lockfile, replayed, may predate a
revocation. It refuses an expired lockfile (exit 14). --generation N sets
the generation (default: one more than the lockfile FILE replaces, and at
least the time in Unix seconds); it must be higher than the generation of
the lockfile it replaces. --expires sets the validity: days (90d), a
duration (2160h) or an RFC 3339 time (default 90 days). Export a new
generation before the current one expires.

Then check against the lockfile, read-only, with etdi check --lock FILE
and etdi run --lock FILE, or load it into a pin database with etdi pin
import --lock FILE. FILE - writes to standard output.

Exit codes: 0 written, 10 the history does not justify the database,
1 error, 2 usage.`,
		Example: `  etdi pin export --lock .etdi/etdi.lock.json
  etdi pin export --pins team.db --lock .etdi/etdi.lock.json --sign
  etdi pin export --pins team.db --lock .etdi/etdi.lock.json --sign --expires 30d
  etdi pin export --lock - | diff .etdi/etdi.lock.json -`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if lock == "" {
				return usagef("--lock FILE is required: where to write the lockfile (- for standard output)")
			}
			if keyPath != "" && !sign {
				return usagef("--key applies to --sign")
			}
			if (generation != 0 || expires != "") && !sign {
				return usagef("--generation and --expires apply to --sign: an unsigned lockfile carries neither")
			}
			now := time.Now().UTC().Truncate(time.Second)
			expiry, err := lockExpiry(expires, now)
			if err != nil {
				return err
			}
			if generation, err = e.lockGeneration(lock, sign, generation, now); err != nil {
				return err
			}
			s, err := pf.open(true)
			if err != nil {
				return err
			}
			f, err := lockfile.Export(s)
			s.Close()
			var ue *lockfile.UnjustifiedError
			if errors.As(err, &ue) {
				e.sayLines("etdi: SECURITY ERROR: ", err.Error())
				return &exitCodeError{exitSignature}
			}
			if err != nil {
				return err
			}
			signed := ""
			if sign {
				signer, key, pub, created, err := e.auditSigner(pf.local(), keyPath)
				if err != nil {
					return err
				}
				if created {
					say(e.stderr, "etdi: created the audit key %s and its verifier key %s\n", key, pub)
				}
				f.Generation, f.Expires = generation, expiry
				if err := f.Sign(signer); err != nil {
					return err
				}
				signed = fmt.Sprintf(", generation %d, expires %s, signed by %s (verify with --lock-key %s)",
					generation, expiry.Format(time.RFC3339), signer.Name(), pub)
			}
			data, err := f.Marshal()
			if err != nil {
				return err
			}
			if lock == "-" {
				_, err = e.stdout.Write(data)
				return err
			}
			if err := atomicfile.Write(lock, data, 0o644); err != nil {
				return err
			}
			say(e.stderr, "etdi: wrote %d pins of %d servers and %d revocations to %s%s\n", len(f.Pins), len(f.Servers), len(f.Revocations), lock, signed)
			return nil
		},
	}
	pf.register(cmd.Flags(), e)
	cmd.Flags().StringVar(&lock, "lock", "", "the lockfile to write (- for standard output)")
	cmd.Flags().BoolVar(&sign, "sign", false, "sign the lockfile with the audit key")
	cmd.Flags().StringVar(&keyPath, "key", "", "with --sign: the audit key (default: audit.key beside the pin database)")
	cmd.Flags().Uint64Var(&generation, "generation", 0, "with --sign: the lockfile's generation, higher than the one it replaces (default: one more, at least the time in Unix seconds)")
	cmd.Flags().StringVar(&expires, "expires", "", "with --sign: validity, days (90d), a duration (2160h) or an RFC 3339 time (default 90d)")
	return cmd
}

// lockExpiry is the expiry of a signed lockfile exported at now: --expires
// as days, a duration or an RFC 3339 time in the future; 90 days when
// empty.
func lockExpiry(expires string, now time.Time) (time.Time, error) {
	if expires == "" {
		return now.Add(90 * 24 * time.Hour), nil
	}
	if d, derr := parseValidity(expires); derr == nil {
		if d < time.Second {
			return time.Time{}, usagef("--expires %q must be at least a second", expires)
		}
		return now.Add(d), nil
	}
	if t, terr := time.Parse(time.RFC3339, expires); terr == nil && t.After(now) {
		return t.UTC().Truncate(time.Second), nil
	}
	return time.Time{}, usagef("--expires %q: want days (90d), a duration (2160h) or an RFC 3339 time in the future", expires)
}

// lockGeneration is the generation of the lockfile written to lock:
// generation when given (at most lockfile.MaxGeneration, and higher than
// that of the signed lockfile it replaces), else the next one after it.
func (e *env) lockGeneration(lock string, sign bool, generation uint64, now time.Time) (uint64, error) {
	if generation > lockfile.MaxGeneration {
		return 0, usagef("--generation %d: at most %d", generation, uint64(lockfile.MaxGeneration))
	}
	// The lockfile FILE replaces, whose generation the new one must
	// exceed.
	var previous *lockfile.File
	if sign && lock != "-" {
		if data, err := os.ReadFile(lock); err == nil {
			if previous, err = lockfile.Parse(data); err != nil {
				say(e.stderr, "etdi: warning: the lockfile %s being replaced does not read (%v); its generation is not known\n", lock, err)
				previous = nil
			}
		}
	}
	switch {
	case generation == 0:
		generation = lockfile.NextGeneration(previous, now)
	case previous != nil && generation <= previous.Generation:
		return 0, usagef("--generation %d is not higher than the generation %d of %s: a check that accepted that one refuses this one", generation, previous.Generation, lock)
	}
	return generation, nil
}

func (e *env) pinImportCmd() *cobra.Command {
	var pf pinFlags
	var lf lockFlags
	var replace, asJSON bool
	cmd := &cobra.Command{
		Use:   "import --lock FILE [--pins DB] [--lock-key KEY] [--replace]",
		Short: "Load a team lockfile into a pin database, with a history record per approval",
		Long: `Load the approvals and revocations of a team lockfile (docs/fleets.md#team-lockfile) into the
pin database. Each pin the database lacks becomes an approval with its
history record (etdi audit verify still verifies), each revocation it
lacks a revocation; what it already holds as the lockfile says is left
alone, so importing the same lockfile twice changes nothing. Pins of the
database that the lockfile lacks stay: an import never removes anything.

A pin of the database that the lockfile would replace (another version,
digest, signer, permissions or what served it), and approved server
instructions it would replace, are a conflict: each is listed and nothing
is imported (exit 1), unless --replace, which re-approves them from the
lockfile (recorded as re-approvals, naming what they replaced). A revoked
tool is never approved again.

With --lock-key the lockfile must be signed by that audit key (etdi pin
export --sign); an unsigned or tampered one is refused (exit 10), and so
is one of a lower generation than a lockfile of that key accepted before
(exit 11, remembered in lock-generations.json beside the user's
configuration). Without it a signature is not checked. An expired
lockfile is refused (exit 14).

Exit codes: 0 imported (or nothing to do), 10 the lockfile does not
verify, 11 an older generation, 14 expired, 1 a conflict or an error,
2 usage.`,
		Example: `  etdi pin import --lock .etdi/etdi.lock.json
  etdi pin import --lock .etdi/etdi.lock.json --lock-key .etdi/audit.pub --replace`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if lf.path == "" {
				return usagef("--lock FILE is required: the lockfile to import")
			}
			f, err := e.readLock(lf.path, lf.keys)
			if err != nil {
				return err
			}
			s, err := pf.open(false)
			if err != nil {
				return err
			}
			defer s.Close()
			res, err := lockfile.Import(s, f, lockfile.ImportOptions{By: pf.who(), Replace: replace})
			if err != nil {
				return e.lockImportError(lf.path, err)
			}
			if asJSON {
				return e.writeJSON(struct {
					*lockfile.Result
					ExitCode int `json:"exitCode"`
				}{res, exitOK})
			}
			for _, a := range res.Approved {
				what, replacing := "imported", ""
				if a.Replaced != "" {
					what, replacing = "re-approved", " (replacing "+a.Replaced+")"
				}
				label := pin.ItemRef(a.Pin.Item, a.Pin.Tool)
				if a.Pin.Version != "" {
					label = etdi.SubjectName(a.Pin.Tool, a.Pin.Version)
				}
				say(e.stdout, "%s %s/%s %s%s\n", what, a.Pin.Server, label, a.Pin.Digest, replacing)
			}
			for _, r := range res.Revoked {
				say(e.stdout, "revoked %s\n", (&lockfile.Revocation{Server: r.Server, Tool: r.Tool, Version: r.Version, KeyID: r.KeyID}).Target())
			}
			for _, srv := range res.Instructions {
				say(e.stdout, "recorded the approved instructions of %s\n", srv)
			}
			say(e.stdout, "%d approved, %d revoked, %d unchanged\n", len(res.Approved), len(res.Revoked), res.Unchanged)
			return nil
		},
	}
	pf.register(cmd.Flags(), e)
	pf.registerBy(cmd.Flags())
	lf.register(cmd.Flags(), "the lockfile to import")
	cmd.Flags().BoolVar(&replace, "replace", false, "let the lockfile replace pins and approved instructions that differ from it")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was imported as JSON")
	return cmd
}
