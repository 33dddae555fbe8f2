package strictjson

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRejects(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"duplicate key", `{"a":1,"a":2}`, `duplicate member name "a"`},
		{"duplicate key nested", `{"x":{"b":1,"c":2,"b":3}}`, `duplicate member name "b"`},
		{"duplicate key in large object", `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"a":10}`, `duplicate member name "a"`},
		{"duplicate after escape", `{"a":1,"\u0061":2}`, `duplicate member name "a"`},
		{"integer beyond 2^53", `{"n":9007199254740993}`, "beyond"},
		{"integer 2^53", `[9007199254740992]`, "beyond"},
		{"negative beyond", `[-9007199254740993]`, "beyond"},
		{"exponent beyond", `[1e300]`, "beyond"},
		{"overflow", `[1e999]`, "beyond"},
		{"invalid utf-8", "{\"a\":\"\xff\"}", "invalid UTF-8"},
		{"overlong utf-8", "[\"\xc0\xaf\"]", "invalid UTF-8"},
		{"lone high surrogate", `["\ud800"]`, "lone high surrogate"},
		{"lone low surrogate", `["\udc00"]`, "lone low surrogate"},
		{"high then non-low", `["\ud800\u0041"]`, "not followed by a low surrogate"},
		{"byte order mark", "\ufeff{}", "unexpected character"},
		{"trailing data", `{} {}`, "after the top-level value"},
		{"trailing comma", `[1,]`, "unexpected character"},
		{"leading zero", `[01]`, "expected ','"},
		{"bare dot", `[1.]`, "no digits after"},
		{"control char in string", "[\"a\tb\"]", "control character"},
		{"single quotes", `{'a':1}`, "expected member name"},
		{"bad escape", `["\x41"]`, "invalid escape"},
		{"nan", `[NaN]`, "unexpected character"},
		{"too deep", deep, "nesting deeper"},
		{"empty", ``, "unexpected end"},
		{"truncated", `{"a":[1,2`, "unexpected end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			if err == nil {
				t.Fatalf("Parse(%q) succeeded", tc.in)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *SyntaxError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, `0`, `-0`, `"x"`, `null`, ` true `, `9007199254740991`, `-9007199254740991`,
		`1.5e-300`, `{"a":{"b":[1,2,{"c":null}]}}`, `["\ud83d\ude00"]`, `["\u2028"]`,
		strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth),
	} {
		if _, err := Parse([]byte(in)); err != nil {
			t.Errorf("Parse(%q): %v", in, err)
		}
	}
}

func TestSyntaxErrorOffset(t *testing.T) {
	_, err := Parse([]byte(`{"a":1,"a":2}`))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Offset != 7 {
		t.Fatalf("offset of duplicate = %+v, want 7", err)
	}
}
