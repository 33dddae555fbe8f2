package verify_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/testgen"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/sign"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
)

type fixture struct {
	manifest, bundle, tools []byte
	policy                  *trust.Policy
}

func newFixture(b *testing.B, n int) fixture {
	b.Helper()
	bundle, p, err := testgen.Signed(n)
	if err != nil {
		b.Fatal(err)
	}
	return fixture{testgen.Manifest(n), bundle, testgen.ToolsList(n), p}
}

var sizes = []int{1, 100, 10000}

// BenchmarkSign measures the whole provider job from manifest bytes:
// parse, digest every definition, build the statement, sign, serialize.
func BenchmarkSign(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			f := newFixture(b, n)
			priv, _ := keys.Generate(keys.Ed25519)
			s, _ := keys.Signer(priv)
			b.SetBytes(int64(len(f.manifest)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m, err := etdi.ParseManifest(f.manifest)
				if err != nil {
					b.Fatal(err)
				}
				bundle, err := sign.Sign(m, s, priv.Public(), sign.Options{IssuedAt: time.Now()})
				if err != nil {
					b.Fatal(err)
				}
				_ = bundle.Marshal()
			}
		})
	}
}

// BenchmarkVerify measures offline verification of a bundle from bytes.
func BenchmarkVerify(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			f := newFixture(b, n)
			b.SetBytes(int64(len(f.bundle)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if r := verify.Verify(f.bundle, f.policy, verify.Options{}); !r.OK() {
					b.Fatal(r.Findings)
				}
			}
		})
	}
}

// BenchmarkVerifyLive adds the comparison with a live tools/list.
func BenchmarkVerifyLive(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			f := newFixture(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				live, err := etdi.ParseList(f.tools, etdi.ListOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if r := verify.Verify(f.bundle, f.policy, verify.Options{Live: live}); !r.OK() {
					b.Fatal(r.Findings)
				}
			}
		})
	}
}
