package hostconfig

import (
	"os"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/internal/mcpclient"
)

// Every host declares a valid capabilities object, with where it was
// read; those observed are as their hosts sent them, and docs/hosts.md
// ("How each host reads an entry") shows each.
func TestHostCapabilities(t *testing.T) {
	spec, err := os.ReadFile("../../docs/hosts.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(spec), "**Client capabilities.**")
	table, _, _ = strings.Cut(table, "A file of no known host declares")
	for _, l := range append(append([]Launch{}, Launches...), unknownLaunch) {
		if err := mcpclient.ValidCapabilities([]byte(l.Capabilities)); err != nil || l.CapabilitiesSource == "" {
			t.Errorf("%s: capabilities %s (%v), source %q", l.Name, l.Capabilities, err, l.CapabilitiesSource)
		}
		if l.Host != "" && !strings.Contains(table, "| "+l.Name+" | `"+l.Capabilities+"` |") {
			t.Errorf("docs/hosts.md does not show that %s declares %s", l.Name, l.Capabilities)
		}
	}
	for host, want := range map[string]string{
		ClaudeCode: `{"roots":{},"elicitation":{}}`,
		Gemini:     `{"roots":{"listChanged":true}}`,
		Codex:      `{"experimental":{"codex/auth-change":{}},"elicitation":{"form":{},"url":{}}}`,
		Cursor:     defaultCapabilities,
	} {
		if got := LaunchOf(host).Capabilities; got != want {
			t.Errorf("%s declares %s, want %s", host, got, want)
		}
	}
	if LaunchOf("no such host").Capabilities != defaultCapabilities {
		t.Error("a file of no known host does not declare every capability")
	}
}
