package registrytest

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkStart starts and stops a registry: initdb and PostgreSQL up to
// accepting connections (pg-ms), then the registry, migrations included,
// up to serving /v0.1/health (registry-ms).
func BenchmarkStart(b *testing.B) {
	bin := need(b)
	var pg, reg time.Duration
	for i := 0; i < b.N; i++ {
		r, err := start(bin, b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		pg += r.pgStart
		reg += r.regStart
		r.Stop()
	}
	b.ReportMetric(float64(pg.Milliseconds())/float64(b.N), "pg-ms")
	b.ReportMetric(float64(reg.Milliseconds())/float64(b.N), "registry-ms")
}

// BenchmarkPublish publishes 1 and 1,000 entries (distinct names, an npm
// package and a remote each) to a fresh registry, one request at a time
// and 8 at a time.
func BenchmarkPublish(b *testing.B) {
	for _, c := range []struct{ n, workers int }{{1, 1}, {1000, 1}, {1000, 8}} {
		b.Run(fmt.Sprintf("entries=%d/workers=%d", c.n, c.workers), func(b *testing.B) {
			bin := need(b)
			docs := make([][]byte, c.n)
			for i := range docs {
				docs[i] = serverJSON(fmt.Sprintf("io.github.bench/server-%04d", i), "1.0.0")
			}
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				r, err := start(bin, b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := r.PublishMany(context.Background(), docs, c.workers); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				r.Stop()
				b.StartTimer()
			}
		})
	}
}
