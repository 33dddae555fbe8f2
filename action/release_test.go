package action

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestREADMEActionSnippets checks the YAML snippets of the README and the
// manual that use the action against action.yml: every input they pass exists, and each
// command shown is one the action takes.
func TestREADMEActionSnippets(t *testing.T) {
	t.Parallel()
	a := loadAction(t)
	readme := userDocs(t)
	blocks := regexp.MustCompile("(?s)\n```yaml\n(.*?)\n```\n").FindAllStringSubmatch(readme, -1)
	seen := map[string]bool{}
	for _, b := range blocks {
		var doc struct {
			Steps []actionStep `yaml:"steps"`
		}
		if err := yaml.Unmarshal([]byte(b[1]), &doc); err != nil {
			t.Fatalf("README YAML block: %v\n%s", err, b[1])
		}
		for _, s := range doc.Steps {
			if !strings.HasPrefix(s.Uses, "etdi-dev/etdi@") {
				continue
			}
			for k := range s.With {
				if _, ok := a.Inputs[k]; !ok {
					t.Errorf("README passes input %q, which action.yml does not declare", k)
				}
			}
			seen[s.With["command"]] = true
		}
	}
	if !seen["sign"] || !seen["check"] || len(seen) != 2 {
		t.Errorf("README shows the commands %v, want sign and check", seen)
	}
}

