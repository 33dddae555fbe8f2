package etdi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/strictjson"
)

// TestSpecNumbersAndDepth checks the readings SPEC.md §2 items 4 and 5
// state: a number is its nearest double, which must be within ±2^53-1,
// and the outermost array or object is depth 1.
func TestSpecNumbersAndDepth(t *testing.T) {
	for _, c := range []struct {
		lit  string
		ok   bool
		want float64
	}{
		{"9007199254740991", true, strictjson.MaxSafeInteger},
		{"9007199254740991.4", true, strictjson.MaxSafeInteger},
		{"-9007199254740991.4", true, -strictjson.MaxSafeInteger},
		{"9007199254740991.5", false, 0},
		{"9007199254740992", false, 0},
		{"1e300", false, 0},
		{"1e-400", true, 0},
		{"42.0", true, 42},
	} {
		v, err := strictjson.Parse([]byte(c.lit))
		switch {
		case c.ok && err != nil:
			t.Errorf("%s refused: %v", c.lit, err)
		case !c.ok && err == nil:
			t.Errorf("%s accepted as %v", c.lit, v.Num)
		case c.ok && v.Num != c.want:
			t.Errorf("%s read as %v, want %v", c.lit, v.Num, c.want)
		}
	}
	for depth, ok := range map[int]bool{64: true, 65: false} {
		for _, open := range []string{"[", `{"a":`} {
			closer := map[string]string{"[": "]", `{"a":`: "}"}[open]
			doc := strings.Repeat(open, depth) + "1" + strings.Repeat(closer, depth)
			if _, err := strictjson.Parse([]byte(doc)); (err == nil) != ok {
				t.Errorf("%d levels of %s: error %v, want accepted %v", depth, open, err, ok)
			}
		}
	}
}

// TestSpecCharacters checks the character classes of SPEC.md §4: control
// characters (C0 and DEL everywhere, C1 too in a tool name), space as
// U+0020 only, and scopes of bytes 0x21-0x7E.
func TestSpecCharacters(t *testing.T) {
	manifest := func(providerName, serverVersion, scope, description, tool string) string {
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		return `{"provider":{"id":"acme","name":` + q(providerName) + `},"server":{"name":"w","version":` + q(serverVersion) +
			`},"tools":[{"version":"1.0.0","permissions":[{"scope":` + q(scope) + `,"description":` + q(description) +
			`}],"definition":{"name":` + q(tool) + `}}]}`
	}
	base := []string{"ACME", "1.0", "net:fetch", "Calls the API", "get_weather"}
	for _, c := range []struct {
		field int
		value string
		ok    bool
	}{
		{0, "ACME\nInc.", false},
		{0, "ACME\u007f", false},
		{0, "ACME\u0085", true},
		{1, "1.0\t", false},
		{2, "net fetch", false},
		{2, "net:fétch", false},
		{2, "net:~fetch!", true},
		{3, "line one\nline two", false},
		{3, "C1 \u0085 is allowed here", true},
		{4, "get weather", false},
		{4, "get\tweather", false},
		{4, "get\u0085weather", false},
		{4, "get\u00a0weather", true},
		{4, "get\u3000weather", true},
	} {
		f := append([]string(nil), base...)
		f[c.field] = c.value
		_, err := ParseManifest([]byte(manifest(f[0], f[1], f[2], f[3], f[4])))
		if (err == nil) != c.ok {
			t.Errorf("field %d = %q: error %v, want accepted %v", c.field, c.value, err, c.ok)
		}
	}
	if _, err := ParseManifest([]byte(manifest(base[0], base[1], base[2], base[3], base[4]))); err != nil {
		t.Fatalf("the base manifest is refused: %v", err)
	}
}

// TestSpecTimes checks the time form of SPEC.md §2: RFC 3339 with upper
// case T and Z, any number of fraction digits, offsets to ±23:59, and no
// leap second.
func TestSpecTimes(t *testing.T) {
	for s, ok := range map[string]bool{
		"2026-01-01T00:00:00Z":              true,
		"2026-01-01T01:00:00+01:00":         true,
		"2026-01-01T00:00:00.123456789012Z": true,
		"2026-01-01t00:00:00Z":              false,
		"2026-01-01T00:00:00z":              false,
		"2026-01-01 00:00:00Z":              false,
		"2026-01-01T00:00:00.Z":             false,
		"2026-06-30T23:59:60Z":              false,
		"2026-01-01T00:00:00":               false,
		// Forms Go's time.Parse alone takes.
		"2026-01-01T0:00:00Z":        false,
		"2026-01-01T00:00:00,5Z":     false,
		"2026-01-02T00:00:00+24:00":  false,
		"2026-01-01T00:00:00+00:60":  false,
		"2026-01-01T00:00:00+0000":   false,
		"2026-01-01T00:00:00+00:00 ": false,
		"2025-12-31T19:00:00-05:00":  true,
	} {
		v, err := strictjson.Parse([]byte(fmt.Sprintf("%q", s)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := strictjson.Field{Path: "t", V: v}.Time()
		if (err == nil) != ok {
			t.Errorf("%s: error %v, want accepted %v", s, err, ok)
		}
		if ok && err == nil && !got.Truncate(time.Second).Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("%s read as %s", s, got)
		}
	}
}
