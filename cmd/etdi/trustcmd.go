package main

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/trust"
	"github.com/spf13/cobra"
)

func (e *env) trustCmd() *cobra.Command {
	var policyPath string
	cmd := &cobra.Command{
		Use:   "trust",
		Short: "Manage the trust policy: trusted providers, their keys, the unsigned rule",
		Long: `Manage the trust policy file (SPEC.md §9) without editing JSON by hand.

A key is trusted only for the provider it is added under. Each key may have
a validity window (--not-before, --not-after) so keys can be rotated: add
the new key, then give the old one a --not-after. The unsigned rule says
what happens to tools no bundle signs: block (default), warn or allow.`,
	}
	cmd.PersistentFlags().StringVar(&policyPath, "policy", defaultPath("trust.json"), "trust policy file")
	cmd.AddCommand(e.trustAddCmd(&policyPath), e.trustListCmd(&policyPath), e.trustRemoveCmd(&policyPath), e.trustUnsignedCmd(&policyPath))
	return cmd
}

// loadOrNewPolicy loads the policy, or returns a new one if the file does
// not exist yet.
func loadOrNewPolicy(path string) (*trust.Policy, error) {
	p, err := trust.Load(path)
	if errors.Is(err, fs.ErrNotExist) {
		return trust.New(), nil
	}
	return p, err
}

func (e *env) trustAddCmd(policyPath *string) *cobra.Command {
	var provider, notBefore, notAfter string
	var keyFiles []string
	cmd := &cobra.Command{
		Use:   "add --provider ID --key FILE [--key FILE ...]",
		Short: "Trust public keys for a provider (creates the policy file if needed)",
		Example: `  etdi trust add --policy trust.json --provider acme --key acme.pub
  etdi trust add --policy trust.json --provider acme --key old.pub --not-after 2027-01-01T00:00:00Z`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if provider == "" || len(keyFiles) == 0 {
				return usagef("--provider and at least one --key are required")
			}
			nb, err := parseTimeFlag("not-before", notBefore)
			if err != nil {
				return err
			}
			na, err := parseTimeFlag("not-after", notAfter)
			if err != nil {
				return err
			}
			p, err := loadOrNewPolicy(*policyPath)
			if err != nil {
				return err
			}
			var msgs []string
			for _, kf := range keyFiles {
				pub, err := keys.ReadPublicKeyFile(kf)
				if err != nil {
					return err
				}
				k := trust.Key{PublicKey: pub, NotBefore: nb, NotAfter: na}
				updated, err := p.AddKey(provider, k)
				if err != nil {
					return err
				}
				id, _ := keys.ID(pub)
				verb := "trusted"
				if updated {
					verb = "updated"
				}
				msgs = append(msgs, fmt.Sprintf("%s key %s (%s) for provider %q", verb, id, keys.Algorithm(pub), provider))
			}
			if err := p.Save(*policyPath); err != nil {
				return err
			}
			for _, m := range msgs {
				fmt.Fprintln(e.stdout, m)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&provider, "provider", "", "provider id (required)")
	f.StringArrayVar(&keyFiles, "key", nil, "public key file (PEM); repeatable")
	f.StringVar(&notBefore, "not-before", "", "key is valid from this RFC 3339 time")
	f.StringVar(&notAfter, "not-after", "", "key is valid until this RFC 3339 time")
	return cmd
}

type trustListKey struct {
	ID        string `json:"id"`
	Algorithm string `json:"algorithm"`
	NotBefore string `json:"notBefore,omitempty"`
	NotAfter  string `json:"notAfter,omitempty"`
}

type trustListProvider struct {
	ID   string         `json:"id"`
	Keys []trustListKey `json:"keys"`
}

type trustList struct {
	Policy    string              `json:"policy"`
	Unsigned  trust.UnsignedRule  `json:"unsigned"`
	Providers []trustListProvider `json:"providers"`
}

func (e *env) trustListCmd(policyPath *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List trusted providers and keys",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadPolicy(*policyPath)
			if err != nil {
				return err
			}
			l := trustList{Policy: *policyPath, Unsigned: p.Unsigned, Providers: []trustListProvider{}}
			for _, prov := range p.Providers {
				lp := trustListProvider{ID: prov.ID}
				for _, k := range prov.Keys {
					lk := trustListKey{ID: k.ID, Algorithm: keys.Algorithm(k.PublicKey)}
					if !k.NotBefore.IsZero() {
						lk.NotBefore = k.NotBefore.UTC().Format(time.RFC3339)
					}
					if !k.NotAfter.IsZero() {
						lk.NotAfter = k.NotAfter.UTC().Format(time.RFC3339)
					}
					lp.Keys = append(lp.Keys, lk)
				}
				l.Providers = append(l.Providers, lp)
			}
			if asJSON {
				return e.writeJSON(l)
			}
			fmt.Fprintf(e.stdout, "policy %s: unsigned tools: %s\n", l.Policy, l.Unsigned)
			for _, lp := range l.Providers {
				fmt.Fprintf(e.stdout, "provider %s\n", lp.ID)
				for _, k := range lp.Keys {
					window := ""
					if k.NotBefore != "" || k.NotAfter != "" {
						window = fmt.Sprintf("  valid %s .. %s", orDash(k.NotBefore), orDash(k.NotAfter))
					}
					fmt.Fprintf(e.stdout, "  %s  %s%s\n", k.ID, k.Algorithm, window)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (e *env) trustRemoveCmd(policyPath *string) *cobra.Command {
	var provider, keyID string
	cmd := &cobra.Command{
		Use:   "remove --provider ID [--key KEY_ID]",
		Short: "Stop trusting a provider, or one of its keys",
		Example: `  etdi trust remove --policy trust.json --provider acme --key sha256:1a2b3c4d
  etdi trust remove --policy trust.json --provider acme`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if provider == "" {
				return usagef("--provider is required")
			}
			p, err := loadPolicy(*policyPath)
			if err != nil {
				return err
			}
			if err := p.Remove(provider, keyID); err != nil {
				return err
			}
			if err := p.Save(*policyPath); err != nil {
				return err
			}
			if keyID != "" {
				fmt.Fprintf(e.stdout, "removed key %s of provider %q\n", keyID, provider)
			} else {
				fmt.Fprintf(e.stdout, "removed provider %q\n", provider)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "provider id (required)")
	cmd.Flags().StringVar(&keyID, "key", "", "key id (or a prefix of at least 8 hex digits); omit to remove the provider")
	return cmd
}

func (e *env) trustUnsignedCmd(policyPath *string) *cobra.Command {
	return &cobra.Command{
		Use:   "unsigned allow|warn|block",
		Short: "Set what happens to tools that no bundle signs",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rule, err := trust.ParseUnsignedRule(args[0])
			if err != nil {
				return &usageError{err}
			}
			p, err := loadOrNewPolicy(*policyPath)
			if err != nil {
				return err
			}
			p.Unsigned = rule
			if err := p.Save(*policyPath); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "unsigned tools: %s\n", rule)
			return nil
		},
	}
}
