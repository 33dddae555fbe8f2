package gate

import (
	"slices"
	"strings"
	"testing"
)

// FuzzFileSpellings feeds URIs a host chooses to the spellings a read
// policy is asked about besides the URI itself: it never panics, never
// returns the URI itself or one spelling twice, and each spelling only
// drops or decodes bytes of the URI (it grows by the two slashes of
// "file:/" read as "file:///" alone): a host cannot make it build
// URIs without end.
func FuzzFileSpellings(f *testing.F) {
	for _, seed := range []string{"file:///etc/passwd?x#y", "file://localhost/etc%2Fpasswd/", "file:/etc/passwd",
		"file://", "file://h", "file:///", "x:/", "https://a.example/b?c", "file:///a%5Cb", "%zz", "file:///a#b?c"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		out := fileSpellings(uri)
		if slices.Contains(out, uri) {
			t.Fatalf("%q among its own spellings %q", uri, out)
		}
		for i, u := range out {
			if slices.Contains(out[i+1:], u) {
				t.Fatalf("%q twice in %q", u, out)
			}
			// Only "file:/" growing into "file:///" lengthens a URI.
			if len(u) > len(uri)+2 || len(u) > len(uri) && !strings.HasPrefix(uri, "file:/") {
				t.Fatalf("%q is longer than %q", u, uri)
			}
		}
	})
}
