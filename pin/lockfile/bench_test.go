package lockfile

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/etdi-dev/etdi/internal/testgen"
	"github.com/etdi-dev/etdi/pin"
)

// benchStore is a database of servers servers with tools tools each
// (testgen definitions, about 700 bytes), all approved unsigned.
func benchStore(b *testing.B, servers, tools int) *pin.Store {
	b.Helper()
	s, err := pin.Open(filepath.Join(b.TempDir(), "pins.db"), pin.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for i := range servers {
		o := &pin.Observation{Server: pin.UnsignedServerKey(fmt.Sprintf("server-%03d", i)), Name: fmt.Sprintf("server-%03d", i)}
		for j := range tools {
			def, _ := json.Marshal(testgen.Definition(i*tools + j))
			o.Tools = append(o.Tools, item(b, "", fmt.Sprintf("tool_%05d", i*tools+j), "", string(def), pin.Unsigned))
		}
		if _, r, err := s.Approve(o, pin.ApproveOptions{By: "bench"}); err != nil || len(r) > 0 {
			b.Fatal(err, r)
		}
	}
	return s
}

// The cost of a lockfile: export and marshal, parse, and loading it into
// a temporary database, which check --lock and run --lock pay once per
// command.
func BenchmarkLockfile(b *testing.B) {
	for _, size := range []struct{ servers, tools int }{{1, 100}, {10, 100}} {
		s := benchStore(b, size.servers, size.tools)
		f, err := Export(s)
		if err != nil {
			b.Fatal(err)
		}
		data, _ := f.Marshal()
		name := fmt.Sprintf("%d-pins", size.servers*size.tools)
		b.Run("export+marshal/"+name, func(b *testing.B) {
			for b.Loop() {
				f, err := Export(s)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.Marshal(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("parse/"+name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Parse(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("temporary/"+name, func(b *testing.B) {
			for b.Loop() {
				_, remove, err := Temporary(f)
				if err != nil {
					b.Fatal(err)
				}
				remove()
			}
		})
		b.Logf("%s: lockfile of %d bytes", name, len(data))
	}
}
