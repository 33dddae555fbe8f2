package pin

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/testgen"
	"github.com/etdi-dev/etdi/strictjson"
)

// observed returns n realistic signed tools (about 700 bytes each) named
// prefix_00000...
func observed(b testing.TB, prefix string, n int) []Observed {
	out := make([]Observed, n)
	for i := range out {
		def := testgen.Definition(i)
		def["name"] = fmt.Sprintf("%s_%05d", prefix, i)
		raw, _ := json.Marshal(def)
		v, err := strictjson.Parse(raw)
		if err != nil {
			b.Fatal(err)
		}
		c := strictjson.AppendCanonical(nil, v)
		d, _ := etdi.DigestJSON(c)
		out[i] = Observed{Name: def["name"].(string), Version: "1.0.0", Digest: d, Canonical: c,
			Permissions: []etdi.Permission{{Scope: "inventory:read"}}, Signer: keyA}
	}
	return out
}

func benchStore(b *testing.B) *Store {
	s, err := Open(filepath.Join(b.TempDir(), "pins.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkCheck100 compares a 100-tool server with its pins (all match),
// as etdi check does, in one write transaction.
func BenchmarkCheck100(b *testing.B) {
	s := benchStore(b)
	o := &Observation{Server: "acme:inventory", Provider: "acme", Name: "inventory", Sequence: 1, Tools: observed(b, "tool", 100)}
	if _, _, err := s.Approve(o, ApproveOptions{By: "bench"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := s.Check(o, "bench")
		if err != nil || len(c.Findings) != 0 {
			b.Fatal(err, c.Findings)
		}
	}
}

// BenchmarkApprove100 approves 100 new tools of a new server per op, one
// transaction with 100 history records.
func BenchmarkApprove100(b *testing.B) {
	s := benchStore(b)
	tools := observed(b, "tool", 100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ts := slices.Clone(tools)
		for j := range ts {
			ts[j].Name = fmt.Sprintf("s%d_%s", i, ts[j].Name)
		}
		o := &Observation{Server: fmt.Sprintf("acme:s%d", i), Provider: "acme", Sequence: 1, Tools: ts}
		b.StartTimer()
		a, _, err := s.Approve(o, ApproveOptions{By: "bench"})
		if err != nil || len(a) != 100 {
			b.Fatal(err, len(a))
		}
	}
}

// BenchmarkHistoryAppend measures records appended per second, one record
// per transaction (each a durable commit) and 1,000 per transaction.
func BenchmarkHistoryAppend(b *testing.B) {
	for _, batch := range []int{1, 1000} {
		b.Run(fmt.Sprintf("perTx=%d", batch), func(b *testing.B) {
			s := benchStore(b)
			rec := Record{Type: RecordFinding, Server: "acme:weather", Tool: "get_weather", Version: "1.0.0",
				Digest: "sha256:" + fmt.Sprintf("%064d", 0), Kind: "rug_pull", Severity: "error",
				Message: "tool acme:weather/get_weather@1.0.0: definition changed since approval without a new version (description)", By: "bench"}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i += batch {
				err := s.update(func(tx *kvTx) error {
					for j := 0; j < batch && i+j < b.N; j++ {
						if _, err := appendRecord(tx, rec); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
		})
	}
}

// bigStore builds, once per benchmark, a database with n pins (and one
// approval record each), in transactions of 5,000.
func bigStore(b *testing.B, n int) *Store {
	s := benchStore(b)
	fillPins(b, s, n)
	return s
}

// fillPins approves n pins of 1,000 servers in s, 5,000 per transaction.
func fillPins(b testing.TB, s *Store, n int) {
	tools := observed(b, "tool", 1)
	now := time.Now().UTC()
	for start := 0; start < n; start += 5000 {
		err := s.update(func(tx *kvTx) error {
			for i := start; i < start+5000 && i < n; i++ {
				server := fmt.Sprintf("acme:s%03d", i%1000)
				t := tools[0]
				p := Pin{Server: server, Tool: fmt.Sprintf("tool_%06d", i), Version: "1.0.0", Digest: t.Digest.String(),
					Signer: keyA, Provider: "acme", Permissions: t.Permissions, Definition: t.Canonical, ApprovedBy: "bench", ApprovedAt: now}
				var err error
				if p.Binding, err = appendBound(tx, Record{Type: RecordApprove, Time: now, Server: server, Tool: p.Tool,
					Version: p.Version, Digest: p.Digest, Signer: &p.Signer, Kind: "new_tool", By: "bench", Permissions: p.Permissions}); err != nil {
					return err
				}
				if err := putPin(tx, &ServerInfo{Key: server, Provider: "acme", Name: server}, &p); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLookup100kPins measures single pin lookups in a database of
// 100,000 pins and reports the 99th percentile.
func BenchmarkLookup100kPins(b *testing.B) {
	s := bigStore(b, 100000)
	lat := make([]time.Duration, 0, b.N)
	r := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := r.IntN(100000)
		t0 := time.Now()
		p, err := s.Get(fmt.Sprintf("acme:s%03d", k%1000), fmt.Sprintf("tool_%06d", k))
		lat = append(lat, time.Since(t0))
		if err != nil || p == nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkAuditVerify100k recomputes and checks a 100,000-record history.
func BenchmarkAuditVerify100k(b *testing.B) {
	s := bigStore(b, 100000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t, err := s.VerifyLog()
		if err != nil || t.Size != 100000 {
			b.Fatal(err)
		}
	}
}

// BenchmarkDatabaseSize reports the file size for 10,000 pins with their
// approval records.
func BenchmarkDatabaseSize(b *testing.B) {
	for i := 0; i < b.N; i++ {
		s := bigStore(b, 10000)
		fi, err := os.Stat(s.Path())
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(fi.Size())/(1<<20), "MB/10k-pins")
	}
}

// BenchmarkCheckIn100kHistory checks one server's 100 tools in a database
// whose history holds 100,000 records: the cost of replaying the history
// on every check (docs/storage.md#pin-database).
func BenchmarkCheckIn100kHistory(b *testing.B) {
	s := bigStore(b, 100000)
	o := &Observation{Server: "acme:s007", Provider: "acme", Name: "acme:s007"}
	ps, err := s.List()
	if err != nil {
		b.Fatal(err)
	}
	tools := observed(b, "tool", 1)
	for _, p := range ps {
		if p.Server == o.Server {
			t := tools[0]
			t.Name, t.Version, t.Signer = p.Tool, p.Version, p.Signer
			o.Tools = append(o.Tools, t)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := s.Compare(o)
		if err != nil || len(c.Findings) != 0 || len(c.Tools) != 100 {
			b.Fatal(err, c.Findings)
		}
	}
}

// BenchmarkVerifyPins100k replays a 100,000-record history against its
// 100,000 pins, as audit verify does after recomputing the hashes.
func BenchmarkVerifyPins100k(b *testing.B) {
	s := bigStore(b, 100000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, err := s.VerifyPins()
		if err != nil || len(d) != 0 {
			b.Fatal(err, d)
		}
	}
}

// BenchmarkAudit100k is audit verify of 100,000 records and pins: the
// hashes recomputed and the pins replayed in one pass.
func BenchmarkAudit100k(b *testing.B) {
	s := bigStore(b, 100000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t, d, err := s.Audit()
		if err != nil || t.Size != 100000 || len(d) != 0 {
			b.Fatal(err, d)
		}
	}
}

// BenchmarkCompareVariants16 compares one tool with a pin of 16 approved
// definitions, matching the oldest (the last one looked at).
func BenchmarkCompareVariants16(b *testing.B) {
	s := benchStore(b)
	zone := func(i int) *Observation { return servedObs("time", npmTime, timeTool(b, fmt.Sprintf("Etc/GMT+%d", i))) }
	if _, _, err := s.Approve(zone(0), ApproveOptions{By: "bench"}); err != nil {
		b.Fatal(err)
	}
	for i := 1; i < MaxVariants; i++ {
		if _, _, err := s.Approve(zone(i), ApproveOptions{By: "bench", Tools: []string{"get_current_time"}}); err != nil {
			b.Fatal(err)
		}
	}
	o := zone(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if c, err := s.Compare(o); err != nil || len(c.Findings) != 0 {
			b.Fatal(err, c.Findings)
		}
	}
}

// BenchmarkCompareShared100 compares a 100-tool unsigned server whose
// tools are approved under another configuration name of the same
// artifact.
func BenchmarkCompareShared100(b *testing.B) {
	s := benchStore(b)
	tools := observed(b, "tool", 100)
	for i := range tools {
		tools[i].Signer, tools[i].Version, tools[i].Permissions = Unsigned, "", nil
	}
	if _, _, err := s.Approve(servedObs("a", npmTime, tools...), ApproveOptions{By: "bench"}); err != nil {
		b.Fatal(err)
	}
	o := servedObs("b", npmTime, tools...)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if c, err := s.Compare(o); err != nil || len(c.Findings) != 0 || c.Tools[0].ApprovedAs == "" {
			b.Fatal(err, c.Findings)
		}
	}
}
