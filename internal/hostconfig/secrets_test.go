package hostconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/internal/redact"
)

// The values an entry is configured with, resolved from the environment
// or written in the file, are what AddSecrets masks; the names of
// variables and headers stay readable, and nothing secret is in the
// entry's JSON form.
func TestEntrySecrets(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "claude_desktop_config.json")
	cfg := `{"mcpServers": {
	  "gh": {"command": "docker", "args": ["run", "-i", "--rm", "-e", "GITHUB_TOKEN=${GH_TOKEN}", "ghcr.io/github/github-mcp-server"],
	         "env": {"API_KEY": "${WEATHER_KEY}", "PLAIN": "written-in-the-file-42"}},
	  "remote": {"url": "https://carol:pa55-in-url@mcp.example/mcp?key=${SEARCH_KEY}", "headers": {"Authorization": "Bearer ${SEARCH_KEY}"}}
	}}`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	secrets := []string{"gh-token-from-env-7731", "weather-key-from-env-1188", "written-in-the-file-42", "pa55-in-url", "carol", "search-key-from-env-9046"}
	es, err := Load(path, "", Options{Home: "/h", Cwd: "/c", Lookup: env(map[string]string{"GH_TOKEN": secrets[0], "WEATHER_KEY": secrets[1], "SEARCH_KEY": secrets[5]})})
	if err != nil {
		t.Fatal(err)
	}
	var s redact.Set
	var text strings.Builder
	for _, e := range es {
		if len(e.Problems) > 0 {
			t.Fatalf("%s: %v", e.Name, e.Problems)
		}
		e.AddSecrets(&s)
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range secrets {
			if strings.Contains(string(b), secret) {
				t.Errorf("%q in the JSON form %s", secret, b)
			}
		}
		for _, x := range []string{string(b), strings.Join(e.Args, " "), e.URL, e.Headers["Authorization"]} {
			text.WriteString(x + "\n")
		}
		for k, v := range e.Env {
			text.WriteString(k + "=" + v + "\n")
		}
	}
	got := s.String(text.String())
	for _, secret := range secrets {
		if strings.Contains(got, secret) {
			t.Errorf("%q left in:\n%s", secret, got)
		}
	}
	for _, keep := range []string{"API_KEY=" + redact.Mask, "PLAIN=" + redact.Mask, "GITHUB_TOKEN=" + redact.Mask, "ghcr.io/github/github-mcp-server"} {
		if !strings.Contains(got, keep) {
			t.Errorf("%q missing from:\n%s", keep, got)
		}
	}
}

// An unresolved placeholder is not masked: the problem that names it must
// stay readable.
func TestEntrySecretsPlaceholder(t *testing.T) {
	e := Entry{Env: map[string]string{"TOKEN": "${input:token}", "MIXED": "literal-part-4471${input:x}"},
		Problems: []string{"env.TOKEN uses ${input:token}, which the host asks for at launch; etdi does not guess it"}}
	var s redact.Set
	e.AddSecrets(&s)
	if got := s.String(e.Problems[0]); got != e.Problems[0] {
		t.Errorf("problem changed: %q", got)
	}
	if got := s.String("literal-part-4471"); got != redact.Mask {
		t.Errorf("literal part of a value not masked: %q", got)
	}
}
