package guard

import (
	"context"
	"io"
	"os"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/internal/mcpclient/hostile"
)

// The test binary serves as a hostile (here: large) stdio server when
// ETDI_HOSTILE is set.
func init() {
	if mode := os.Getenv(hostile.Env); mode != "" {
		hostile.Stdio(mode)
		os.Exit(0)
	}
}

// BenchmarkFetchSave saves the largest listing a fetch accepts, 20,000
// tools of 3 KB in 4 pages (58 MiB): page by page (FetchSave, what etdi
// fetch does) and whole (Fetch, then Saver). It reports the bytes
// allocated and the peak of the live heap, sampled while it runs.
func BenchmarkFetchSave(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	s := Launch{Command: []string{exe}, Env: append(os.Environ(), hostile.Env+"="+hostile.ManyBigTools)}
	for _, tc := range []struct {
		name string
		save func() error
	}{
		{"paged", func() error {
			_, _, err := FetchSave(context.Background(), s, FetchOptions{}, nil, io.Discard)
			return err
		}},
		{"whole", func() error {
			l, err := Fetch(context.Background(), s, FetchOptions{})
			if err != nil {
				return err
			}
			write, err := l.Saver()
			if err != nil {
				return err
			}
			return write(io.Discard)
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			peak := heapPeak()
			for i := 0; i < b.N; i++ {
				if err := tc.save(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MiB")
		})
	}
}

// heapPeak samples the live heap every few milliseconds until the
// returned function is called, which returns the largest sample.
func heapPeak() func() uint64 {
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var max uint64
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > max {
				max = v
			}
			select {
			case <-stop:
				done <- max
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		return <-done
	}
}
