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

// sequenceAfter is the sequence sign uses by default with --previous: the
// issue time in Unix seconds, or one more than the previous release's
// when that is higher.
func sequenceAfter(prev *etdi.Statement, issued time.Time) uint64 {
	return max(uint64(max(issued.Unix(), 0)), prev.Sequence+1)
}

// guard compares the release with the previous one, prints the comparison
// tool by tool, and returns an error when the release is refused: exit 11
// when clients would see a rug pull or downgrade (a tool changed under
// its version, a lower version, a sequence that does not increase), 1
// when it only drops a tool not named with --remove.
func (f *previousFlags) guard(e *env, prev, next *etdi.Statement) error {
	r, err := etdi.CompareRelease(prev, next, f.remove)
	if err != nil {
		return usagef("--previous %s: %v", previousLabel(f.previous), err)
	}
	say(e.stderr, "etdi: compared with the previous release %s (provider %s, server %s, sequence %d; its signature was not verified)\n",
		previousLabel(f.previous), r.Provider, r.Server, r.PreviousSequence)
	code := exitOK
	for _, t := range r.Tools {
		lead := "  "
		switch {
		case t.Refused && t.Status == etdi.ReleaseRemoved:
			lead = "NOT signed "
			if code == exitOK {
				code = exitError
			}
		case t.Refused:
			lead, code = "NOT signed ", exitRugPull
		case t.Status == etdi.ReleaseBumpTooSmall:
			lead = "warning: "
		}
		say(e.stderr, "%s%s %s -> %s (%s): %s\n", lead, t.Name, orDash(t.PreviousVersion), orDash(t.Version), string(t.Status), t.Message)
		if t.Status == etdi.ReleaseUnchanged {
			continue
		}
		sayChanges(e.stderr, "      ", t.Changes, t.PermissionsAdded, t.PermissionsRemoved)
	}
	if r.SequenceRefused {
		code = exitRugPull
		say(e.stderr, "NOT signed (sequence): %s\n", r.SequenceMessage)
	} else {
		say(e.stderr, "  sequence %d -> %d\n", r.PreviousSequence, r.Sequence)
	}
	if code == exitOK {
		return nil
	}
	say(e.stderr, "etdi: not signed: the release is refused (docs/provider.md#a-release-against-the-previous-one); nothing was written\n")
	return &exitCodeError{code}
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
