package confusable

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// lookalikes are pairs of names that must share a skeleton. docs/check.md#check-against-pins
// summarizes this table.
var lookalikes = []struct{ a, b, why string }{
	{"get_weather", "get_weathеr", "Cyrillic е"},
	{"get_weather", "gеt_wеathеr", "three Cyrillic е"},
	{"read_file", "rеad_filе", "Cyrillic е twice"},
	{"search", "ѕеаrсh", "all Cyrillic"},
	{"get_weather", "get_wеather", "Cyrillic е in the middle"},
	{"get_weather", "get_weαther", "Greek α"},
	{"open_port", "οpen_pοrt", "Greek ο"},
	{"open_port", "օpen_port", "Armenian օ"},
	{"run_tool", "ⲅun_tool", "Coptic ⲅ for r"},
	{"copy_tool", "cⲟpy_tⲟⲟl", "Coptic ⲟ"},
	{"add_user", "ꓮdd_user", "Lisu ꓮ for A"},
	{"send_mail", "ꓢend_mail", "Lisu ꓢ for S"},
	{"add_user", "Ꭺdd_user", "Cherokee Ꭺ"},
	{"get_weather", "get\u2010weather", "U+2010 hyphen"},
	{"get_weather", "get\u2011weather", "U+2011 non-breaking hyphen"},
	{"get_weather", "get\u2013weather", "U+2013 en dash"},
	{"get_weather", "get\u2212weather", "U+2212 minus sign"},
	{"get_weather", "get\u2e3aweather", "U+2E3A two-em dash (Pd)"},
	{"get_weather", "get-weather", "hyphen-minus for underscore"},
	{"get_weather", "get.weather", "full stop for underscore"},
	{"get_weather", "get weather", "space for underscore"},
	{"get_weather", "get\u00a0weather", "no-break space inside"},
	{"get_weather", "get\u202fweather", "narrow no-break space inside"},
	{"get_weather", "get_weather\u00a0", "trailing no-break space"},
	{"get_weather", "get\u2800weather", "U+2800 braille pattern blank inside"},
	{"get_weather", "get_weather\u2800", "trailing U+2800 braille pattern blank"},
	{"get_weather", "get\u3164weather", "U+3164 Hangul filler inside"},
	{"get_weather", "get\uffa0weather", "U+FFA0 halfwidth Hangul filler"},
	{"get_weather", "get\u115fweather", "U+115F Hangul choseong filler"},
	{"get_weather", "get\u1160weather", "U+1160 Hangul jungseong filler"},
	{"get_weather", "\u2007get_weather", "leading figure space"},
	{"get_weather", "get_weather\u3000", "trailing ideographic space"},
	{"get_weather", "get_wea\u180bther", "Mongolian free variation selector"},
	{"get_weather", "get_weather\u180e", "Mongolian vowel separator"},
	{"get_weather", "get\u200b_weather", "zero-width space"},
	{"get_weather", "get_weather\u200d", "zero-width joiner"},
	{"get_weather", "get_\u2060weather", "word joiner"},
	{"get_weather", "\ufeffget_weather", "byte order mark"},
	{"get_weather", "get_we\u00adather", "soft hyphen"},
	{"get_weather", "get_weat\u034fher", "combining grapheme joiner"},
	{"get_weather", "get_weather\U000E0041", "tag character"},
	{"get_weather", "get_weather\ufe0f", "variation selector 16"},
	{"get_weather", "get\u202e_weather", "right-to-left override"},
	{"get_weather", "get_weather\u3164", "Hangul filler"},
	{"get_weather", "ｇｅｔ_ｗｅａｔｈｅｒ", "fullwidth"},
	{"get_weather", "𝐠𝐞𝐭_𝐰𝐞𝐚𝐭𝐡𝐞𝐫", "mathematical bold"},
	{"get_weather", "Get_Weather", "case"},
	{"modem_status", "modern_status", "rn for m"},
	{"write", "vvrite", "vv for w"},
	{"list_all", "Iist_aII", "capital I for l"},
	{"list_all", "|ist_all", "vertical bar for l"},
	{"list_all", "ⅼist_all", "small roman numeral fifty"},
	{"tool_0", "tool_o", "zero for o"},
	{"tool_0", "tool_O", "zero for O"},
	{"llm_call", "l1m_call", "one for l"},
	{"file_info", "ﬁle_info", "fi ligature"},
	{"kill", "Kill", "Kelvin sign"},
}

// distinct are names that must not be flagged as look-alikes.
var distinct = []struct{ a, b string }{
	{"get_weather", "get_forecast"},
	{"read_file", "write_file"},
	{"search", "research"},
	{"list_files", "list_file"},
	{"get_user", "set_user"},
	{"tool_1", "tool_2"},
	{"v2_query", "v3_query"},
	{"file_read", "read_file"},
	{"getweather", "get_weather"},
	{"αβγ", "abc"}, // Greek β is not b
	{"погода", "погоди"},
	{"天气", "天氣"},
	{"add", "and"},
	{"open", "opens"},
	{"cl", "d"},
	{"get_weather", "get__weather"},
	// UTS #39 gives Greek ε the prototype ꞓ, not e; such a name still
	// draws the mixed-script warning.
	{"get_weather", "get_weathεr"},
}

