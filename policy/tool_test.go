package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/pin"
)

func TestExpandScopes(t *testing.T) {
	tests := []struct {
		in, want []string
	}{
		{nil, []string{}},
		{[]string{"shell"}, []string{"shell"}},
		{[]string{"net:fetch"}, []string{"net:*", "net:fetch"}},
		{[]string{"a:b:c"}, []string{"a:*", "a:b:*", "a:b:c"}},
		{[]string{"net:fetch", "net:post", "net:fetch"}, []string{"net:*", "net:fetch", "net:post"}},
		{[]string{"files:write", "files:read", "net:fetch", "shell"}, []string{"files:*", "files:read", "files:write", "net:*", "net:fetch", "shell"}},
		{[]string{"a:*", "a:b"}, []string{"a:*", "a:b"}},
		{[]string{"a:"}, []string{"a:", "a:*"}},
		{[]string{"a::b"}, []string{"a:*", "a::*", "a::b"}},
		{[]string{":"}, []string{":", ":*"}},
		{[]string{"", ""}, []string{""}},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.in)
		got := ExpandScopes(tt.in)
		if got == nil || !slices.Equal(got, tt.want) {
			t.Errorf("ExpandScopes(%q) = %#v, want %q", tt.in, got, tt.want)
		}
		if !slices.Equal(in, tt.in) {
			t.Errorf("ExpandScopes changed its argument to %q", tt.in)
		}
	}
}

func TestAnnotationsOf(t *testing.T) {
	str := func(b *bool) string {
		if b == nil {
			return "-"
		}
		return fmt.Sprint(*b)
	}
	tests := []struct {
		def  string
		want string // readOnly destructive idempotent openWorld
	}{
		{`{"name":"x","annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}}`, "true false true false"},
		{`{"annotations":{"destructiveHint":true,"title":"Delete"}}`, "- true - -"},
		{`{"annotations":{"readOnlyHint":"true","destructiveHint":1,"idempotentHint":null,"openWorldHint":{}}}`, "- - - -"},
		{`{"annotations":{"ReadOnlyHint":true,"readonlyhint":true}}`, "- - - -"},
		{`{"annotations":{}}`, "- - - -"},
		{`{"annotations":[true]}`, "- - - -"},
		{`{"annotations":"readOnlyHint"}`, "- - - -"},
		{`{"annotations":null}`, "- - - -"},
		{`{"readOnlyHint":true}`, "- - - -"},
		{`{"inputSchema":{"annotations":{"readOnlyHint":true}}}`, "- - - -"},
		{`[{"annotations":{"readOnlyHint":true}}]`, "- - - -"},
		{`"x"`, "- - - -"},
		{`{"annotations":{"readOnlyHint":true}`, "- - - -"},                       // bad JSON
		{`{"annotations":{"readOnlyHint":true,"readOnlyHint":false}}`, "- - - -"}, // duplicate member
		{``, "- - - -"},
	}
	for _, tt := range tests {
		a := AnnotationsOf([]byte(tt.def))
		got := strings.Join([]string{str(a.ReadOnly), str(a.Destructive), str(a.Idempotent), str(a.OpenWorld)}, " ")
		if got != tt.want {
			t.Errorf("AnnotationsOf(%s) = %s, want %s", tt.def, got, tt.want)
		}
	}
}

func TestToolOf(t *testing.T) {
	def := []byte(`{"annotations":{"destructiveHint":true},"name":"rm"}`)
	perms := []etdi.Permission{{Scope: "files:write"}, {Scope: "files:delete", Description: "deletes"}}
	signed := ToolOf("acme:files", "acme", pin.Observed{Name: "rm", Version: "1.0.0", Canonical: def, Permissions: perms, Signer: pin.SignerID{Kind: "key", ID: "k1"}})
	want := Tool{Server: "acme:files", Name: "rm", Version: "1.0.0", Provider: "acme", Signed: true, Scopes: []string{"files:write", "files:delete"}}
	if signed.Annotations.Destructive == nil || !*signed.Annotations.Destructive || signed.Annotations.ReadOnly != nil {
		t.Errorf("ToolOf annotations: %+v", signed.Annotations)
	}
	signed.Annotations = Annotations{}
	if !equalTool(signed, want) {
		t.Errorf("ToolOf, signed:\n got %+v\nwant %+v", signed, want)
	}

	for _, signer := range []pin.SignerID{pin.Unsigned, {}} {
		p := &pin.Pin{Server: "unsigned:files", Tool: "rm", Provider: "someone", Signer: signer, Permissions: perms, Definition: def}
		got := ToolOfPin(p)
		if got.Signed || got.Provider != "" || got.Name != "rm" || got.Server != "unsigned:files" || !slices.Equal(got.Scopes, want.Scopes) {
			t.Errorf("ToolOfPin, signer %+v: %+v", signer, got)
		}
	}
	idp := ToolOfPin(&pin.Pin{Server: "acme:files", Tool: "rm", Version: "2.0.0", Provider: "acme", Signer: pin.SignerID{Kind: "idp", ID: "https://issuer sub"}, Definition: def})
	if !idp.Signed || idp.Provider != "acme" || idp.Version != "2.0.0" || idp.Annotations.Destructive == nil {
		t.Errorf("ToolOfPin, idp signer: %+v", idp)
	}
}

