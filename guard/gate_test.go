package guard

import "testing"

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