// TestReleaseConfig checks .goreleaser.yaml and the release workflow
// against what docs/ci.md's "Releases" promises: the six platforms, a
// checksums file, an SBOM per archive, a keyless cosign bundle of the
// checksums, the tag as etdi's version, and a tag-triggered workflow with
// the OIDC permission, pinned actions and the tool versions
// scripts/release-check uses. (scripts/release-check runs the build.)
func TestReleaseConfig(t *testing.T) {
	t.Parallel()
	var cfg struct {
		Version int `yaml:"version"`
		Builds  []struct {
			Main    string   `yaml:"main"`
			Goos    []string `yaml:"goos"`
			Goarch  []string `yaml:"goarch"`
			Ldflags []string `yaml:"ldflags"`
		} `yaml:"builds"`
		Archives []struct {
			Formats         []string `yaml:"formats"`
			FormatOverrides []struct {
				Goos    string   `yaml:"goos"`
				Formats []string `yaml:"formats"`
			} `yaml:"format_overrides"`
		} `yaml:"archives"`
		Checksum struct {
			NameTemplate string `yaml:"name_template"`
			Algorithm    string `yaml:"algorithm"`
		} `yaml:"checksum"`
		Sboms []struct {
			Artifacts string `yaml:"artifacts"`
		} `yaml:"sboms"`
		Signs []struct {
			Cmd       string   `yaml:"cmd"`
			Artifacts string   `yaml:"artifacts"`
			Signature string   `yaml:"signature"`
			Args      []string `yaml:"args"`
		} `yaml:"signs"`
	}
	b, err := os.ReadFile(filepath.Join(repoRoot, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Version != 2 || len(cfg.Builds) != 1 {
		t.Fatalf("version %d, %d builds", cfg.Version, len(cfg.Builds))
	}
	bd := cfg.Builds[0]
	slices.Sort(bd.Goos)
	slices.Sort(bd.Goarch)
	if bd.Main != "./cmd/etdi" || !slices.Equal(bd.Goos, []string{"darwin", "linux", "windows"}) || !slices.Equal(bd.Goarch, []string{"amd64", "arm64"}) {
		t.Errorf("build %+v", bd)
	}
	if !strings.Contains(strings.Join(bd.Ldflags, " "), "-X main.version=v{{ .Version }}") {
		t.Errorf("ldflags %q do not set etdi's version", bd.Ldflags)
	}
	if len(cfg.Archives) != 1 || !slices.Equal(cfg.Archives[0].Formats, []string{"tar.gz"}) || len(cfg.Archives[0].FormatOverrides) != 1 ||
		cfg.Archives[0].FormatOverrides[0].Goos != "windows" || !slices.Equal(cfg.Archives[0].FormatOverrides[0].Formats, []string{"zip"}) {
		t.Errorf("archives %+v", cfg.Archives)
	}
	if cfg.Checksum.Algorithm != "sha256" || cfg.Checksum.NameTemplate != "{{ .ProjectName }}_{{ .Version }}_checksums.txt" {
		t.Errorf("checksum %+v", cfg.Checksum)
	}
	if len(cfg.Sboms) != 1 || cfg.Sboms[0].Artifacts != "archive" {
		t.Errorf("sboms %+v", cfg.Sboms)
	}
	if len(cfg.Signs) != 1 || cfg.Signs[0].Cmd != "cosign" || cfg.Signs[0].Artifacts != "checksum" ||
		cfg.Signs[0].Signature != "${artifact}.sigstore.json" ||
		!slices.Equal(cfg.Signs[0].Args, []string{"sign-blob", "--bundle=${signature}", "${artifact}", "--yes"}) {
		t.Errorf("signs %+v", cfg.Signs)
	}

	text := readFile(t, filepath.Join(repoRoot, ".github", "workflows", "release.yml"))
	var w workflow
	if err := yaml.Unmarshal([]byte(text), &w); err != nil {
		t.Fatal(err)
	}
	if push, _ := w.On["push"].(map[string]any); push == nil || push["tags"] == nil {
		t.Errorf("release workflow triggers %v", w.On)
	}
	if w.Permissions["id-token"] != "write" || w.Permissions["contents"] != "write" {
		t.Errorf("release workflow permissions %v", w.Permissions)
	}
	checkPinned(t, "release.yml", text, nil)
	if !strings.Contains(text, "goreleaser release --clean") {
		t.Error("the release workflow does not run goreleaser release")
	}
	script := readFile(t, filepath.Join(repoRoot, "scripts", "release-check"))
	for _, tool := range []string{"GORELEASER_VERSION", "SYFT_VERSION"} {
		m := regexp.MustCompile(`(?m)^` + tool + `=(v[0-9.]+)`).FindStringSubmatch(script)
		if m == nil || !strings.Contains(text, tool+": "+m[1]) {
			t.Errorf("%s differs between scripts/release-check (%v) and the release workflow", tool, m)
		}
	}
	// README's verification names the files and the workflow identity.
	readme := readFile(t, filepath.Join(repoRoot, "README.md"))
	for _, s := range []string{"etdi_1.2.3_checksums.txt.sigstore.json", "https://github.com/etdi-dev/etdi/.github/workflows/release.yml@refs/tags/v1.2.3"} {
		if !strings.Contains(readme, s) {
			t.Errorf("README does not show %q", s)
		}
	}
}

// TestREADMESnippetsInstallEtdi: a README workflow snippet that runs etdi
// in a run: step installs it in an earlier step (go install of
// ./cmd/etdi from a checkout of etdi's source, with Go set up), or gets it
// from the etdi action; a runner has no etdi of its own.
func TestREADMESnippetsInstallEtdi(t *testing.T) {
	t.Parallel()
	readme := userDocs(t)
	blocks := regexp.MustCompile("(?s)\n```yaml\n(.*?)\n```\n").FindAllStringSubmatch(readme, -1)
	runs := 0
	for _, b := range blocks {
		var doc struct {
			Steps []actionStep `yaml:"steps"`
		}
		if err := yaml.Unmarshal([]byte(b[1]), &doc); err != nil {
			t.Fatalf("README YAML block: %v\n%s", err, b[1])
		}
		installed, src, goSetUp := false, false, false
		for _, s := range doc.Steps {
			switch {
			case strings.HasPrefix(s.Uses, "actions/checkout@") && s.With["repository"] == "etdi-dev/etdi":
				src = true
			case strings.HasPrefix(s.Uses, "actions/setup-go@"):
				goSetUp = true
			case strings.HasPrefix(s.Uses, "etdi-dev/etdi@"):
				installed = true
			case regexp.MustCompile(`(^|&& )go install \./cmd/etdi$`).MatchString(strings.TrimSpace(s.Run)):
				if !src || !goSetUp {
					t.Errorf("README installs etdi without its source or Go:\n%s", b[1])
				}
				installed = true
			case regexp.MustCompile(`(^|\n|&& )etdi `).MatchString(s.Run):
				runs++
				if !installed {
					t.Errorf("README runs etdi before installing it:\n%s", b[1])
				}
			}
		}
	}
	if runs < 2 {
		t.Errorf("README shows %d run: steps of etdi", runs)
	}
}

// userDocs is the text of the documents a user copies workflow snippets
// from: the README and the manual pages that show workflows.
func userDocs(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, f := range []string{"README.md", "docs/walkthrough.md", "docs/ci.md"} {
		b.WriteString(readFile(t, filepath.Join(repoRoot, f)))
		b.WriteString("\n")
	}
	return b.String()
}