func equalTool(a, b Tool) bool {
	return a.Server == b.Server && a.Name == b.Name && a.Version == b.Version && a.Provider == b.Provider &&
		a.Signed == b.Signed && slices.Equal(a.Scopes, b.Scopes)
}

func TestArgumentsDigest(t *testing.T) {
	sha := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return hex.EncodeToString(sum[:])
	}
	canonical := "sha256:" + sha(`{"a":[1,"x"],"b":{"c":true,"d":null}}`)
	for _, in := range []string{
		`{"a":[1,"x"],"b":{"c":true,"d":null}}`,
		`{"b":{"d":null,"c":true},"a":[1,"x"]}`,
		" {\n\t\"b\" : { \"d\" : null , \"c\" : true } ,\r\n \"a\" : [ 1.0 , \"\\u0078\" ] } \n",
		`{"a":[1e0,"x"],"b":{"c":true,"d":null}}`,
	} {
		if got := ArgumentsDigest([]byte(in)); got != canonical {
			t.Errorf("ArgumentsDigest(%q) = %s, want %s", in, got, canonical)
		}
	}
	tests := []struct {
		in   []byte
		want string
	}{
		{nil, "sha256:" + sha(`{}`)},
		{[]byte(`{}`), "sha256:" + sha(`{}`)},
		{[]byte(`{"a":2}`), "sha256:" + sha(`{"a":2}`)},
		{[]byte(`[1]`), "sha256:" + sha(`[1]`)},
		{[]byte("not json"), "raw-sha256:" + sha("not json")},
		{[]byte(`{"a":1,"a":2}`), "raw-sha256:" + sha(`{"a":1,"a":2}`)},
		{[]byte(`{"a":9007199254740992}`), "raw-sha256:" + sha(`{"a":9007199254740992}`)},
		{[]byte("{\"a\":\"\xff\"}"), "raw-sha256:" + sha("{\"a\":\"\xff\"}")},
		{[]byte{}, "raw-sha256:" + sha("")},
	}
	for _, tt := range tests {
		if got := ArgumentsDigest(tt.in); got != tt.want {
			t.Errorf("ArgumentsDigest(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	if ArgumentsDigest([]byte(`{"a":1}`)) == ArgumentsDigest([]byte(`{"a":2}`)) {
		t.Error("different arguments, same digest")
	}
}

func TestSummarizeArguments(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"absent", "", "(no arguments)"},
		{"empty object", "{ }", "(no arguments)"},
		{"sorted members", `{"path":"/etc/passwd","mode":"r","n":3,"deep":{"b":[1,2],"a":null}}`,
			"deep: {\"a\":null,\"b\":[1,2]}\nmode: \"r\"\nn: 3\npath: \"/etc/passwd\""},
		{"not JSON", `{"a":`, "(5 bytes that are not JSON)"},
		{"duplicate member", `{"a":1,"a":2}`, "(13 bytes that are not JSON)"},
		{"array", `[1, "two",  null]`, `(not an object) [1,"two",null]`},
		{"string", `"hello"`, `(not an object) "hello"`},
		{"number", `42`, `(not an object) 42`},
		{"long array", "[" + strings.Repeat(`"x",`, 40) + `"x"]`, `(not an object) [` + strings.Repeat(`"x",`, 23) + `"x"...`},
		// Escapes: controls, newlines and bidirectional overrides never
		// reach the terminal; backslashes are doubled so that no text
		// passes for an escape.
		{"escape in value", `{"a":"\u001b]0;owned\u0007"}`, `a: "\u{1B}]0;owned\u{7}"`},
		{"newline in value", `{"a":"line1\nrm -rf /"}`, `a: "line1\nrm -rf /"`},
		{"bidi in value", `{"file":"evil\u202etxt.exe"}`, `file: "evil\u{202E}txt.exe"`},
		{"escape in name", `{"a\u001b[2Jb":1}`, `a\u{1B}[2Jb: 1`},
		{"newline in name", `{"a\nb":1}`, `a\nb: 1`},
		{"bidi in name", `{"a\u202eb":1}`, `a\u{202E}b: 1`},
		{"C1 in nested value", `{"a":{"x":"\u0085\u009b31m"}}`, `a: {"x":"\u{85}\u{9B}31m"}`},
		{"bidi in nested value", `{"a":["\u2066x\u2069"]}`, `a: ["\u{2066}x\u{2069}"]`},
		{"newline in nested value", `{"a":["x\ny"]}`, `a: ["x\\ny"]`},
		{"backslash in name", `{"a\\u{41}":1}`, `a\\u{41}: 1`},
		{"bidi in array", `["\u202e", "\u0085"]`, `(not an object) ["\u{202E}","\u{85}"]`},
		{"newline in string", `"a\nb"`, `(not an object) "a\\nb"`},
		{"accents kept", `{"ville":"Zürich 東京 🚀"}`, `ville: "Zürich 東京 🚀"`},
	}
	for _, tt := range tests {
		if got := SummarizeArguments([]byte(tt.in)); got != tt.want {
			t.Errorf("%s: SummarizeArguments(%s) =\n%s\nwant\n%s", tt.name, tt.in, got, tt.want)
		}
		checkSummary(t, SummarizeArguments([]byte(tt.in)))
	}
	if got := SummarizeArguments(nil); got != "(no arguments)" {
		t.Errorf("SummarizeArguments(nil) = %q", got)
	}
}

