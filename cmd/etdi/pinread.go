package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/pin"
	"github.com/spf13/cobra"
)

func (e *env) pinListCmd() *cobra.Command {
	var pf pinFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every pinned tool",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := pf.open(true)
			if err != nil {
				return err
			}
			defer s.Close()
			pins, err := s.List()
			if err != nil {
				return err
			}
			type row struct {
				Ref        string    `json:"ref"`
				Version    string    `json:"version,omitempty"`
				Digest     string    `json:"digest"`
				Signer     string    `json:"signer"`
				ApprovedBy string    `json:"approvedBy"`
				ApprovedAt time.Time `json:"approvedAt"`
			}
			rows := []row{}
			for _, p := range pins {
				rows = append(rows, row{p.Ref(), p.Version, p.Digest, p.Signer.String(), p.ApprovedBy, p.ApprovedAt})
			}
			if asJSON {
				return e.writeJSON(rows)
			}
			for _, r := range rows {
				d, _ := etdi.ParseDigest(r.Digest)
				v := r.Version
				if v == "" {
					v = "-"
				}
				say(e.stdout, "%s  %s  sha256:%s  %s  approved by %s at %s\n", r.Ref, v, d.Short(), r.Signer, r.ApprovedBy, r.ApprovedAt.Format(time.RFC3339))
			}
			return nil
		},
	}
	pf.register(cmd.Flags(), e)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func (e *env) pinShowCmd() *cobra.Command {
	var pf pinFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "show SERVER/TOOL",
		Short:   "Show one pin with its approved definition",
		Example: `  etdi pin show acme:weather/get_weather`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, tool, _, err := pin.ParseRef(args[0])
			if err != nil {
				return &usageError{err}
			}
			s, err := pf.open(true)
			if err != nil {
				return err
			}
			defer s.Close()
			p, err := s.Get(server, tool)
			if err != nil {
				return err
			}
			if p == nil {
				return fmt.Errorf("no pin %s", args[0])
			}
			if asJSON {
				return e.writeJSON(p)
			}
			say(e.stdout, "%s\n  version      %s\n  digest       %s\n  signer       %s\n  provider     %s\n  permissions  %s\n  approved     by %s at %s\n  definition\n",
				p.Ref(), orDash(p.Version), p.Digest, p.Signer, orDash(p.Provider), permList(p.Permissions), p.ApprovedBy, p.ApprovedAt.Format(time.RFC3339))
			describeTool(e.stdout, p.Definition, p.Permissions)
			say(e.stdout, "  definition (JSON)\n")
			sayJSON(e.stdout, "    ", p.Definition)
			return nil
		},
	}
	pf.register(cmd.Flags(), e)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func (e *env) pinHistoryCmd() *cobra.Command {
	var pf pinFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history [SERVER[/TOOL]]",
		Short: "Show the history of approvals, revocations and findings",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("history takes at most one SERVER[/TOOL]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var server, tool, whole string
			if len(args) == 1 {
				// A server name may hold '/' (@scope/name): the whole
				// argument names a server, or SERVER/TOOL.
				server, whole = args[0], args[0]
				if i := strings.LastIndexByte(args[0], '/'); i > 0 {
					server, tool = args[0][:i], args[0][i+1:]
				}
			}
			s, err := pf.open(true)
			if err != nil {
				return err
			}
			defer s.Close()
			recs := []pin.Record{}
			err = s.Records(func(_ []byte, r *pin.Record) error {
				if (server == "" || r.Server == server) && (tool == "" || r.Tool == tool) || r.Server == whole {
					recs = append(recs, *r)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if asJSON {
				return e.writeJSON(recs)
			}
			for _, r := range recs {
				say(e.stdout, "%s\n", historyLine(&r))
			}
			return nil
		},
	}
	pf.register(cmd.Flags(), e)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func historyLine(r *pin.Record) string {
	target := r.Server
	if r.Tool != "" {
		target += "/" + r.Tool
	}
	if r.Version != "" {
		target += "@" + r.Version
	}
	if r.KeyID != "" {
		target = "key " + r.KeyID
	}
	parts := []string{fmt.Sprintf("#%d", r.Index), r.Time.Format(time.RFC3339), r.Type}
	if r.Kind != "" {
		parts = append(parts, r.Kind)
	}
	parts = append(parts, target)
	if r.Digest != "" {
		parts = append(parts, r.Digest)
	}
	if r.Replaced != "" {
		parts = append(parts, "replacing "+r.Replaced)
	}
	if r.By != "" {
		parts = append(parts, "by "+r.By)
	}
	if r.Type != pin.RecordApprove && r.Type != pin.RecordReapprove && r.Message != "" {
		parts = append(parts, "- "+r.Message)
	}
	return strings.Join(parts, " ")
}
