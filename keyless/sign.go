package keyless

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/strictjson"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"
)

// The public-good Sigstore instance, used unless others are given.
const (
	PublicFulcio = "https://fulcio.sigstore.dev"
	PublicRekor  = "https://rekor.sigstore.dev"
)

// SignOptions say where and as whom to sign.
type SignOptions struct {
	// FulcioURL and RekorURL are the instance's services; empty means
	// the public-good instance. Each must be https, or http to a
	// loopback address.
	FulcioURL, RekorURL string
	// IDToken is the signer's OIDC identity token (audience "sigstore").
	IDToken string
	// TrustedRoot, if set, verifies the bundle before it is returned, so
	// that a provider never publishes one its clients would refuse.
	TrustedRoot root.TrustedMaterial
	// Timeout bounds each request; zero means 30 seconds.
	Timeout time.Duration
}

// Sign signs payload (an etdi statement) keylessly: a fresh key pair, a
// certificate for the identity token from Fulcio, the DSSE signature over
// the payload, and its entry in Rekor. It returns the Sigstore bundle as
// canonical JSON, verified only when opts.TrustedRoot is set ([IdentityOf]
// reads who it names). The key pair never leaves memory.
func Sign(ctx context.Context, payload []byte, opts SignOptions) ([]byte, error) {
	if opts.IDToken == "" {
		return nil, errors.New("no identity token")
	}
	if _, err := etdi.ParseStatement(payload); err != nil {
		return nil, fmt.Errorf("payload is not an etdi statement: %w", err)
	}
	fulcio, rekor := opts.FulcioURL, opts.RekorURL
	if fulcio == "" {
		fulcio = PublicFulcio
	}
	if rekor == "" {
		rekor = PublicRekor
	}
	for _, u := range []string{fulcio, rekor} {
		if err := CheckServiceURL(u); err != nil {
			return nil, err
		}
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		return nil, err
	}
	bo := sign.BundleOptions{
		Context:                    ctx,
		CertificateProvider:        sign.NewFulcio(&sign.FulcioOptions{BaseURL: fulcio, Timeout: timeout, Retries: 1, Transport: noRedirects{}}),
		CertificateProviderOptions: &sign.CertificateProviderOptions{IDToken: opts.IDToken},
		TransparencyLogs:           []sign.Transparency{sign.NewRekor(&sign.RekorOptions{BaseURL: rekor, Timeout: timeout, Retries: 1})},
		TrustedRoot:                opts.TrustedRoot,
	}
	pb, err := sign.Bundle(&sign.DSSEData{Data: payload, PayloadType: etdi.PayloadType}, kp, bo)
	if err != nil {
		return nil, redactToken(err, opts.IDToken)
	}
	raw, err := protojson.Marshal(pb)
	if err != nil {
		return nil, err
	}
	out, err := strictjson.Canonicalize(raw)
	if err != nil {
		return nil, err
	}
	out = append(out, '\n')
	// What etdi writes, etdi must read.
	if _, err := Parse(out); err != nil {
		return nil, fmt.Errorf("the signed bundle does not parse: %w", err)
	}
	return out, nil
}

// CheckServiceURL accepts https, or http to a loopback address: an
// identity token sent in clear to another host could be replayed.
func CheckServiceURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q is not a service URL", s)
	}
	if etdi.SecureURL(u) {
		return nil
	}
	return fmt.Errorf("%q: Sigstore services are reached over https (http only on a loopback address)", s)
}

// noRedirects refuses redirects: Fulcio's client would follow one and send
// the identity token again, to any port and scheme of the same host.
type noRedirects struct{}

func (noRedirects) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		resp.Body.Close()
		return nil, fmt.Errorf("%s answered with a redirect (HTTP %d), which is not followed", r.URL.Host, resp.StatusCode)
	}
	return resp, nil
}
