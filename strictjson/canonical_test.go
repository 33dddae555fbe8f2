package strictjson

import (
	"math"
	"testing"
)

// Number serializations from RFC 8785 Appendix B.
func TestES6NumberRFC8785(t *testing.T) {
	for _, tc := range []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	} {
		got := string(appendES6Number(nil, math.Float64frombits(tc.bits)))
		if got != tc.want {
			t.Errorf("%#016x: got %s, want %s", tc.bits, got, tc.want)
		}
	}
}

func TestCanonicalizeRFC8785(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{
			// RFC 8785 §3.2.2 example (without 1E30, which is beyond 2^53-1).
			"primitives",
			`{
  "numbers": [333333333.33333329, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`,
			`{"literals":[null,true,false],"numbers":[333333333.3333333,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		},
		{
			// RFC 8785 §3.2.3: sorting by UTF-16 code units.
			"sorting",
			`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
		},
		{"nested", `{ "b" : [ { "z":1, "y":[] } ], "a" : {} }`, `{"a":{},"b":[{"y":[],"z":1}]}`},
		{"controls", `["\u0000\u001f\b\f\t\u007f\u2028"]`, "[\"\\u0000\\u001f\\b\\f\\t\u007f\u2028\"]"},
		{"numbers", `[-0, 1.0, 1e0, 10E-1, 100, 1e2, 0.1, -1.5e-7]`, `[0,1,1,1,100,100,0.1,-1.5e-7]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			again, err := Canonicalize(got)
			if err != nil || string(again) != string(got) {
				t.Fatalf("canonical form is not a fixed point: %s", again)
			}
		})
	}
}

func TestAppendIndent(t *testing.T) {
	in := `{"z":1,"a":{"y":[1,{"b":null}],"x":[]},"e":{}}`
	v, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got := string(AppendIndent(nil, v, "", "  "))
	want := "{\n  \"z\": 1,\n  \"a\": {\n    \"y\": [\n      1,\n      {\n        \"b\": null\n      }\n    ],\n    \"x\": []\n  },\n  \"e\": {}\n}"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	back, _ := Canonicalize([]byte(got))
	orig, _ := Canonicalize([]byte(in))
	if string(back) != string(orig) {
		t.Fatal("indented form is not the same value")
	}
}
