package mirror_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/etdi-dev/etdi/internal/registrytest"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/registry/audit"
	"github.com/etdi-dev/etdi/registry/mirror"
)

// BenchmarkListingPage measures one listing page of 30 entries, as a
// host asks it, from the real registry itself (upstream), through the
// mirror with a judge that approves everything (what serving adds
// without judging: the upstream request, filtering, cursors, the
// verdict) and through the mirror judging each entry as etdi registry
// serve does (fetching its bundle from a server on 127.0.0.1, verifying
// it, reading the pin database). Nothing is cached between requests: each
// page is judged anew. docs/benchmarks.md has the figures.
func BenchmarkListingPage(b *testing.B) {
	const entries, limit = 60, 30
	reg := registrytest.Shared(b)
	p := newProvider(b)
	db := filepath.Join(b.TempDir(), "pins.db")
	docs := make([][]byte, 0, entries)
	for i := range entries {
		name := p.Name("bench", fmt.Sprintf("server%03d", i))
		pkg := fmt.Sprintf("@bench%s/server%03d", p.Suffix, i)
		bundle := p.NPMBundle(name, pkg, "1.0.0")
		p.Approve(db, bundle)
		docs = append(docs, nil)
		p.publish(collect{&docs[i]}, name, "1.0.0", pkg, "1.0.0", fmt.Sprintf("/server%03d.etdi.json", i), bundle)
	}
	if err := reg.PublishMany(context.Background(), docs, 8); err != nil {
		b.Fatal(err)
	}
	up, err := registry.NewClient(reg.URL)
	if err != nil {
		b.Fatal(err)
	}
	a, err := audit.New(audit.Options{Trust: p.Policy, Pins: db})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	all := func(context.Context, registry.Entry) mirror.Verdict {
		return mirror.Verdict{Approved: true, Status: "approved"}
	}
	query := fmt.Sprintf("/v0.1/servers?search=bench%s&limit=%d", p.Suffix, limit)
	page := func(b *testing.B, base string) {
		resp, err := http.Get(base + query)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n < 1000 {
			b.Fatalf("%d, %d bytes", resp.StatusCode, n)
		}
	}
	for _, c := range []struct {
		name string
		base func(b *testing.B) string
	}{
		{"upstream", func(*testing.B) string { return reg.URL }},
		{"mirror-unjudged", func(b *testing.B) string { return httptest.NewServer(mirror.New(up, all)).URL }},
		{"mirror-judged", func(b *testing.B) string { return httptest.NewServer(mirror.New(up, mirror.Approved(a))).URL }},
	} {
		b.Run(c.name, func(b *testing.B) {
			base := c.base(b)
			page(b, base) // the first page warms connections
			b.ResetTimer()
			for b.Loop() {
				page(b, base)
			}
		})
	}
}

// collect keeps a server.json instead of publishing it, so that the
// benchmark publishes them all at once.
type collect struct{ doc *[]byte }

func (c collect) Publish(_ context.Context, doc []byte) error {
	*c.doc = doc
	return nil
}
