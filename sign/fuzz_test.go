package sign

import (
	"encoding/base64"
	"strings"
	"testing"
)

// FuzzCheckAudience reads the unverified claims of hostile tokens: it
// never panics, and accepts only a token whose aud claim names the
// audience.
func FuzzCheckAudience(f *testing.F) {
	enc := base64.RawURLEncoding.EncodeToString
	for _, claims := range []string{`{"aud":"urn:etdi"}`, `{"aud":["urn:other","urn:etdi"]}`, `{"aud":"urn:other"}`, `{"aud":7}`, `{}`, `[`, `{"aud":["urn:etdi"`} {
		f.Add("e30."+enc([]byte(claims))+".c2ln", "urn:etdi")
	}
	f.Add("a.b", "urn:etdi")
	f.Add("..", "")
	f.Fuzz(func(t *testing.T, token, aud string) {
		if checkAudience(token, aud) != nil {
			return
		}
		parts := strings.Split(token, ".")
		b, _ := base64.RawURLEncoding.DecodeString(parts[1])
		if len(parts) != 3 || !strings.Contains(string(b), "aud") {
			t.Fatalf("accepted %q for %q", token, aud)
		}
	})
}
