//go:build linux

package realclients

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostList is a host whose "mcp list" connects to each configured server
// and prints whether it could.
type hostList struct {
	name   string
	config string   // the configuration file, relative to HOME
	argv   []string // "mcp list", the program relative to testdata/clients
	setup  func(t *testing.T, home, work string)
}

var hostLists = []hostList{
	{name: "claude", config: ".claude.json", argv: []string{"node_modules/.bin/claude", "mcp", "list"}},
	{name: "gemini", config: ".gemini/settings.json", argv: []string{"node_modules/.bin/gemini", "mcp", "list"},
		setup: func(t *testing.T, home, work string) {
			// Gemini CLI starts no server of a folder the person has not
			// trusted.
			b, _ := json.Marshal(map[string]string{work: "TRUST_FOLDER"})
			if err := os.WriteFile(filepath.Join(home, ".gemini", "trustedFolders.json"), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
}

// listStatus is what "mcp list" says of the server named everything: the
// words after the last " - " of its line ("✔ Connected", "Connected",
// "✗ Failed to connect", "Disconnected"...), without the status sign.
func listStatus(out string) string {
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if !strings.Contains(l, "everything:") {
			continue
		}
		i := strings.LastIndex(l, " - ")
		if i < 0 {
			return l
		}
		return strings.TrimLeft(l[i+3:], "✔✓✗○ ")
	}
	return "not listed"
}

// Claude Code's and Gemini CLI's "mcp list" report server-everything
// connected through the configuration etdi wrap rewrote (after etdi
// check --yes of that configuration), as they do for the configuration
// before it was wrapped. Both run offline, without logging in, in a
// private HOME.
func TestHostsMCPList(t *testing.T) {
	t.Parallel()
	needClients(t)
	for _, h := range hostLists {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			home := etdiDir(t)
			work := filepath.Join(home, "work")
			config := filepath.Join(home, h.config)
			if err := os.MkdirAll(filepath.Dir(config), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(work, 0o700); err != nil {
				t.Fatal(err)
			}
			b, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{
				"everything": map[string]any{"command": everything, "args": []string{}}}}, "", "  ")
			if err := os.WriteFile(config, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if h.setup != nil {
				h.setup(t, home, work)
			}
			list := func() string {
				t.Helper()
				env := clientEnv(home, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
				so, se, _ := run(t, work, env, append([]string{filepath.Join(clientsDir, h.argv[0])}, h.argv[1:]...)...)
				return so + se
			}
			before := list()
			if got := listStatus(before); got != "Connected" {
				t.Fatalf("%s mcp list of the configuration as it was: %q\n%s", h.name, got, before)
			}

			etdi(t, home, "check", "--trust", "trust.json", "--pins", "pins.db", "--config", config, "--yes")
			etdi(t, home, "wrap", "--trust", "trust.json", "--pins", "pins.db", "--config", config)
			wrapped, err := os.ReadFile(config)
			if err != nil || !strings.Contains(string(wrapped), etdiBin) {
				t.Fatalf("etdi wrap left the configuration: %v\n%s", err, wrapped)
			}
			after := list()
			if got := listStatus(after); got != "Connected" {
				t.Fatalf("%s mcp list of the wrapped configuration: %q (before wrapping: Connected)\n%s\n%s", h.name, got, after, wrapped)
			}
		})
	}
}
