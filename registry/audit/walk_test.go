package audit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/registry/audit"
)

// An audit walks every page of the listing and hands the verdicts over in
// the registry's order whatever the concurrency; the summary counts them
// and its exit code is the worst.
func TestAuditWalksEveryPageInOrder(t *testing.T) {
	w := newWorld(t)
	db := filepath.Join(t.TempDir(), "pins.db")
	for i := range 5 {
		name := w.Name("acme", fmt.Sprintf("s%d", i))
		b := w.NPMBundle(name, "@acme/s"+fmt.Sprint(i), "1.0.0")
		path := fmt.Sprintf("/%s/s%d.json", w.Suffix, i)
		w.Files.Put(path, b)
		w.publish(w.ServerJSON(name, "1.0.0", "@acme/s"+fmt.Sprint(i), "1.0.0", path, b))
		if i != 3 {
			w.Approve(db, b)
		}
	}
	w.publish(w.ServerJSON(w.Name("acme", "unsigned"), "1.0.0", "@acme/u", "1.0.0", "", nil))
	ctx := context.Background()
	lo := registry.ListOptions{Search: w.Suffix, Limit: 2}
	var listed []string
	if err := w.client.Walk(ctx, lo, func(e registry.Entry) error {
		listed = append(listed, e.Server.Name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 6 {
		t.Fatalf("listed %v", listed)
	}
	a, err := audit.New(audit.Options{Trust: w.Policy, Pins: db})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, n := range []int{1, 3, audit.MaxConcurrency} {
		var got []string
		sum, err := a.Audit(ctx, w.client, lo, n, func(v audit.Verdict) error {
			got = append(got, v.Name)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, listed) {
			t.Fatalf("concurrency %d: verdicts for %v, listed %v", n, got, listed)
		}
		if sum.Entries != 6 || sum.Approved != 4 || sum.ApprovalRequired != 1 || sum.Blocked != 1 || sum.ExitCode() != finding.ExitSignature {
			t.Fatalf("summary %+v exit %d", sum, sum.ExitCode())
		}
	}
	if _, err := a.Audit(ctx, w.client, lo, audit.MaxConcurrency+1, func(audit.Verdict) error { return nil }); err == nil {
		t.Fatal("a concurrency above the bound was accepted")
	}

	// fn's error stops the walk and is returned.
	stop := errors.New("enough")
	n := 0
	if _, err := a.Audit(ctx, w.client, lo, 2, func(audit.Verdict) error {
		n++
		return stop
	}); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("after fn failed: %v, %d calls", err, n)
	}
}

// A bundle host that never answers costs an entry its timeout, not the
// audit: the entry is blocked, the others are judged.
func TestBundleHostThatHangs(t *testing.T) {
	w := newWorld(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hang := &hangingHost{release: release}
	w.Files.Handler = hang.ServeHTTP
	name, _ := w.genuine()
	e := w.entry(name, "1.0.0")
	v := judge(t, e, audit.Options{Trust: w.Policy, Timeout: 200 * time.Millisecond})
	want(t, v, audit.Blocked, finding.ExitSignature, finding.BundleInvalid)
	if !strings.Contains(v.Findings[0].Message, "deadline") {
		t.Fatalf("finding %+v", v.Findings[0])
	}

	// An audit cancelled by its caller judges nothing more: the entry is
	// an error, not a finding about the publisher.
	ctx, cancel := context.WithCancel(context.Background())
	hang.onRequest = cancel
	v = audit.Judge(ctx, e, audit.Options{Trust: w.Policy})
	if v.Status != audit.Error || v.ExitCode != audit.ExitError || len(v.Findings) != 0 {
		t.Fatalf("cancelled: %+v", v)
	}
}

type hangingHost struct {
	release   chan struct{}
	onRequest func()
}

func (h *hangingHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.onRequest != nil {
		h.onRequest()
	}
	select {
	case <-h.release:
	case <-r.Context().Done():
	}
}

// A bundle host that redirects to plain http elsewhere is refused, as it
// would be without an auditor's client.
func TestBundleRedirectToPlainHTTP(t *testing.T) {
	w := newWorld(t)
	w.Files.Handler = func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, "http://bundles.example.com/weather.etdi.json", http.StatusFound)
	}
	name, _ := w.genuine()
	v := judge(t, w.entry(name, "1.0.0"), audit.Options{Trust: w.Policy})
	want(t, v, audit.Blocked, finding.ExitSignature, finding.BundleInvalid)
	if !strings.Contains(v.Findings[0].Message, "not https") {
		t.Fatalf("finding %+v", v.Findings[0])
	}
}
