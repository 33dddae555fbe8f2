package gate

import (
	"strings"
	"testing"
)

func TestMatchesTemplate(t *testing.T) {
	for _, tc := range []struct {
		tmpl, uri string
		want      bool
	}{
		{"weather://city/{name}", "weather://city/Paris", true},
		{"weather://city/{name}", "weather://city/", true},
		{"weather://city/{name}", "weather://town/Paris", false},
		{"file:///{+path}", "file:///home/u/notes.txt", true},
		{"x://{a}/y/{b}.json", "x://1/y/2.json", true},
		{"x://{a}/y/{b}.json", "x://1/z/2.json", false},
		{"x://{a}/y/{b}.json", "x://1/y/2.txt", false},
		{"x://fixed", "x://fixed", true},
		{"x://fixed", "x://fixed2", false},
		{"x://{unclosed", "x://{unclosed", false},
	} {
		if got := matchesTemplate(tc.tmpl, tc.uri); got != tc.want {
			t.Errorf("matchesTemplate(%q, %q) = %v", tc.tmpl, tc.uri, got)
		}
	}
}

// Pending listings of two servers never share a file, and a server key
// never names a path outside pending/.
func TestSafeFileName(t *testing.T) {
	seen := map[string]string{}
	for _, k := range []string{"unsigned:c d", "unsigned:c_d", "unsigned_c_d", "acme:weather", "acme_weather", "../../etc/passwd", "..", ".hidden",
		strings.Repeat("a", 100) + "x", strings.Repeat("a", 100) + "y"} {
		f := safeFileName(k)
		if f == "" || strings.ContainsAny(f, `/\:`) || strings.HasPrefix(f, ".") {
			t.Errorf("%q -> unsafe %q", k, f)
		}
		if other, ok := seen[f]; ok {
			t.Errorf("%q and %q share %q", k, other, f)
		}
		seen[f] = k
		if safeFileName(k) != f {
			t.Errorf("%q: not stable", k)
		}
	}
	if safeFileName("unsigned_weather") != "unsigned_weather" {
		t.Error("a plain key is changed")
	}
}
