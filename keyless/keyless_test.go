package keyless_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/internal/sigstoretest"
	"github.com/etdi-dev/etdi/keyless"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestIdentityTokenSources(t *testing.T) {
	in := sigstoretest.New(t)
	tok := in.Token(map[string]any{"iss": "https://issuer.example", "sub": "ci@example.com"})
	ctx := context.Background()

	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte(tok+"\n"), 0o600)
	if got, err := keyless.IdentityToken(ctx, file, env(nil)); err != nil || got != tok {
		t.Fatalf("file: %v", err)
	}
	if got, err := keyless.IdentityToken(ctx, "env://TOK", env(map[string]string{"TOK": tok})); err != nil || got != tok {
		t.Fatalf("env: %v", err)
	}
	gh := map[string]string{keyless.GitHubRequestURL: in.TokenURL, keyless.GitHubRequestToken: in.RequestToken}
	got, err := keyless.IdentityToken(ctx, "", env(gh))
	if err != nil || strings.Count(got, ".") != 2 || in.Tokens != 1 {
		t.Fatalf("GitHub Actions: %v (tokens %d)", err, in.Tokens)
	}
	// An explicit token wins over the CI's.
	if got, _ := keyless.IdentityToken(ctx, "env://TOK", env(map[string]string{"TOK": tok, keyless.GitHubRequestURL: in.TokenURL})); got != tok || in.Tokens != 1 {
		t.Fatal("explicit token not used")
	}

	big := filepath.Join(t.TempDir(), "big")
	os.WriteFile(big, []byte(strings.Repeat("a", 70<<10)), 0o600)
	for name, c := range map[string]struct {
		ref  string
		env  map[string]string
		want string
	}{
		"nothing":        {"", nil, "no identity token"},
		"empty env":      {"env://NONE", nil, "NONE"},
		"missing file":   {filepath.Join(t.TempDir(), "none"), nil, "no such file"},
		"oversized file": {big, nil, "larger than"},
		"not a JWT":      {"env://TOK", map[string]string{"TOK": "hello"}, "not a JWT"},
		"no request tok": {"", map[string]string{keyless.GitHubRequestURL: in.TokenURL}, keyless.GitHubRequestToken},
		"wrong req tok":  {"", map[string]string{keyless.GitHubRequestURL: in.TokenURL, keyless.GitHubRequestToken: "wrong-request-token"}, "HTTP 401"},
		"http elsewhere": {"", map[string]string{keyless.GitHubRequestURL: "http://token.example/x", keyless.GitHubRequestToken: "secret-request-token"}, "not https"},
		"not a URL":      {"", map[string]string{keyless.GitHubRequestURL: "::", keyless.GitHubRequestToken: "x"}, "not a URL"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := keyless.IdentityToken(ctx, c.ref, env(c.env))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "request-token") {
				t.Fatalf("error shows the request token: %v", err)
			}
		})
	}
}

// The token request API is the runner's, but its answer is still bounded
// and must hold a token; a redirect is not followed (it would carry the
// request token elsewhere).
func TestGitHubTokenAnswers(t *testing.T) {
	for name, c := range map[string]struct {
		h    http.HandlerFunc
		want string
	}{
		"no value": {func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{}`)) }, "holds no token"},
		"huge":     {func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(strings.Repeat(" ", 80<<10))) }, "too large"},
		"redirect": {func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://elsewhere.example/", http.StatusFound)
		}, "HTTP 302"},
		"audience": {func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("audience") != "sigstore" || r.URL.Query().Get("api-version") != "2.0" {
				http.Error(w, "wrong query", 400)
				return
			}
			w.Write([]byte(`{"value":"a.b.c"}`))
		}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(c.h)
			defer srv.Close()
			tok, err := keyless.IdentityToken(context.Background(), "", env(map[string]string{
				keyless.GitHubRequestURL: srv.URL + "/?api-version=2.0", keyless.GitHubRequestToken: "rt"}))
			if c.want == "" {
				if err != nil || tok != "a.b.c" {
					t.Fatalf("%q %v", tok, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

func TestCheckServiceURL(t *testing.T) {
	for u, ok := range map[string]bool{
		"https://fulcio.sigstore.dev": true, "http://127.0.0.1:8080": true, "http://localhost:1": true,
		"http://fulcio.example": false, "ftp://x": false, "https://user:pw@x": false, "https://x/?q=1": false, "": false,
	} {
		if err := keyless.CheckServiceURL(u); (err == nil) != ok {
			t.Errorf("%q: %v", u, err)
		}
	}
}
