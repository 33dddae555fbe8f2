package action

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/registry"
	"go.yaml.in/yaml/v3"
)

// registryServerJSON is the weather server's server.json: the demo
// manifest's server as the MCP Registry publishes it.
const registryServerJSON = `{
  "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
  "name": "io.github.acme/weather",
  "version": "1.2.0",
  "x-acme": {"kept": [1, 2]},
  "remotes": [{"type": "streamable-http", "url": "https://mcp.acme.example/weather"}]
}
`

// registryProvider is provider's workspace with the demo manifest bound
// to the registry entry of registryServerJSON, at mcp/server.json.
func registryProvider(t *testing.T) string {
	ws := provider(t)
	path := filepath.Join(ws, "mcp", "weather.manifest.json")
	m := readFile(t, path)
	bound := strings.Replace(m, `"server": {"name": "weather", "version": "1.2.0"}`,
		`"server": {"name": "weather", "version": "1.2.0", "registryName": "io.github.acme/weather", "endpoints": ["https://mcp.acme.example/weather"]}`, 1)
	if bound == m {
		t.Fatal("the demo manifest's server section changed: update registryProvider")
	}
	if err := os.WriteFile(path, []byte(bound), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "mcp", "server.json"), []byte(registryServerJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

// TestActionSignServerJSON signs and records the bundle in server.json,
// as a workflow does before mcp-publisher publish: server.json then names
// the bundle's URL and the digest the action outputs, and keeps the rest.
// A server.json that disagrees with the manifest fails the step with
// nothing signed or changed, and server-json without bundle-url stops
// before etdi runs.
func TestActionSignServerJSON(t *testing.T) {
	t.Parallel()
	ws := registryProvider(t)
	const url = "https://github.com/acme/weather/releases/download/v1.2.0/weather.etdi.json"
	sign := func(serverJSON, bundleURL string) *runResult {
		return runAction(t, ws, map[string]string{
			"command":     "sign",
			"manifest":    "mcp/weather.manifest.json",
			"key":         filepath.Join(ws, "keys", "acme.key"),
			"server-json": serverJSON,
			"bundle-url":  bundleURL,
		}, map[string]string{"ETDI_PASSWORD": password})
	}
	res := sign("mcp/server.json", url)
	if res.Failed != "" {
		t.Fatalf("step %q failed (exit %d):\n%s", res.Failed, res.ExitCode, res.Log)
	}
	if res.Outputs["server-json"] != "mcp/server.json" {
		t.Errorf("server-json output %q", res.Outputs["server-json"])
	}
	doc := readFile(t, filepath.Join(ws, "mcp", "server.json"))
	s, err := registry.ParseServerJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	m, ok, err := s.EtdiMeta()
	if !ok || err != nil || m.Bundle != url || m.Digest != res.Outputs["digest"] || m.Digest != sha256File(t, filepath.Join(ws, "mcp", "weather.etdi.json")) {
		t.Fatalf("server.json's dev.etdi: %+v %v %v, digest output %q\n%s", m, ok, err, res.Outputs["digest"], doc)
	}
	if !strings.Contains(doc, `"x-acme": {`) || strings.Index(doc, `"x-acme"`) > strings.Index(doc, `"remotes"`) {
		t.Errorf("server.json lost a member or its order:\n%s", doc)
	}
	if !strings.Contains(res.Summary, "mcp-publisher publish") {
		t.Errorf("job summary: %q", res.Summary)
	}
	mustEtdi(t, ws, "manifest", "check", "--server-json", "mcp/server.json", "mcp/weather.manifest.json")

	// Another registry name: the step fails, nothing is signed or changed.
	other := strings.Replace(registryServerJSON, "io.github.acme/weather", "io.github.evil/weather", 1)
	if err := os.WriteFile(filepath.Join(ws, "evil.json"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(ws, "mcp", "weather.etdi.json"))
	res = sign("evil.json", url)
	if res.Failed != "etdi sign" || res.Outputs["digest"] != "" || res.Outputs["server-json"] != "" {
		t.Fatalf("another registry name: failed %q, outputs %v\n%s", res.Failed, res.Outputs, res.Log)
	}
	if !strings.Contains(res.Log, "the bundle is for io.github.acme/weather, the entry is io.github.evil/weather") {
		t.Errorf("the log does not name the difference:\n%s", res.Log)
	}
	if _, err := os.Stat(filepath.Join(ws, "mcp", "weather.etdi.json")); err == nil {
		t.Error("a bundle was signed for a server.json that disagrees")
	}
	if readFile(t, filepath.Join(ws, "evil.json")) != other {
		t.Error("a server.json that disagrees was rewritten")
	}

	res = sign("mcp/server.json", "")
	if res.Failed != "etdi sign" || !hasCommand(res, "::error title=etdi::inputs server-json and bundle-url go together") || strings.Contains(res.Log, "etdi: signed") {
		t.Errorf("server-json without bundle-url: failed %q, commands %q", res.Failed, res.Commands)
	}
}

// TestRegistryWorkflow checks the registry release workflow docs/ci.md
// shows: it is examples/workflows/provider-registry.yml as it is, and it
// signs with server-json and a bundle-url that names the bundle it
// attaches, then attaches the bundle, and only then runs mcp-publisher
// publish, so the registry never names a bundle that is not there.
func TestRegistryWorkflow(t *testing.T) {
	t.Parallel()
	text := readFile(t, filepath.Join(repoRoot, "examples", "workflows", "provider-registry.yml"))
	_, body, ok := strings.Cut(text, "\nname: ")
	if !ok || !strings.Contains(readFile(t, filepath.Join(repoRoot, "docs", "ci.md")), "```yaml\nname: "+body+"```\n") {
		t.Fatal("docs/ci.md does not show examples/workflows/provider-registry.yml as it is")
	}
	var w workflowFile
	if err := yaml.Unmarshal([]byte(text), &w); err != nil {
		t.Fatal(err)
	}
	steps := w.Jobs["release"].Steps
	at := func(pred func(actionStep) bool) int {
		for i, s := range steps {
			if pred(s) {
				return i
			}
		}
		return -1
	}
	sign := at(func(s actionStep) bool {
		return strings.HasPrefix(s.Uses, "etdi-dev/etdi@") && s.With["command"] == "sign"
	})
	if sign < 0 {
		t.Fatal("the workflow does not sign with the action")
	}
	s := steps[sign]
	if s.With["server-json"] != "server.json" || !strings.HasSuffix(s.With["bundle-url"], "/"+s.With["bundle"]) || !strings.HasPrefix(s.With["bundle-url"], "https://") {
		t.Errorf("the sign step's inputs: %v", s.With)
	}
	npm := at(func(s actionStep) bool { return strings.Contains(s.Run, "npm publish") })
	check := at(func(s actionStep) bool {
		return strings.Contains(s.Run, "etdi manifest check") && strings.Contains(s.Run, "--server-json")
	})
	attach := at(func(s actionStep) bool { return strings.Contains(s.Run, "gh release upload") })
	publish := at(func(s actionStep) bool { return strings.Contains(s.Run, "mcp-publisher publish") })
	if !(0 <= npm && npm < sign && sign < check && check < attach && attach < publish) {
		t.Errorf("steps out of order: npm publish %d, sign %d, check %d, attach %d, mcp-publisher publish %d", npm, sign, check, attach, publish)
	}
}