func TestLookalikes(t *testing.T) {
	for _, tc := range lookalikes {
		if !Confusable(tc.a, tc.b) {
			t.Errorf("%s: %q and %q not confusable (skeletons %q %q)", tc.why, tc.a, tc.b, Skeleton(tc.a), Skeleton(tc.b))
		}
	}
}

func TestDistinctNames(t *testing.T) {
	for _, tc := range distinct {
		if Confusable(tc.a, tc.b) {
			t.Errorf("%q and %q flagged as confusable (skeleton %q)", tc.a, tc.b, Skeleton(tc.a))
		}
	}
	if Confusable("get_weather", "get_weather") {
		t.Error("a name is confusable with itself")
	}
}

// The skeleton is stable: applying it twice changes nothing.
func TestSkeletonIdempotent(t *testing.T) {
	for _, tc := range lookalikes {
		for _, s := range []string{tc.a, tc.b} {
			if k := Skeleton(s); Skeleton(k) != k {
				t.Errorf("Skeleton(%q) = %q, but Skeleton of that is %q", s, k, Skeleton(k))
			}
		}
	}
}

// The tables, Go's unicode package and x/text's norm are the same Unicode
// version, so Pd, White_Space, scripts and NFD agree with the data.
func TestUnicodeVersion(t *testing.T) {
	for _, v := range []string{unicode.Version, norm.Version} {
		if v != UnicodeVersion {
			t.Errorf("tables %s, unicode %s, norm %s", UnicodeVersion, unicode.Version, norm.Version)
		}
	}
	if false {
		t.Errorf("tables %s, unicode %s, norm %s", UnicodeVersion, unicode.Version, norm.Version)
	}
	// Spot checks of the generated tables against the data files.
	for r, want := range map[rune]string{'m': "rn", 0x2010: "-", 0x00A0: " ", 0xA4EE: "A", 0x0435: "e", '0': "O"} {
		if p, ok := prototype(r); !ok || p != want {
			t.Errorf("prototype(%U) = %q, %v; want %q", r, p, ok, want)
		}
	}
	for _, r := range []rune{0x00AD, 0x180B, 0x180E, 0x200B, 0xFEFF, 0xE0041, 0xE01EF} {
		if !invisible(r) {
			t.Errorf("%U is Default_Ignorable_Code_Point", r)
		}
	}
	for _, r := range []rune{'a', ' ', 0x00A0, 0x0600, 0x13430} {
		if invisible(r) {
			t.Errorf("%U is not Default_Ignorable_Code_Point", r)
		}
	}
}

// tables.go is what gen.go makes of the committed data files.
func TestTablesGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the generator")
	}
	dir := t.TempDir()
	for _, f := range []string{"gen.go", "confusables.txt", "DerivedCoreProperties-DICP.txt"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), data, 0o644)
	}
	cmd := exec.Command("go", "run", "gen.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GO111MODULE=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "tables.go"))
	want, _ := os.ReadFile("tables.go")
	if !bytes.Equal(got, want) {
		t.Fatal("tables.go differs from what gen.go makes of the data files: run go generate")
	}
}

func TestMixedScript(t *testing.T) {
	for s, want := range map[string]bool{
		"get_weather": false, "get_weathеr": true, "погода": false, "weather_погода": true,
		"tool_1": false, "καιρός": false, "wεather": true, "cⲟpy": true, "ꓮdd": true,
	} {
		if got := MixedScript(s); got != want {
			t.Errorf("MixedScript(%q) = %v (%v)", s, got, Scripts(s))
		}
	}
	if got := Scripts("cⲟpyꓮ"); len(got) != 3 || got[0] != "Latin" || got[1] != "Coptic" || got[2] != "Lisu" {
		t.Errorf("Scripts = %v", got)
	}
	if !Invisible("a\u200bb") || !Invisible("a\u180bb") || Invisible("ab") || Invisible("a\u00a0b") {
		t.Error("Invisible")
	}
}

func FuzzSkeleton(f *testing.F) {
	for _, tc := range lookalikes {
		f.Add(tc.b)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := Skeleton(s)
		if Skeleton(k) != k {
			t.Fatalf("Skeleton(%q) = %q is not stable: %q", s, k, Skeleton(k))
		}
		if Invisible(k) {
			t.Fatalf("Skeleton(%q) = %q keeps an invisible character", s, k)
		}
	})
}

func BenchmarkSkeleton(b *testing.B) {
	names := []string{"get_weather", "gеt_wеathеr", "ｇｅｔ_ｗｅａｔｈｅｒ", "list_all_files_in_directory"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		Skeleton(names[i%len(names)])
	}
}
