package main

import (
	"fmt"
	"os"

	"github.com/etdi-dev/etdi/internal/atomicfile"
	"github.com/etdi-dev/etdi/keys"
	"github.com/spf13/cobra"
)

func (e *env) keyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "key",
		Short: "Create and inspect provider keys",
	}
	cmd.AddCommand(e.keyGenerateCmd(), e.keyIDCmd())
	return cmd
}

func (e *env) keyGenerateCmd() *cobra.Command {
	var out, alg string
	cmd := &cobra.Command{
		Use:   "generate --out PREFIX",
		Short: "Generate a provider key pair: PREFIX.key (encrypted, 0600) and PREFIX.pub",
		Long: `Generate a provider key pair.

PREFIX.key is the private key, encrypted with a password (scrypt + NaCl
secretbox, the cosign key file format) and created with mode 0600.
PREFIX.pub is the public key (PEM, PKIX) to give to clients, who add it to
their trust policy with 'etdi trust add'. Existing files are never
overwritten.

The password comes from ETDI_PASSWORD, or from a prompt when standard input
is a terminal. Algorithms: ed25519 (default), ecdsa-p256, ecdsa-p384,
rsa-pss-3072, rsa-pss-4096.`,
		Example: `  ETDI_PASSWORD=... etdi key generate --out acme
  etdi key generate --out acme --algorithm ecdsa-p256`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("--out PREFIX is required")
			}
			priv, err := keys.Generate(alg)
			if err != nil {
				return &usageError{err}
			}
			keyPath, pubPath := out+".key", out+".pub"
			for _, p := range []string{keyPath, pubPath} {
				if _, err := os.Lstat(p); err == nil {
					return fmt.Errorf("%s already exists; not overwriting it", p)
				}
			}
			pw, err := e.password(true)
			if err != nil {
				return err
			}
			privPEM, err := keys.EncryptPrivateKey(priv, pw)
			if err != nil {
				return err
			}
			pubPEM, err := keys.MarshalPublicKey(priv.Public())
			if err != nil {
				return err
			}
			if err := atomicfile.Create(keyPath, privPEM, 0o600); err != nil {
				return err
			}
			if err := atomicfile.Create(pubPath, pubPEM, 0o644); err != nil {
				os.Remove(keyPath)
				return err
			}
			id, _ := keys.ID(priv.Public())
			fmt.Fprintf(e.stdout, "wrote %s (private, encrypted, 0600) and %s (public)\nkey id: %s\nalgorithm: %s\n",
				keyPath, pubPath, id, keys.Algorithm(priv.Public()))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "path prefix of the key files (required)")
	cmd.Flags().StringVar(&alg, "algorithm", keys.Ed25519, "ed25519, ecdsa-p256, ecdsa-p384, rsa-pss-3072 or rsa-pss-4096")
	return cmd
}

func (e *env) keyIDCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "id PUBLIC_KEY_FILE",
		Short: "Print the key id and algorithm of a public key",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pub, err := keys.ReadPublicKeyFile(args[0])
			if err != nil {
				return err
			}
			id, err := keys.ID(pub)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s %s\n", id, keys.Algorithm(pub))
			return nil
		},
	}
}
