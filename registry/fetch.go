package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/etdi-dev/etdi"
)

// FetchBundle downloads the bundle m names and returns its bytes, refusing
// one larger than [etdi.MaxManifestSize] or whose SHA-256 is not m.Digest:
// the registry entry, not the server hosting the file, says which bundle
// it is. hc nil means a client with [RequestTimeout] that refuses
// redirects away from https.
func FetchBundle(ctx context.Context, hc *http.Client, m EtdiMeta) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if hc == nil {
		hc = &http.Client{Timeout: RequestTimeout, CheckRedirect: sameSchemeRedirects}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.Bundle, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the bundle: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the bundle %s: %s", m.Bundle, resp.Status)
	}
	b, err := readBounded(resp.Body, etdi.MaxManifestSize)
	if err != nil {
		return nil, fmt.Errorf("fetching the bundle %s: %w", m.Bundle, err)
	}
	if got := Digest(b); got != m.Digest {
		return nil, fmt.Errorf("the bundle at %s has digest %s, the entry names %s", m.Bundle, got, m.Digest)
	}
	return b, nil
}

// Digest is "sha256:" and the hex SHA-256 of b, as [EtdiMeta.Digest]
// writes it.
func Digest(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}
