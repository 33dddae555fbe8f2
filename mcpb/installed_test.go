package mcpb

import (
	"os"
	"path/filepath"
	"testing"
)

func TestInstalled(t *testing.T) {
	host := t.TempDir()
	if exts, err := Installed(host); err != nil || len(exts) != 0 {
		t.Fatalf("no extensions directory: %v %v", exts, err)
	}
	write := func(rel, body string) {
		p := filepath.Join(host, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Claude Extensions/b.weather/manifest.json", manifestJSON)
	write("Claude Extensions Settings/b.weather.json", `{"isEnabled": false, "userConfig": {"units": "metric"}}`)
	write("Claude Extensions/a.broken/manifest.json", `{"name": 1}`)
	// A manifest that is a link to a file elsewhere is not read.
	if err := os.MkdirAll(filepath.Join(host, "Claude Extensions", "c.link"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(host, "Claude Extensions", "b.weather", "manifest.json"), filepath.Join(host, "Claude Extensions", "c.link", "manifest.json")); err != nil {
		t.Fatal(err)
	}
	exts, err := Installed(host)
	if err != nil {
		t.Fatal(err)
	}
	if len(exts) != 3 || exts[0].ID != "a.broken" || exts[1].ID != "b.weather" || exts[2].ID != "c.link" {
		t.Fatalf("extensions %+v", exts)
	}
	if exts[0].Err == nil || exts[0].Manifest != nil {
		t.Error("a broken manifest is read")
	}
	if b := exts[1]; b.Err != nil || b.Manifest.Name != "weather" || b.Enabled == nil || *b.Enabled {
		t.Errorf("weather: %+v", b)
	}
	if exts[2].Err == nil {
		t.Error("a linked manifest is read")
	}
}
