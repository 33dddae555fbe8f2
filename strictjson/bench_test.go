package strictjson_test

import (
	"testing"

	"github.com/etdi-dev/etdi/internal/testgen"
	"github.com/etdi-dev/etdi/strictjson"
)

// BenchmarkCanonicalizeLarge measures canonicalization of a 10,000-tool
// tools/list (about 8 MB).
func BenchmarkCanonicalizeLarge(b *testing.B) {
	data := testgen.ToolsList(10000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := strictjson.Canonicalize(data); err != nil {
			b.Fatal(err)
		}
	}
}
