package artifact

import (
	"strings"
	"testing"
)

// TestParseUVLockRefusals checks that each malformed construct of a
// uv.lock is refused by the check that names it, not by a later one that
// happens to trip over what the first let through.
func TestParseUVLockRefusals(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"[[package]\nname = \"x\"\n", "line 1: unterminated table header"},
		{"[package]]\n", "line 1: want a new line"},
		{"[[package]]\nname \"x\"\n", "line 2: want = after a key"},
		{"[[package]]\nname = 5\n", "line 2: name is not a string"},
		{"[[package]]\nname = \"x\"\nversion = [\"1\"]\n", "line 3: version is not a string"},
		{"a = 1$\n", "line 1: unexpected '$'"},
		{"a = \"x\ny\"\n", "line 1: new line in a string"},
		{"a = \"abc", "line 1: unterminated string"},
		{"a = '''abc''", "line 1: unterminated string"},
		{"a = \"x\\\n y\"\n", "line 1: bad escape"},
		{"a = \"\\uZZZZ\"\n", "line 1: bad escape"},
		{"a = \"\\u00\"\n", "line 1: bad escape"},
		{"a = \"\\u00", "line 1: bad escape"},
		{"a = { b = 1 c = 2 }\n", "line 1: want , or } in an inline table"},
		{"a = { b 1 }\n", "line 1: want = in an inline table"},
		{"a = [1 2]\n", "line 1: want , or ] in an array"},
		{"a = \n", "line 1: want a value"},
	} {
		_, err := parseUVLock([]byte(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("parseUVLock(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestParseUVLockStrings checks the strings a package is read for in
// each of TOML's forms, with escapes, line-ending backslashes and quotes
// that end a multi-line string.
func TestParseUVLockStrings(t *testing.T) {
	in := strings.Join([]string{
		`[[package]]`,
		`name = "a\u00e9\tb\"\\"`,
		`version = '1.0'`,
		`[[package]]`,
		`name = """`,
		`x\`,
		`   y"""""`,
		`version = '''v'''`,
		`sdist = { hash = "sha256:` + strings.Repeat("ab", 32) + `" }`,
		`skipped = "\U0001F600 \x41"`,
		``,
	}, "\n")
	pkgs, err := parseUVLock([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range pkgs {
		got = append(got, k.name+"|"+k.version+"|"+strings.Join(k.hashes(), ","))
	}
	want := "a\u00e9\tb\"\\|1.0|\nxy\"\"|v|sha256:" + strings.Repeat("ab", 32)
	if strings.Join(got, "\n") != want {
		t.Errorf("parseUVLock = %q, want %q", strings.Join(got, "\n"), want)
	}
}
