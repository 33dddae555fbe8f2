package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildInfoFrom(t *testing.T) {
	installed := &debug.BuildInfo{Main: debug.Module{Path: "github.com/etdi-dev/etdi", Version: "v1.4.2"}}
	if b := buildInfoFrom("dev", installed); b.Version != "v1.4.2" || b.GoVersion != runtime.Version() {
		t.Fatalf("go install build: %+v", b)
	}
	checkout := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}
	b := buildInfoFrom("dev", checkout)
	if b.Version != "dev" || b.Commit != "0123456789abcdef0123" || !b.Modified {
		t.Fatalf("checkout build: %+v", b)
	}
	if s := b.String(); s != "etdi dev (commit 0123456789ab-dirty, "+runtime.Version()+")" {
		t.Fatalf("String() = %q", s)
	}
	// A release build's linked version wins over the module version.
	if b := buildInfoFrom("v2.0.0", installed); b.Version != "v2.0.0" {
		t.Fatalf("release build: %+v", b)
	}
}

// TestCLIVersion runs a binary built with a linked version: `etdi
// version`, `etdi --version` and SARIF's driver.version agree.
func TestCLIVersion(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "etdi")
	if out, err := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil || !strings.HasPrefix(string(out), "etdi v9.8.7 (") || !strings.Contains(string(out), runtime.Version()) {
			t.Fatalf("etdi %v: %v %q", args, err, out)
		}
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	var b buildInfo
	if err != nil || json.Unmarshal(out, &b) != nil || b.Version != "v9.8.7" {
		t.Fatalf("version --json: %v %s", err, out)
	}
	// SARIF carries the same version.
	vec, _ := filepath.Abs("../../testdata/vectors/valid_ed25519")
	cmd := exec.Command(bin, "check", "--trust", filepath.Join(vec, "trust.json"), "--pins", filepath.Join(dir, "pins.db"),
		"--bundle", filepath.Join(vec, "bundle.etdi.json"), "--tools", filepath.Join(vec, "tools.json"), "--sarif")
	cmd.Env = []string{"HOME=" + dir}
	sarif, _ := cmd.Output()
	var doc struct {
		Runs []struct {
			Tool struct {
				Driver struct{ Version string } `json:"driver"`
			} `json:"tool"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(sarif, &doc); err != nil || len(doc.Runs) != 1 || doc.Runs[0].Tool.Driver.Version != "v9.8.7" {
		t.Fatalf("SARIF driver.version is not v9.8.7 (%v):\n%s", err, sarif)
	}
}
