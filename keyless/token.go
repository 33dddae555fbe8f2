package keyless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
)

// GitHub Actions gives a job that may request an OIDC token (workflow
// permission id-token: write) these two variables.
const (
	GitHubRequestURL   = "ACTIONS_ID_TOKEN_REQUEST_URL"
	GitHubRequestToken = "ACTIONS_ID_TOKEN_REQUEST_TOKEN"
)

// maxToken bounds an identity token and the answer that carries it.
const maxToken = 64 << 10

// IdentityToken returns the signer's OIDC identity token. ref is a file
// path, "env://NAME" for an environment variable, or empty: then, inside
// a GitHub Actions job allowed to request one, the job's token for
// audience "sigstore". getenv reads the environment ([os.Getenv] when nil).
func IdentityToken(ctx context.Context, ref string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var tok string
	switch {
	case strings.HasPrefix(ref, "env://"):
		name := strings.TrimPrefix(ref, "env://")
		if tok = getenv(name); tok == "" {
			return "", fmt.Errorf("identity token: environment variable %s is empty or unset", name)
		}
	case ref != "":
		f, err := os.Open(ref)
		if err != nil {
			return "", fmt.Errorf("identity token: %w", err)
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, maxToken+1))
		if err != nil {
			return "", fmt.Errorf("identity token: %w", err)
		}
		if len(data) > maxToken {
			return "", fmt.Errorf("identity token: %s is larger than %d bytes", ref, maxToken)
		}
		tok = string(data)
	case getenv(GitHubRequestURL) != "":
		var err error
		if tok, err = gitHubToken(ctx, getenv(GitHubRequestURL), getenv(GitHubRequestToken)); err != nil {
			return "", err
		}
	default:
		return "", errors.New("no identity token: give --identity-token FILE or env://NAME, or run in a GitHub Actions job with 'permissions: id-token: write'")
	}
	tok = strings.TrimSpace(tok)
	if strings.Count(tok, ".") != 2 || strings.ContainsAny(tok, " \t\r\n") {
		return "", errors.New("identity token is not a JWT")
	}
	return tok, nil
}

// gitHubToken asks GitHub Actions for the job's OIDC token for Sigstore.
// The request URL comes from the runner, but it is still checked: the
// request token is a credential, sent only over https or to loopback.
func gitHubToken(ctx context.Context, requestURL, requestToken string) (string, error) {
	if requestToken == "" {
		return "", fmt.Errorf("%s is set but %s is not", GitHubRequestURL, GitHubRequestToken)
	}
	u, err := url.Parse(requestURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%s is not a URL", GitHubRequestURL)
	}
	if !etdi.SecureURL(u) {
		return "", fmt.Errorf("%s is not https", GitHubRequestURL)
	}
	q := u.Query()
	q.Set("audience", "sigstore")
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+requestToken)
	req.Header.Set("Accept", "application/json")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("requesting the job's OIDC token: %v", redactToken(err, requestToken))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxToken+1))
	if err != nil {
		return "", fmt.Errorf("requesting the job's OIDC token: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("requesting the job's OIDC token: HTTP %d (does the workflow grant 'permissions: id-token: write'?)", resp.StatusCode)
	}
	if len(body) > maxToken {
		return "", errors.New("requesting the job's OIDC token: answer too large")
	}
	var ans struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(body, &ans); err != nil || ans.Value == "" {
		return "", errors.New("requesting the job's OIDC token: the answer holds no token")
	}
	return ans.Value, nil
}

// redactToken keeps a credential out of an error message.
func redactToken(err error, token string) error {
	if token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "[token]"))
}
