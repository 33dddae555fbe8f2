package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"encoding/base64"

	"github.com/etdi-dev/etdi/internal/atomicfile"
	"github.com/etdi-dev/etdi/pin"
	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"
)

func (e *env) auditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Prove the pin history is intact: verify, checkpoint, export",
		Long: `The pin history is an append-only Merkle log (RFC 6962 hashing). A
security team keeps signed checkpoints of it elsewhere and proves later that
the history still extends them: no record was edited, deleted or reordered.`,
	}
	cmd.AddCommand(e.auditVerifyCmd(), e.auditCheckpointCmd(), e.auditExportCmd(), e.auditRepairCmd())
	return cmd
}

func (e *env) auditRepairCmd() *cobra.Command {
	var pf pinFlags
	var yes bool
	cmd := &cobra.Command{
		Use:   "repair --pins etcd://... [--yes]",
		Short: "Cut a shared history in etcd back to its valid beginning",
		Long: `Read the history of an etcd store from etcd itself and find the first
record that does not verify (one that every machine refuses, naming it). Without
--yes, print what the repair would delete; with --yes, delete that record,
every record after it and their tree hashes, and set the history's size, in
one etcd transaction. Run it with the approver's (or root's) user
($ETDI_ETCD_USER, $ETDI_ETCD_PASSWORD), after a backup (docs/etcd.md,
"Repairing the history"). Machines catch up at their next open.

Exit codes: 0 nothing to repair, or repaired; 10 a repair is needed (without
--yes); 1 error.`,
		Example: `  etdi audit repair --pins etcd://10.0.0.5:2379/etdi
  etdi audit repair --pins etcd://10.0.0.5:2379/etdi --yes`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !pin.IsEtcd(pf.path) {
				return usagef("audit repair works on a store in etcd (--pins etcd://...); a file's history is restored from a backup")
			}
			rep, err := pin.RepairEtcdHistory(pf.path, pf.options(false), yes)
			if err != nil {
				return err
			}
			if rep.Valid == rep.Size && rep.Records == 0 && rep.Hashes == 0 {
				say(e.stdout, "history of %s: %d records, all valid: nothing to repair\n", rep.Location, rep.Size)
				return nil
			}
			say(e.stdout, "history of %s: %d records; record %d: %s\n", rep.Location, rep.Size, rep.Valid, rep.Problem)
			say(e.stdout, "the repair keeps records 0 to %d and deletes %d records and %d tree hashes\n", rep.Valid-1, rep.Records, rep.Hashes)
			for _, b := range rep.Bound {
				say(e.stdout, "  bound to a deleted record (fails closed until approved or revoked again): %s\n", b)
			}
			if !rep.Applied {
				say(e.stdout, "nothing changed; to repair, after a backup: etdi audit repair --pins %s --yes\n", rep.Location)
				return &exitCodeError{exitSignature}
			}
			say(e.stdout, "repaired: the history has %d records; then: etdi audit verify --pins %s\n", rep.Valid, rep.Location)
			return nil
		},
	}
	pf.register(cmd.Flags(), e)
	cmd.Flags().BoolVar(&yes, "yes", false, "delete the invalid records (default: only report)")
	return cmd
}

