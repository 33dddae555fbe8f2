package hostconfig

import (
	"errors"
	"strings"
	"testing"
)

func TestAddEntry(t *testing.T) {
	stdio := NewEntry{Command: "npx", Args: []string{"-y", "@acme/weather-mcp@1.2.0"}, Env: map[string]string{"LOG_LEVEL": "info"}}
	for _, c := range []struct {
		name, path, host, data string
	}{
		{"a new Claude Desktop file", "claude_desktop_config.json", ClaudeDesktop, ""},
		{"Claude Desktop with other settings", "claude_desktop_config.json", ClaudeDesktop, "{\n  \"globalShortcut\": \"Ctrl+Space\"\n}\n"},
		{"Cursor with comments and a trailing comma", "mcp.json", Cursor, "{\n  // mine\n  \"mcpServers\": {\n    \"notes\": {\"command\": \"notes-mcp\"}, // kept\n  },\n}\n"},
		{"an empty list with a comment", "mcp.json", Cursor, "{\"mcpServers\": { /* none yet */ }}"},
		{"VS Code mcp.json", "mcp.json", VSCode, "{\n\t\"servers\": {}\n}\n"},
		{"VS Code settings.json", "settings.json", VSCode, "{\n  \"editor.fontSize\": 14\n}\n"},
		{"Zed", "settings.json", Zed, "{\n  \"theme\": \"One Dark\"\n}\n"},
		{"Codex", "config.toml", Codex, "model = \"o3\"\n\n[mcp_servers.notes]\ncommand = \"notes-mcp\"\n"},
		{"a new Codex file", "config.toml", Codex, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := AddEntry(c.path, []byte(c.data), c.host, "weather", stdio)
			if err != nil {
				t.Fatal(err)
			}
			es, err := loadData(c.path, out, c.host, Options{})
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var got *Entry
			for i := range es {
				if es[i].Name == "weather" {
					got = &es[i]
				}
			}
			if got == nil || got.Command != "npx" || strings.Join(got.Args, " ") != "-y @acme/weather-mcp@1.2.0" || got.Env["LOG_LEVEL"] != "info" {
				t.Fatalf("read back %+v from\n%s", got, out)
			}
			if len(es) != strings.Count(c.data, "command")+1 {
				t.Errorf("%d entries read back, want the old ones and the new:\n%s", len(es), out)
			}
			// Everything that was there stays, byte for byte: the new text
			// is one insertion.
			if !oneInsertion(c.data, string(out)) {
				t.Fatalf("not a single insertion into\n%s\ngot\n%s", c.data, out)
			}
		})
	}
}

func TestAddRemoteEntry(t *testing.T) {
	out, err := AddEntry("mcp.json", []byte(`{"servers":{}}`), VSCode, "weather", NewEntry{URL: "https://mcp.acme.example/weather", Headers: map[string]string{"X-Tenant": "eu"}})
	if err != nil {
		t.Fatal(err)
	}
	es, err := loadData("mcp.json", out, VSCode, Options{})
	if err != nil || len(es) != 1 || es[0].URL != "https://mcp.acme.example/weather" || es[0].Headers["X-Tenant"] != "eu" {
		t.Fatalf("%+v %v\n%s", es, err, out)
	}
	if _, err := AddEntry("config.toml", nil, Codex, "weather", NewEntry{URL: "https://mcp.acme.example/weather"}); err == nil {
		t.Error("a remote Codex entry written")
	}
}

func TestAddEntryRefuses(t *testing.T) {
	e := NewEntry{Command: "x"}
	existing := `{"mcpServers":{"weather":{"command":"y"}}}`
	var exists *ErrEntryExists
	if _, err := AddEntry("mcp.json", []byte(existing), Cursor, "weather", e); !errors.As(err, &exists) {
		t.Errorf("an existing entry replaced: %v", err)
	}
	if _, err := AddEntry("config.toml", []byte("[mcp_servers.weather]\ncommand = \"y\"\n"), Codex, "weather", e); !errors.As(err, &exists) {
		t.Errorf("an existing Codex entry replaced: %v", err)
	}
	for _, name := range []string{"", "../x", "a b", "-flag", strings.Repeat("a", 200), "we\"ather"} {
		if _, err := AddEntry("mcp.json", nil, Cursor, name, e); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	for _, bad := range []string{`[]`, `{"mcpServers": []}`, `{"mcpServers": {`} {
		if _, err := AddEntry("mcp.json", []byte(bad), Cursor, "weather", e); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, err := AddEntry("mcp.json", nil, Cursor, "weather", NewEntry{Command: "x", URL: "https://a.example"}); err == nil {
		t.Error("an entry with a command and a URL")
	}
}

// oneInsertion reports whether new is old with text inserted at one place.
func oneInsertion(old, new string) bool {
	p := 0
	for p < len(old) && p < len(new) && old[p] == new[p] {
		p++
	}
	s := 0
	for s < len(old)-p && s < len(new)-p && old[len(old)-1-s] == new[len(new)-1-s] {
		s++
	}
	return p+s == len(old)
}
