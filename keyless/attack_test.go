package keyless_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/sigstoretest"
	"github.com/etdi-dev/etdi/keyless"
	"github.com/etdi-dev/etdi/sign"
)

// SPEC.md §16.4: identity tokens are "sent only over https or to a loopback
// address; redirects are not followed". CheckServiceURL checks the Fulcio
// URL given, but sigstore-go's Fulcio client is a default http.Client: it
// follows a 307 and, the host name being the same (Go ignores the port and
// the scheme), sends the Authorization: Bearer <identity token> again to
// wherever the answer points, e.g. from https://fulcio.corp to
// http://fulcio.corp:8080 in clear. A stolen GitHub OIDC token gets a
// certificate for the provider's identity from the real Fulcio.
func TestAttackKeylessFulcioRedirectCarriesToken(t *testing.T) {
	in := sigstoretest.New(t)
	tok := in.Token(sigstoretest.GitHubClaims("acme/weather", "refs/tags/v1.0.0", ".github/workflows/release.yml"))
	var mu sync.Mutex
	var leaked []string
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer sink.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, sink.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()

	data, err := os.ReadFile("../cmd/etdi/demodata/weather.manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	man, err := etdi.ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	_, payload, err := sign.Build(man, sign.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = keyless.Sign(context.Background(), payload, keyless.SignOptions{FulcioURL: redirector.URL, RekorURL: in.URL, IDToken: tok})
	if err == nil {
		t.Fatal("signed through a redirecting Fulcio")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, h := range leaked {
		if strings.Contains(h, tok) {
			t.Fatalf("the identity token followed a redirect to %s (%d requests)", sink.URL, len(leaked))
		}
	}
}
