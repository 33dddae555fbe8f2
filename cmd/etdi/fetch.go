package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/atomicfile"
	"github.com/spf13/cobra"
)

func (e *env) fetchCmd() *cobra.Command {
	var sf serverFlags
	var out string
	cmd := &cobra.Command{
		Use:   "fetch (--server -- CMD... | --url URL | --config FILE|auto --name ENTRY) [--out FILE]",
		Short: "Save a live server's tools/list to a file, to verify or check offline",
		Long: `Connect to a live server, follow tools/list to its last page and write every
tool as one tools/list result ({"tools": [...]}), the file that --tools takes
(verify, check, pin approve, diff, digest, manifest init). Each tool is
written in its canonical form (RFC 8785), which has the same digest as the
definition the server sent. An in-band bundle the server carries is kept
under _meta["dev.etdi/bundle"], so checking the file finds it. When the
server offers prompts or resources, its prompts, resources and resource
templates are written beside the tools ("prompts", "resources",
"resourceTemplates"), so checking the file pins them too.

Nothing is verified or approved here: fetch only records what the server
serves. With --config, --name picks the entry when the file has several.`,
		Example: `  etdi fetch --out live.json --server -- npx -y @modelcontextprotocol/server-everything
  etdi fetch --url https://mcp.example.com/mcp --out live.json
  etdi verify --trust trust.json --tools live.json weather.etdi.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ts, err := e.targets(&sf, args, cmd.ArgsLenAtDash())
			if err != nil {
				return err
			}
			if len(ts) != 1 {
				return usagef("--config has %d servers; pick one with --name", len(ts))
			}
			t := ts[0]
			if len(t.Problems) > 0 {
				return fmt.Errorf("server %s cannot be started as configured: %s", t.Label, t.Problems[0])
			}
			if out == "" || out == "-" {
				// Nothing reaches standard output before the whole listing
				// was fetched and found free of credentials: it is
				// spooled to a temporary file first.
				spool, err := os.CreateTemp("", "etdi-fetch-*.json")
				if err != nil {
					return err
				}
				defer os.Remove(spool.Name())
				defer spool.Close()
				if _, err := e.fetchSave(&sf, &t, spool); err != nil {
					return err
				}
				if _, err := spool.Seek(0, io.SeekStart); err != nil {
					return err
				}
				_, err = io.Copy(e.stdout, spool)
				return err
			}
			var saved *guard.Saved
			err = atomicfile.WriteFunc(out, 0o644, func(w io.Writer) error {
				saved, err = e.fetchSave(&sf, &t, w)
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "etdi: wrote %d tool(s) from %d page(s) to %s\n", saved.Entries["tools"], saved.Pages, out)
			return nil
		},
	}
	sf.registerLive(cmd.Flags())
	sf.registerConfig(cmd.Flags())
	cmd.Flags().StringVar(&out, "out", "", "write to FILE instead of standard output")
	return cmd
}

// fetchSave fetches the target and writes its listing to w page by page
// (guard.FetchSave). Credentials the server shows are reported as
// findings, and the error leaves w to be discarded.
func (e *env) fetchSave(f *serverFlags, t *target, w io.Writer) (*guard.Saved, error) {
	e.progress("checking %s", t.Label)
	// What the command runs is resolved before it starts, and saved with
	// the listing: approving from the file records it.
	origin := guard.ResolveOrigin(e.ctx, t.Server())
	served, at := t.Secrets.String(origin.Served()), t.Secrets.String(origin.ServedAt())
	saved, fs, err := guard.FetchSave(e.ctx, t.Server(), guard.FetchOptions{StartTimeout: f.startTimeout, Timeout: f.timeout, ClientVersion: readBuildInfo().Version, Served: served, ServedAt: at,
		Capabilities: f.capabilitiesOf(t)}, t.Credentials, w)
	if err != nil {
		// The error may quote the server's stderr, a URL or a header.
		var se *guard.FetchError
		if errors.As(err, &se) {
			se.Stderr = t.Secrets.Tail(se.Stderr) // the kept tail may start inside a secret
		}
		return nil, t.Secrets.Error(fmt.Errorf("server %s: %w", t.Label, err))
	}
	if len(fs) > 0 { // never saved (SPEC.md §14)
		printFindings(e.stderr, fs)
		return nil, &exitCodeError{exitFor(fs)}
	}
	e.progress("%s: %d tool(s) in %d page(s)", t.Label, saved.Entries["tools"], saved.Pages)
	return saved, nil
}