func TestSummarizeArgumentsBounds(t *testing.T) {
	t.Run("value cut on a rune boundary", func(t *testing.T) {
		got := SummarizeArguments([]byte(`{"v":"` + strings.Repeat("é", 60) + `"}`))
		// `"` and 47 é are 95 bytes; the 48th é would end at 97.
		want := `v: "` + strings.Repeat("é", 47) + "..."
		if got != want {
			t.Errorf("got %q\nwant %q", got, want)
		}
	})
	t.Run("value of exactly 96 bytes kept", func(t *testing.T) {
		v := strings.Repeat("x", 94) // quoted: 96 bytes
		if got := SummarizeArguments([]byte(`{"v":"` + v + `"}`)); got != `v: "`+v+`"` {
			t.Errorf("got %q", got)
		}
		v += "x"
		if got := SummarizeArguments([]byte(`{"v":"` + v + `"}`)); got != `v: "`+v[:95]+"..." {
			t.Errorf("got %q", got)
		}
	})
	t.Run("name cut", func(t *testing.T) {
		name := strings.Repeat("n", 200)
		if got := SummarizeArguments([]byte(`{"` + name + `":1}`)); got != name[:96]+"...: 1" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("escapes count toward the cut", func(t *testing.T) {
		got := SummarizeArguments([]byte(`{"v":"` + strings.Repeat(`\u202e`, 100) + `"}`))
		line := strings.TrimPrefix(got, "v: ")
		if len(line) != 96+3 || !strings.HasSuffix(line, "...") || strings.ContainsRune(got, '\u202e') {
			t.Errorf("got %d bytes: %q", len(line), got)
		}
	})
	t.Run("at most 16 members", func(t *testing.T) {
		var members []string
		for i := range 20 {
			members = append(members, fmt.Sprintf(`"k%02d":%d`, 19-i, i))
		}
		got := SummarizeArguments([]byte("{" + strings.Join(members, ",") + "}"))
		lines := strings.Split(got, "\n")
		if len(lines) != 17 || lines[0] != "k00: 19" || lines[15] != "k15: 4" || lines[16] != "... and 4 more" {
			t.Errorf("got %d lines:\n%s", len(lines), got)
		}
		if got := SummarizeArguments([]byte("{" + strings.Join(members[:16], ",") + "}")); strings.Count(got, "\n") != 15 || strings.Contains(got, "more") {
			t.Errorf("16 members:\n%s", got)
		}
	})
	t.Run("at most 2 KiB", func(t *testing.T) {
		var members []string
		for i := range 16 {
			members = append(members, fmt.Sprintf(`"%c%s":"%s"`, 'a'+i, strings.Repeat("n", 150), strings.Repeat("v", 150)))
		}
		got := SummarizeArguments([]byte("{" + strings.Join(members, ",") + "}"))
		lines := strings.Split(got, "\n")
		// Each line is 99 + 2 + 99 bytes and its newline: ten fit in 2048.
		if len(lines) != 11 || lines[10] != "... and 6 more" || len(lines[9]) != 200 {
			t.Errorf("got %d lines, %d bytes:\n%s", len(lines), len(got), got)
		}
		if len(got) > summaryTotal+len("... and 16 more") {
			t.Errorf("summary of %d bytes", len(got))
		}
	})
	t.Run("large input", func(t *testing.T) {
		var members []string
		for i := range 5000 {
			members = append(members, fmt.Sprintf(`"k%05d":"%s\u202e\u0000"`, i, strings.Repeat("v", i%300)))
		}
		got := SummarizeArguments([]byte("{" + strings.Join(members, ",") + "}"))
		if len(got) > summaryTotal+32 || !strings.HasSuffix(got, "... and 4984 more") {
			t.Errorf("summary of %d bytes ending %q", len(got), got[max(0, len(got)-40):])
		}
		checkSummary(t, got)
	})
}

// checkSummary checks what every summary must be: valid UTF-8 without a
// code point a terminal would act on or hide, bar the line breaks.
func checkSummary(t testing.TB, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("summary is not UTF-8: %q", s)
	}
	for i, r := range s {
		if r != '\n' && (r < 0x20 || r >= 0x7f && r <= 0x9f || isHidden(r)) {
			t.Fatalf("summary holds %U at byte %d: %q", r, i, s)
		}
	}
}

// isHidden is termtext.Hidden.
var isHidden = termtext.Hidden
