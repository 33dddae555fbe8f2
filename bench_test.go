package etdi_test

import (
	"encoding/json"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/testgen"
)

// BenchmarkDigest measures parse + canonicalize + SHA-256 of one tool
// definition; MB/s is over the input bytes.
func BenchmarkDigest(b *testing.B) {
	def, _ := json.Marshal(testgen.Definition(1))
	b.SetBytes(int64(len(def)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := etdi.DigestJSON(def); err != nil {
			b.Fatal(err)
		}
	}
}
