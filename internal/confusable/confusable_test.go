package confusable

import "testing"

func TestConfusable(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"get_weather", "get_weathеr", true}, // Cyrillic е
		{"get_weather", "gеt_wеathеr", true}, // three Cyrillic е
		{"read_file", "rеad_filе", true},     // Cyrillic е twice
		{"search", "ѕеаrсh", true},           // all Cyrillic
		{"get_weather", "get_wеather", true}, // Cyrillic е in the middle
		{"get_weather", "get\u200b_weather", true},
		{"get_weather", "get_weather\u200d", true},
		{"get_weather", "ｇｅｔ_ｗｅａｔｈｅｒ", true}, // fullwidth
		{"get_weather", "Get_Weather", true},
		{"get_weather", "get-weather", true},
		{"modem_status", "modern_status", true}, // rn / m
		{"list_all", "Iist_aII", true},          // capital I for l
		{"tool_0", "tool_o", true},
		{"llm_call", "l1m_call", true},
		{"get_weather", "get_weather", false}, // the same name is not confusable
		{"get_weather", "get_forecast", false},
		{"read_file", "write_file", false},
		{"search", "research", false},
		{"αβγ", "abc", false}, // Greek β is not b
	} {
		if got := Confusable(tc.a, tc.b); got != tc.want {
			t.Errorf("Confusable(%q, %q) = %v, want %v (skeletons %q %q)", tc.a, tc.b, got, tc.want, Skeleton(tc.a), Skeleton(tc.b))
		}
	}
}

func TestMixedScript(t *testing.T) {
	for s, want := range map[string]bool{
		"get_weather": false, "get_weathеr": true, "погода": false, "weather_погода": true,
		"tool_1": false, "καιρός": false, "wεather": true,
	} {
		if got := MixedScript(s); got != want {
			t.Errorf("MixedScript(%q) = %v (%v)", s, got, Scripts(s))
		}
	}
	if !Invisible("a\u200bb") || Invisible("ab") {
		t.Error("Invisible")
	}
}
