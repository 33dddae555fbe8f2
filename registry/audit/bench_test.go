package audit_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/registry/audit"
)

// BenchmarkAudit1000 audits a registry of 1,000 signed entries, each with
// a bundle of its own hosted on loopback and every tool approved in a pin
// database: the real registry on PostgreSQL, pages of 100. "listing" is
// the walk of the listing alone (what the registry costs); the others
// judge every entry with that many entries at a time, from the loopback
// host or (latency=20ms) from one answering each bundle 20 ms late, as a
// host on the network does. Building the
// registry (1,000 signatures, approvals and publications) is not timed.
//
//	go test ./registry/audit -run '^$' -bench Audit1000 -benchtime 5x
func BenchmarkAudit1000(b *testing.B) {
	const n = 1000
	w := newWorld(b)
	db := filepath.Join(b.TempDir(), "pins.db")
	docs := make([][]byte, 0, n)
	start := time.Now()
	for i := range n {
		name := w.Name("acme", fmt.Sprintf("s%04d", i))
		pkg := fmt.Sprintf("@acme/s%04d", i)
		bundle := w.NPMBundle(name, pkg, "1.0.0", "get_weather", "get_forecast")
		path := fmt.Sprintf("/%s/s%04d.etdi.json", w.Suffix, i)
		w.Files.Put(path, bundle)
		docs = append(docs, w.ServerJSON(name, "1.0.0", pkg, "1.0.0", path, bundle))
		w.Approve(db, bundle)
	}
	ctx := context.Background()
	if err := w.reg.PublishMany(ctx, docs, 4); err != nil {
		b.Fatal(err)
	}
	b.Logf("built a registry of %d entries in %s", n, time.Since(start).Round(time.Millisecond))
	lo := registry.ListOptions{Search: w.Suffix, Limit: registry.MaxPageSize}

	b.Run("listing", func(b *testing.B) {
		for b.Loop() {
			count := 0
			if err := w.client.Walk(ctx, lo, func(registry.Entry) error { count++; return nil }); err != nil || count != n {
				b.Fatalf("walked %d entries: %v", count, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1e6, "ms/entry")
	})
	judgeAll := func(b *testing.B, c int) {
		a, err := audit.New(audit.Options{Trust: w.Policy, Pins: db})
		if err != nil {
			b.Fatal(err)
		}
		defer a.Close()
		for b.Loop() {
			sum, err := a.Audit(ctx, w.client, lo, c, func(audit.Verdict) error { return nil })
			if err != nil || sum.Entries != n || sum.Approved != n {
				b.Fatalf("summary %+v: %v", sum, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1e6, "ms/entry")
	}
	for _, c := range []int{1, 8} {
		b.Run(fmt.Sprintf("concurrency=%d", c), func(b *testing.B) { judgeAll(b, c) })
	}
	// Bundle hosts on the network: each bundle answered 20 ms late.
	files := w.Files
	for _, c := range []int{1, 8} {
		b.Run(fmt.Sprintf("latency=20ms/concurrency=%d", c), func(b *testing.B) {
			files.Handler = func(rw http.ResponseWriter, r *http.Request) {
				time.Sleep(20 * time.Millisecond)
				body, _ := files.Get(r.URL.Path)
				rw.Write(body)
			}
			defer func() { files.Handler = nil }()
			judgeAll(b, c)
		})
	}
}
