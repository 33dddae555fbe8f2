package idp

import (
	"context"
	"testing"
	"time"
)

// BenchmarkVerifyToken validates an ES256 and an RS256 token with the
// issuer's keys already cached.
func BenchmarkVerifyToken(b *testing.B) {
	st, payload := statement(b)
	for _, k := range []testKey{keysAll[0], keysAll[2], keysAll[4]} {
		b.Run(k.alg, func(b *testing.B) {
			cfg := newIDPBench(b, k)
			tok := signToken(b, k, claims(cfg.Issuer, st, payload), nil)
			v := &Verifier{Cache: &MemCache{}, Now: func() time.Time { return now }}
			if _, err := v.VerifyToken(context.Background(), tok, cfg, payload, st); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := v.VerifyToken(context.Background(), tok, cfg, payload, st); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
