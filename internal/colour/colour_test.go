package colour

import (
	"strings"
	"testing"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// Colour on a terminal only, unless asked for; NO_COLOR and TERM=dumb
// turn off automatic colour, never an explicit --color always.
func TestEnabled(t *testing.T) {
	for _, c := range []struct {
		mode     Mode
		terminal bool
		env      map[string]string
		want     bool
	}{
		{Auto, true, nil, true},
		{Auto, false, nil, false}, // a pipe
		{Auto, true, map[string]string{"NO_COLOR": "1"}, false},
		{Auto, true, map[string]string{"NO_COLOR": ""}, true}, // set but empty: no-color.org
		{Auto, true, map[string]string{"TERM": "dumb"}, false},
		{Always, false, nil, true},
		{Always, true, map[string]string{"NO_COLOR": "1"}, true},
		{Never, true, nil, false},
		{Never, false, nil, false},
	} {
		if got := Enabled(c.mode, c.terminal, env(c.env)); got != c.want {
			t.Errorf("Enabled(%v, terminal %v, %v) = %v, want %v", c.mode, c.terminal, c.env, got, c.want)
		}
	}
}

func TestParseMode(t *testing.T) {
	for s, want := range map[string]Mode{"auto": Auto, "always": Always, "never": Never, "NEVER": Never} {
		if m, err := ParseMode(s); err != nil || m != want {
			t.Errorf("ParseMode(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := ParseMode("sometimes"); err == nil || !strings.Contains(err.Error(), Modes) {
		t.Errorf("ParseMode(sometimes): %v", err)
	}
}

// Off, a Painter returns the text unchanged; on, it wraps it in one
// colour code and a reset, and nothing else.
func TestPainter(t *testing.T) {
	var off Painter
	for _, f := range []func(string) string{off.Good, off.Warn, off.Bad, off.Strong} {
		if got := f("ok"); got != "ok" {
			t.Errorf("off: %q", got)
		}
	}
	on := New(true)
	if got := on.Good("ok"); got != "\x1b[32mok\x1b[0m" {
		t.Errorf("Good: %q", got)
	}
	if got := on.Bad("blocked"); got != "\x1b[1;31mblocked\x1b[0m" {
		t.Errorf("Bad: %q", got)
	}
	if got := on.Warn(""); got != "" {
		t.Errorf("empty text painted: %q", got)
	}
}
