package pin

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/etcdtest"
)

// BenchmarkEtcdCheck100kPins is etdi check of a 100-tool server against
// an etcd store of 100,000 pins, on a machine whose snapshot is current:
// open the store (one round trip to etcd), compare, close. It also
// reports how long a machine without a snapshot takes to read the store.
func BenchmarkEtcdCheck100kPins(b *testing.B) {
	c := etcdtest.Start(b, etcdtest.Options{})
	loc := c.URL("etdi/bench")
	fillPins(b, openOn(b, loc, "filler", "", Options{Etcd: EtcdOptions{Timeout: time.Minute}}), 100000)
	snap := b.TempDir()
	t0 := time.Now()
	first := openOn(b, loc, "checker", snap, Options{})
	firstOpen := time.Since(t0)
	o := &Observation{Server: "acme:s007", Provider: "acme", Name: "acme:s007"}
	ps, err := first.List()
	if err != nil || len(ps) != 100000 {
		b.Fatal(len(ps), err)
	}
	tools := observed(b, "tool", 1)
	for _, p := range ps {
		if p.Server == o.Server {
			t := tools[0]
			t.Name, t.Version, t.Signer = p.Tool, p.Version, p.Signer
			o.Tools = append(o.Tools, t)
		}
	}
	first.Close()
	opts := Options{ReadOnly: true, Etcd: EtcdOptions{SnapshotDir: snap, Machine: "checker"}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := Open(loc, opts)
		if err != nil {
			b.Fatal(err)
		}
		c, _, err := s.Judge(o)
		if err != nil || len(c.Findings) != 0 || len(c.Tools) != 100 {
			b.Fatal(err, c.Findings)
		}
		s.Close()
	}
	b.ReportMetric(firstOpen.Seconds(), "first-open-s")
}

// BenchmarkEtcdApprovals approves one new tool per op from 8 machines at
// once, each approval one etcd transaction (pin, record, tree hashes,
// indexes) that conflicts with every other.
func BenchmarkEtcdApprovals(b *testing.B) {
	c := etcdtest.Start(b, etcdtest.Options{})
	loc := c.URL("etdi/approvals")
	openOn(b, loc, "init", "", Options{})
	const machines = 8
	stores := make([]*Store, machines)
	for m := range stores {
		stores[m] = openOn(b, loc, fmt.Sprintf("m%d", m), "", Options{Etcd: EtcdOptions{Timeout: 10 * time.Second}})
	}
	var next atomic.Int64
	b.ResetTimer()
	t0 := time.Now()
	var wg sync.WaitGroup
	for m := range machines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				o := unsignedObs(b, fmt.Sprintf("srv-%d", i), fmt.Sprintf("tool_%d", i))
				if got, _, err := stores[m].Approve(o, ApproveOptions{By: "bench"}); err != nil || len(got) != 1 {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "approvals/s")
}

// BenchmarkEtcdRevocation50Gates measures how long a revocation takes to
// reach 50 running gates, each a machine of its own with its own
// connection and snapshot: from the revocation's commit until the gate
// has seen the history size change (its Stamper), brought its snapshot
// up to date and found the tool revoked, as it does before the next call.
func BenchmarkEtcdRevocation50Gates(b *testing.B) {
	c := etcdtest.Start(b, etcdtest.Options{})
	loc := c.URL("etdi/gates")
	admin := openOn(b, loc, "admin", "", Options{})
	const gates = 50
	type gate struct {
		st   Stamper
		opts Options
	}
	gs := make([]gate, gates)
	for i := range gs {
		name := fmt.Sprintf("gate%02d", i)
		gs[i].opts = Options{ReadOnly: true, Etcd: EtcdOptions{SnapshotDir: b.TempDir(), Machine: name}}
		openOn(b, loc, name, gs[i].opts.Etcd.SnapshotDir, Options{}).Close()
		gs[i].st = NewStamper(loc, gs[i].opts)
		defer gs[i].st.Close()
	}
	var lat []time.Duration
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		b.StopTimer()
		o := unsignedObs(b, fmt.Sprintf("srv-%d", n), fmt.Sprintf("tool_%d", n))
		if _, _, err := admin.Approve(o, ApproveOptions{By: "admin"}); err != nil {
			b.Fatal(err)
		}
		stamps := make([]uint64, gates)
		for i := range gs {
			for stamps[i] = 0; ; time.Sleep(time.Millisecond) { // every gate has seen the approval
				if v, _ := gs[i].st.Read(); v == uint64(admin.remote.head()) {
					stamps[i] = v
					break
				}
			}
		}
		b.StartTimer()
		var mu sync.Mutex
		var wg sync.WaitGroup
		committed := time.Now() // set again when the revocation returns
		start, revoked := make(chan struct{}), make(chan struct{})
		for i := range gs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for {
					if v, _ := gs[i].st.Read(); v != stamps[i] {
						break
					}
					time.Sleep(time.Millisecond)
				}
				s, err := Open(loc, gs[i].opts)
				if err != nil {
					b.Error(err)
					return
				}
				still, err := s.StillApproved(o)
				s.Close()
				if err != nil || still[StillApprovedKey("", o.Tools[0].Name)] != finding.Revoked {
					b.Error("not revoked", still, err)
					return
				}
				at := time.Now()
				<-revoked
				mu.Lock()
				lat = append(lat, max(0, at.Sub(committed)))
				mu.Unlock()
			}()
		}
		close(start)
		if err := admin.Revoke(Revocation{Server: o.Server, Tool: o.Tools[0].Name, By: "admin"}); err != nil {
			b.Fatal(err)
		}
		committed = time.Now()
		close(revoked)
		wg.Wait()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Milliseconds()), "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Milliseconds()), "max-ms")
}