func (e *env) auditVerifyCmd() *cobra.Command {
	var pf pinFlags
	var checkpoint, keyPath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [--checkpoint OLD]",
		Short: "Recompute the history and prove it extends an older checkpoint",
		Long: `Recompute the Merkle tree from every record and check it against what is
stored: each record's position and content, the tree hash before it, every
stored hash, and the database file's own consistency. With --checkpoint,
also check the checkpoint's signature with the audit verifier key and prove
that the history extends it.

Exit codes: 0 intact, 10 the history or the checkpoint does not verify
(the error names the record), 1 error.`,
		Example: `  etdi audit verify
  etdi audit verify --checkpoint checkpoints/2026-11-01.txt`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			fail := func(rep auditReport, err error) error { return e.auditFail(rep, err, asJSON) }
			// Every page first, in a child process, whatever the schema.
			if _, err := os.Stat(pf.path); err == nil {
				if err := checkFileIsolated(pf.path); err != nil {
					var ce *pin.CorruptError
					if errors.As(err, &ce) {
						return fail(auditReport{}, err)
					}
					return err
				}
			}
			s, err := pf.open(true)
			var ce *pin.CorruptError
			if errors.As(err, &ce) {
				return fail(auditReport{}, err)
			}
			if err != nil {
				return err
			}
			defer s.Close()
			tree, disagreements, err := s.Audit()
			if err != nil {
				return fail(auditReport{}, err)
			}
			rep := auditReport{Intact: true, Records: tree.Size, Root: base64.StdEncoding.EncodeToString(tree.Hash[:]), Disagreements: disagreements}
			if n := len(rep.Disagreements); n > 0 {
				var lines []string
				for _, d := range rep.Disagreements {
					lines = append(lines, d.String())
				}
				rep.Intact = false
				return fail(rep, &linesError{fmt.Errorf("%d pins, revocations or index entries disagree with the history", n), lines})
			}
			auto := false
			if checkpoint == "" {
				// The checkpoint the audit key signed at the last write.
				if p := autoCheckpointPath(pf.local()); fileExists(p) {
					checkpoint, auto = p, true
				}
			}
			if checkpoint != "" {
				_, pub := auditKeyPaths(pf.local(), keyPath)
				size, bad, err := checkAuditCheckpoint(s, tree, checkpoint, pub)
				if err != nil {
					return err
				}
				if bad != nil {
					rep.Intact = false
					return fail(rep, bad)
				}
				rep.Checkpoint = &size
				rep.Signed = size
			}
			rep.Proves = proves(rep.Records, rep.Signed, auto)
			if asJSON {
				return e.writeJSON(rep)
			}
			fmt.Fprintf(e.stdout, "history intact: %d records, root %s\n", rep.Records, rep.Root)
			if rep.Checkpoint != nil {
				fmt.Fprintf(e.stdout, "extends the checkpoint of %d records\n", *rep.Checkpoint)
			}
			fmt.Fprintf(e.stdout, "%s\n", rep.Proves)
			return nil
		},
	}
	pf.register(cmd.Flags(), e)
	cmd.Flags().StringVar(&checkpoint, "checkpoint", "", "an older signed checkpoint to prove consistency with")
	cmd.Flags().StringVar(&keyPath, "key", "", "the verifier key (audit.pub) kept with the checkpoint, or the audit key whose .pub is beside it (default: audit.pub beside the pin database)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// auditReport is what audit verify finds, as --json prints it.
type auditReport struct {
	Intact     bool   `json:"intact"`
	Records    int64  `json:"records"`
	Root       string `json:"root,omitempty"`
	Checkpoint *int64 `json:"checkpointRecords,omitempty"`
	// Signed is how many records a signed checkpoint covers
	// (0: none); Proves says what the result proves.
	Signed int64  `json:"signedRecords"`
	Proves string `json:"proves,omitempty"`
	Error  string `json:"error,omitempty"`
	// Disagreements are pins, revocations and index entries
	// the history does not justify.
	Disagreements []pin.Disagreement `json:"disagreements,omitempty"`
	ExitCode      int                `json:"exitCode"`
}

// auditFail reports a history that does not verify (exit 10).
func (e *env) auditFail(rep auditReport, err error, asJSON bool) error {
	rep.Error, rep.ExitCode = err.Error(), exitSignature
	if asJSON {
		e.writeJSON(rep)
	} else {
		say(e.stdout, "SECURITY ERROR: history: %s\n", err)
	}
	return &exitCodeError{exitSignature}
}

// checkAuditCheckpoint checks the checkpoint file's signature with the
// verifier key file pub and proves that the history (tree) extends it. It
// returns the records the checkpoint covers, or in bad why it does not
// verify; err is an error reading the files or the key.
func checkAuditCheckpoint(s *pin.Store, tree *pin.Tree, checkpoint, pub string) (size int64, bad, err error) {
	msg, err := os.ReadFile(checkpoint)
	if err != nil {
		return 0, nil, err
	}
	vb, err := os.ReadFile(pub)
	if err != nil {
		return 0, nil, &hintError{fmt.Errorf("audit verifier key: %w", err), "give the verifier key kept with the checkpoint with --key"}
	}
	v, err := pin.ParseVerifierKey(string(vb))
	if err != nil {
		return 0, nil, err
	}
	c, err := pin.OpenCheckpoint(msg, v)
	if err != nil {
		return 0, err, nil
	}
	if err := s.CheckConsistency(tree, c); err != nil {
		return 0, err, nil
	}
	return c.Size, nil, nil
}

// proves says what a verified history of n records proves when a signed
// checkpoint covers its first signed records; auto: the checkpoint is the
// one beside the store, signed at its last write.
func proves(n, signed int64, auto bool) string {
	switch {
	case signed == 0:
		return "consistent, but unsigned: the records agree with each other and with the pins; that proves nothing against someone who can write the pin database (or the etcd prefix): they can rewrite the whole history with its hashes, or append to it. " +
			"To prove more, create the audit key (etdi audit checkpoint) and set ETDI_AUDIT_PASSWORD where approvals are made: every write then signs a checkpoint; keep checkpoints and audit.pub where this machine cannot write"
	case signed == n && auto:
		return fmt.Sprintf("signed: all %d records are covered by the checkpoint the audit key signed at the last write (audit.checkpoint beside the store); a copy kept elsewhere proves more: someone who can write this directory can put an older one back", n)
	case signed == n:
		return fmt.Sprintf("signed: all %d records are covered by the signed checkpoint", n)
	default:
		return fmt.Sprintf("signed up to record %d: records 0 to %d extend the signed checkpoint; records %d to %d came after it and are unsigned: anyone who can write the pin database could have appended them", signed-1, signed-1, signed, n-1)
	}
}

// autoCheckpointPath is the checkpoint a store's writes sign, beside its
// local file (pinFlags.local()).
func autoCheckpointPath(local string) string {
	return filepath.Join(filepath.Dir(local), "audit.checkpoint")
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// signEachWrite makes every write of the store sign a checkpoint with the audit
// key, when the key exists beside the store: with ETDI_AUDIT_PASSWORD
// set, into audit.checkpoint beside it; without, each write warns that
// the history grew without a signed checkpoint.
func (f *pinFlags) signEachWrite(o pin.Options) {
	if f.signing || f.env == nil {
		return
	}
	f.signing = true
	local, err := pin.LocalFile(f.path, o)
	if err != nil {
		return
	}
	key, pub := auditKeyPaths(local, "")
	privPEM, err := os.ReadFile(key)
	if err != nil {
		return // no audit key: nothing configured
	}
	a := &pin.AutoCheckpoint{Path: autoCheckpointPath(local), Warn: func(err error) {
		say(f.env.stderr, "etdi: warning: %v\n", err)
	}}
	vb, err := os.ReadFile(pub)
	if err == nil {
		a.Verifier, err = pin.ParseVerifierKey(string(vb))
	}
	if err != nil {
		a.Missing = fmt.Errorf("the audit verifier key %s: %w", pub, err)
		pin.SignWrites(local, a)
		return
	}
	pw, ok := f.env.lookupEnv("ETDI_AUDIT_PASSWORD")
	switch {
	case !ok || pw == "":
		a.Missing = fmt.Errorf("the audit key %s exists but ETDI_AUDIT_PASSWORD is not set", key)
	default:
		if a.Signer, err = pin.OpenAuditKey(privPEM, []byte(pw)); err != nil {
			a.Missing = fmt.Errorf("the audit key %s: %w", key, err)
		}
	}
	pin.SignWrites(local, a)
}

// auditPassword returns the audit key password from ETDI_AUDIT_PASSWORD or
// a terminal prompt.
func (e *env) auditPassword(confirm bool) ([]byte, error) {
	if pw, ok := e.lookupEnv("ETDI_AUDIT_PASSWORD"); ok {
		if pw == "" {
			return nil, errors.New("ETDI_AUDIT_PASSWORD is set but empty")
		}
		return []byte(pw), nil
	}
	sub := *e
	sub.lookupEnv = func(string) (string, bool) { return "", false }
	pw, err := sub.password(confirm)
	if err != nil {
		return nil, &hintError{errors.New("no audit key password: ETDI_AUDIT_PASSWORD is not set and standard input is not a terminal"),
			"export ETDI_AUDIT_PASSWORD, or run on a terminal"}
	}
	return pw, nil
}

// auditSigner opens the audit key of the pin database pins (keyPath, or
// audit.key beside it), creating it and its verifier key (audit.pub) on
// first use; created says it was created.
func (e *env) auditSigner(pins, keyPath string) (signer note.Signer, key, pub string, created bool, err error) {
	key, pub = auditKeyPaths(pins, keyPath)
	privPEM, err := os.ReadFile(key)
	if errors.Is(err, os.ErrNotExist) {
		pw, err := e.auditPassword(true)
		if err != nil {
			return nil, key, pub, false, err
		}
		var vkey string
		if privPEM, vkey, err = pin.GenerateAuditKey("etdi-audit", pw); err != nil {
			return nil, key, pub, false, err
		}
		if err := atomicfile.Create(key, privPEM, 0o600); err != nil {
			return nil, key, pub, false, err
		}
		if err := atomicfile.Create(pub, []byte(vkey+"\n"), 0o644); err != nil {
			os.Remove(key)
			return nil, key, pub, false, err
		}
		created = true
	} else if err != nil {
		return nil, key, pub, false, err
	}
	pw, err := e.auditPassword(false)
	if err != nil {
		return nil, key, pub, created, err
	}
	signer, err = pin.OpenAuditKey(privPEM, pw)
	return signer, key, pub, created, err
}

func (e *env) auditCheckpointCmd() *cobra.Command {
	var pf pinFlags
	var keyPath, out string
	cmd := &cobra.Command{
		Use:   "checkpoint [--out FILE]",
		Short: "Print a signed checkpoint of the history, to keep elsewhere",
		Long: `Verify the history, then print a checkpoint (origin, record count, root
hash) signed with the audit key. The audit key is created on first use:
audit.key (encrypted with ETDI_AUDIT_PASSWORD or a prompted password, 0600)
and audit.pub beside the pin database. Keep checkpoints and audit.pub where
the machine cannot change them; etdi audit verify --checkpoint proves later
that the history still extends them.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := pf.open(true)
			if err != nil {
				return err
			}
			defer s.Close()
			signer, key, pub, created, err := e.auditSigner(pf.local(), keyPath)
			if err != nil {
				return err
			}
			msg, c, err := s.SignCheckpoint(signer)
			if err != nil {
				say(e.stdout, "SECURITY ERROR: history: %s\n", err)
				return &exitCodeError{exitSignature}
			}
			if created {
				fmt.Fprintf(e.stderr, "etdi: created the audit key %s and its verifier key %s\n", key, pub)
			}
			if out != "" {
				if err := atomicfile.Write(out, msg, 0o644); err != nil {
					return err
				}
				fmt.Fprintf(e.stderr, "etdi: wrote a checkpoint of %d records to %s\n", c.Size, out)
				return nil
			}
			_, err = e.stdout.Write(msg)
			return err
		},
	}
	pf.register(cmd.Flags(), e)
	cmd.Flags().StringVar(&keyPath, "key", "", "audit key path (default: audit.key beside the pin database)")
	cmd.Flags().StringVar(&out, "out", "", "write the checkpoint to FILE instead of standard output")
	return cmd
}

func (e *env) auditExportCmd() *cobra.Command {
	var pf pinFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "export --json",
		Short: "Print the full history, one record per line, exactly as stored",
		Long: `Print every record of the history as JSON, one per line, byte for byte as
stored and hashed: sha256 of 0x00 followed by a line (without its newline)
is that record's Merkle leaf hash, so the export can be checked
independently.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !asJSON {
				return usagef("audit export writes JSON lines; pass --json")
			}
			s, err := pf.open(true)
			if err != nil {
				return err
			}
			defer s.Close()
			var b strings.Builder
			err = s.Records(func(data []byte, _ *pin.Record) error {
				b.Write(data)
				b.WriteByte('\n')
				if b.Len() > 1<<20 {
					if _, err := fmt.Fprint(e.stdout, b.String()); err != nil {
						return err
					}
					b.Reset()
				}
				return nil
			})
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(e.stdout, b.String())
			return err
		},
	}
	pf.register(cmd.Flags(), e)
	cmd.Flags().BoolVar(&asJSON, "json", false, "JSON lines (required)")
	return cmd
}
