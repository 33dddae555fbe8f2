package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/redact"
	"github.com/etdi-dev/etdi/release"
	"github.com/etdi-dev/etdi/sign"
	"github.com/etdi-dev/etdi/verify"
	"github.com/spf13/pflag"
)

// Bounds of the download of a previous release's bundle (docs/provider.md#a-release-against-the-previous-one).
const (
	previousTimeout      = 30 * time.Second
	previousMaxRedirects = 10
	previousMaxHeader    = 64 << 10
)

// previousFlags are sign's guard against a release that the clients that
// pinned the previous one would refuse (docs/provider.md#a-release-against-the-previous-one).
type previousFlags struct {
	previous string
	remove   []string
}

func (f *previousFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.previous, "previous", "", "the previous release's bundle (a file, or an https URL): refuse a release its clients would see as a rug pull or downgrade")
	fl.StringArrayVar(&f.remove, "remove", nil, "with --previous: a tool of the previous release left out on purpose (repeatable)")
}

// load reads and parses the statement of the previous release's bundle,
// or returns nil without --previous. The bundle is parsed strictly (§6,
// §5); its signature is not verified.
func (f *previousFlags) load(e *env) (*etdi.Statement, error) {
	if f.previous == "" {
		if len(f.remove) > 0 {
			return nil, usagef("--remove needs --previous")
		}
		return nil, nil
	}
	var data []byte
	var err error
	if scheme, _, ok := strings.Cut(f.previous, "://"); ok {
		if scheme = strings.ToLower(scheme); scheme != "https" && scheme != "http" {
			return nil, usagef("--previous %s: want a file or an https URL", redact.URL(f.previous))
		}
		data, err = fetchPrevious(e.ctx, f.previous)
	} else {
		data, err = e.readInput(f.previous)
	}
	if err != nil {
		return nil, err
	}
	label := previousLabel(f.previous)
	b, _, err := verify.ParseBundle(data)
	if err != nil {
		return nil, fmt.Errorf("--previous %s is not an etdi or Sigstore bundle: %w", label, err)
	}
	st, err := etdi.ParseStatement(b.Envelope.Payload)
	if err != nil {
		return nil, fmt.Errorf("--previous %s: the statement is invalid: %w", label, err)
	}
	return st, nil
}

// report prints the comparison of the release with the previous one,
// tool by tool, before anything is signed.
func (f *previousFlags) report(e *env, r *release.Report) {
	say(e.stderr, "etdi: compared with the previous release %s (provider %s, server %s, sequence %d; its signature was not verified)\n",
		previousLabel(f.previous), r.Provider, r.Server, r.PreviousSequence)
	for _, t := range r.Tools {
		lead := "  "
		switch {
		case t.Refused:
			lead = "NOT signed "
		case t.Status == release.StatusBumpTooSmall:
			lead = "warning: "
		}
		say(e.stderr, "%s%s %s -> %s (%s): %s\n", lead, t.Name, orDash(t.PreviousVersion), orDash(t.Version), string(t.Status), t.Message)
		if t.Status == release.StatusUnchanged {
			continue
		}
		sayChanges(e.stderr, "      ", t.Changes, t.PermissionsAdded, t.PermissionsRemoved)
	}
	if r.SequenceRefused {
		say(e.stderr, "NOT signed (sequence): %s\n", r.SequenceMessage)
	} else {
		say(e.stderr, "  sequence %d -> %d\n", r.PreviousSequence, r.Sequence)
	}
}

// refused maps sign's errors about the previous release to the command's:
// a release that cannot be compared is a usage error; a refused one exits
// 11 when clients would see a rug pull or downgrade (a tool changed under
// its version, a lower version, a sequence that does not increase), 1
// when it only drops a tool not named with --remove. Other errors pass.
func (f *previousFlags) refused(e *env, err error) error {
	var pe *sign.PreviousError
	if errors.As(err, &pe) {
		return usagef("--previous %s: %v", previousLabel(f.previous), pe.Err)
	}
	var re *sign.RefusedError
	if !errors.As(err, &re) {
		return err
	}
	say(e.stderr, "etdi: not signed: the release is refused (docs/provider.md#a-release-against-the-previous-one); nothing was written\n")
	if re.RugPull() {
		return &exitCodeError{exitRugPull}
	}
	return &exitCodeError{exitError}
}

// previousLabel names --previous in messages: a URL without its secrets.
func previousLabel(ref string) string {
	if strings.Contains(ref, "://") {
		return redact.URL(ref)
	}
	return ref
}

// checkPreviousURL allows https, and http to a loopback host only; no
// user information.
func checkPreviousURL(u *url.URL) error {
	scheme := strings.ToLower(u.Scheme)
	switch {
	case u.Host == "" || u.Opaque != "":
		return errors.New("no host")
	case u.User != nil:
		return errors.New("user information in the URL is not sent")
	case scheme == "https":
		return nil
	case scheme == "http" && etdi.LoopbackHost(strings.ToLower(u.Hostname())):
		return nil
	case scheme == "http":
		return errors.New("http is accepted only for a loopback host; use https")
	}
	return fmt.Errorf("scheme %q: want https", u.Scheme)
}

// fetchPrevious downloads a previous release's bundle: https (http to a
// loopback host), redirects under the same rule and at most 10, at most
// etdi.MaxManifestSize bytes, within previousTimeout.
func fetchPrevious(ctx context.Context, raw string) ([]byte, error) {
	label := redact.URL(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return nil, usagef("--previous %s: not a URL", label)
	}
	if err := checkPreviousURL(u); err != nil {
		return nil, usagef("--previous %s: %v", label, err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxResponseHeaderBytes = previousMaxHeader
	client := &http.Client{
		Timeout:   previousTimeout,
		Transport: transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= previousMaxRedirects {
				return fmt.Errorf("more than %d redirects", previousMaxRedirects)
			}
			if err := checkPreviousURL(req.URL); err != nil {
				return fmt.Errorf("redirect to %s refused: %v", redact.URL(req.URL.String()), err)
			}
			return nil
		},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, usagef("--previous %s: %v", label, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) { // its text holds the whole URL
			err = ue.Err
		}
		return nil, fmt.Errorf("--previous %s: %v", label, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("--previous %s: HTTP %s", label, resp.Status)
	}
	if resp.ContentLength > etdi.MaxManifestSize {
		return nil, fmt.Errorf("--previous %s: larger than %d bytes", label, etdi.MaxManifestSize)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, etdi.MaxManifestSize+1))
	if err != nil {
		return nil, fmt.Errorf("--previous %s: %v", label, err)
	}
	if len(data) > etdi.MaxManifestSize {
		return nil, fmt.Errorf("--previous %s: larger than %d bytes", label, etdi.MaxManifestSize)
	}
	return data, nil
}
