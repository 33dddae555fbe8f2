package artifact

import "testing"

func TestTOMLStrings(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"plain"`, "plain"},
		{`"esc\u0061ped\t\"q\"\\ \x41\U0001F600"`, "escaped\t\"q\"\\ A\U0001F600"},
		{`'lit\eral'`, `lit\eral`},
		{"\"\"\"\nline one \\\n    line two\"\"\"", "line one line two"},
		{"'''\nraw \\n\n'''", "raw \\n\n"},
		{`""""quoted"""""`, `"quoted""`},
		{`""`, ""},
		{`[1, 2.5, true, 1979-05-27 07:32:00Z, "x",]`, ""},
		{`{ a = 1, b = { c = [] } }`, ""},
	} {
		tt := &toml{s: tc.in, line: 1}
		v, err := tt.value(true, 0)
		if s, ok := v.(string); err != nil || tt.i != len(tc.in) || ok && s != tc.want {
			t.Errorf("value(%s) = %q, %v (at %d), want %q", tc.in, v, err, tt.i, tc.want)
		}
	}
	for _, bad := range []string{`"open`, `"a\qb"`, `"\u12"`, "\"new\nline\"", `'''open`, `"\`, `[1 2]`, `{a 1}`, `{a = 1 b = 2}`, ``} {
		tt := &toml{s: bad, line: 1}
		if v, err := tt.value(true, 0); err == nil {
			t.Errorf("value(%s) = %q, no error", bad, v)
		}
	}
}
