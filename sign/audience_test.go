package sign

import (
	"encoding/base64"
	"testing"
)

// checkAudience accepts a token whose aud claim, a string or an array,
// names the audience, and nothing else.
func TestCheckAudience(t *testing.T) {
	tok := func(claims string) string {
		return "e30." + base64.RawURLEncoding.EncodeToString([]byte(claims)) + ".c2ln"
	}
	for _, c := range []struct {
		token string
		ok    bool
	}{
		{tok(`{"aud":"urn:etdi"}`), true},
		{tok(`{"aud":["urn:other","urn:etdi"]}`), true},
		{tok(`{"aud":"urn:other"}`), false},
		{tok(`{"aud":["urn:other"]}`), false},
		{tok(`{"aud":[]}`), false},
		{tok(`{"aud":7}`), false},
		{tok(`{}`), false},
		{tok(`{"aud":"urn:etdi"}`) + ".x", false},
		{"e30." + tok(`{"aud":"urn:etdi"}`)[4:len(tok(`{"aud":"urn:etdi"}`))-5], false},
		{"e30.!!!.c2ln", false},
	} {
		if err := checkAudience(c.token, "urn:etdi"); (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok %t", c.token, err, c.ok)
		}
	}
}
