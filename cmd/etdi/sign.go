package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/atomicfile"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/sign"
	"github.com/spf13/cobra"
)

func (e *env) signCmd() *cobra.Command {
	var keyRef, out, expires, issuedAt string
	var sequence uint64
	cmd := &cobra.Command{
		Use:   "sign --key KEY --out BUNDLE MANIFEST",
		Short: "Sign a tool manifest into a bundle",
		Long: `Sign a tool manifest (SPEC.md §4) into a bundle (SPEC.md §6): a DSSE
envelope around an in-toto statement naming every tool as <name>@<version>
with the SHA-256 of its canonical definition.

KEY is an encrypted private key file, env://VAR (the key's PEM text in an
environment variable), or a KMS URI when etdi is built with -tags kms. The
password comes from ETDI_PASSWORD, or a prompt on a terminal.

--expires takes a duration (4320h) or an RFC 3339 time; the default is 180
days. --sequence must increase with every bundle you publish for a server;
the default is the issue time in Unix seconds.`,
		Example: `  etdi sign --key acme.key --out weather.etdi.json weather.manifest.json
  etdi sign --key env://ETDI_KEY --expires 720h --out - weather.manifest.json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if keyRef == "" || out == "" {
				return usagef("--key and --out are required")
			}
			opts := sign.Options{Sequence: sequence}
			var err error
			if opts.IssuedAt, err = parseTimeFlag("issued-at", issuedAt); err != nil {
				return err
			}
			if opts.IssuedAt.IsZero() {
				opts.IssuedAt = time.Now()
			}
			if expires != "" {
				if d, derr := time.ParseDuration(expires); derr == nil {
					if d <= 0 {
						return usagef("--expires %q must be positive", expires)
					}
					opts.Expires = opts.IssuedAt.Add(d)
				} else if opts.Expires, err = parseTimeFlag("expires", expires); err != nil {
					return usagef("--expires %q: want a duration such as 4320h or an RFC 3339 time", expires)
				}
			}
			data, err := e.readInput(args[0])
			if err != nil {
				return err
			}
			m, err := etdi.ParseManifest(data)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			signer, pub, err := keys.LoadSigner(e.ctx, keyRef, func() ([]byte, error) { return e.password(false) })
			if err != nil {
				return err
			}
			b, err := sign.Sign(m, signer, pub, opts)
			if err != nil {
				return err
			}
			body := b.Marshal()
			if out == "-" {
				_, err = e.stdout.Write(body)
				return err
			}
			if err := atomicfile.Write(out, body, 0o644); err != nil {
				return err
			}
			id, _ := keys.ID(pub)
			var names []string
			for _, t := range m.Tools {
				names = append(names, etdi.SubjectName(t.Name, t.Version))
			}
			fmt.Fprintf(e.stderr, "etdi: signed %d tool(s) for provider %q with key %s: %s\netdi: wrote %s\n",
				len(m.Tools), m.Provider.ID, keys.ShortID(id), strings.Join(names, ", "), out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&keyRef, "key", "", "private key: file, env://VAR or KMS URI (required)")
	f.StringVar(&out, "out", "", "bundle file to write, or - for standard output (required)")
	f.StringVar(&expires, "expires", "", "validity: duration (e.g. 4320h) or RFC 3339 time (default 180 days)")
	f.StringVar(&issuedAt, "issued-at", "", "issue time, RFC 3339 (default now; for reproducible builds)")
	f.Uint64Var(&sequence, "sequence", 0, "bundle sequence number (default: issue time in Unix seconds)")
	return cmd
}
