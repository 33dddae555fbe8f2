// Command sigstore-kms-etditest is a KMS plugin for etdi's tests, speaking
// sigstore's KMS plugin protocol. It signs with the unencrypted test key in
// the file named by ETDI_TEST_KMS_KEY and logs each request to the file
// named by ETDI_TEST_KMS_LOG, so tests can prove the key never left it.
package main

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/kms/cliplugin/handler"
)

type kms struct {
	*signature.ECDSASignerVerifier
}

func (kms) CreateKey(context.Context, string) (crypto.PublicKey, error) {
	return nil, errors.New("not supported")
}

func (kms) CryptoSigner(context.Context, func(error)) (crypto.Signer, crypto.SignerOpts, error) {
	return nil, nil, errors.New("not supported")
}

func (kms) SupportedAlgorithms() []string { return []string{"ecdsa-p256-sha256"} }
func (kms) DefaultAlgorithm() string      { return "ecdsa-p256-sha256" }

func main() {
	args, err := handler.GetPluginArgs(os.Args)
	if err != nil {
		handler.WriteErrorResponse(os.Stdout, err)
		return
	}
	if log := os.Getenv("ETDI_TEST_KMS_LOG"); log != "" {
		if f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintf(f, "%s %s\n", args.MethodName, args.InitOptions.KeyResourceID)
			f.Close()
		}
	}
	pemBytes, err := os.ReadFile(os.Getenv("ETDI_TEST_KMS_KEY"))
	if err != nil {
		handler.WriteErrorResponse(os.Stdout, err)
		return
	}
	priv, err := cryptoutils.UnmarshalPEMToPrivateKey(pemBytes, nil)
	if err != nil {
		handler.WriteErrorResponse(os.Stdout, err)
		return
	}
	sv, err := signature.LoadECDSASignerVerifier(priv.(*ecdsa.PrivateKey), args.InitOptions.HashFunc)
	if err != nil {
		handler.WriteErrorResponse(os.Stdout, err)
		return
	}
	var stdin io.Reader = os.Stdin
	if _, err := handler.Dispatch(os.Stdout, stdin, args, kms{sv}); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}
