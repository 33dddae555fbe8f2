package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestWalkthrough runs every `sh` block of docs/walkthrough.md, in order,
// in a fresh home directory with etdi and the example server on the PATH,
// as a new user would type them. A line ending in "# exit N" must exit N,
// every other line 0; so the walk-through cannot drift from what etdi
// does.
func TestWalkthrough(t *testing.T) {
	t.Parallel() // its own folder, servers and store
	doc, err := os.ReadFile("../../docs/walkthrough.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)\n```sh\n(.*?)\n```\n").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 4 {
		t.Fatalf("only %d sh blocks in the walk-through", len(blocks))
	}
	root := t.TempDir()
	bin, home := filepath.Join(root, "bin"), filepath.Join(root, "home")
	os.MkdirAll(home, 0o755)
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	buildWeather(t, bin, "weather", "")
	if err := os.Symlink(etdiBin, filepath.Join(bin, "etdi")); err != nil {
		t.Fatal(err)
	}

	exitRE := regexp.MustCompile(`#\s*exit (\d+)`)
	var script strings.Builder
	script.WriteString("want() { if [ \"$2\" != \"$1\" ]; then printf 'walk-through line exited %s, want %s: %s\\n' \"$2\" \"$1\" \"$3\" >&2; exit 99; fi; }\n")
	lines := 0
	for _, b := range blocks {
		for _, line := range strings.Split(b[1], "\n") {
			if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			want := "0"
			if m := exitRE.FindStringSubmatch(line); m != nil {
				want = m[1]
			}
			lines++
			fmt.Fprintf(&script, "printf '$ %%s\\n' %s\n%s\nwant %s $? %s\n", shQuote(line), line, want, shQuote(line))
		}
	}
	cmd := exec.Command("bash", "-c", script.String())
	cmd.Dir = home
	cmd.Env = []string{"HOME=" + home, "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "LANG=C.UTF-8"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the walk-through failed (%v):\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "OK weather.etdi.json: signature verified") {
		t.Fatalf("walk-through output lacks the verification headline:\n%s", out.String())
	}
	// The shell host's two sessions through etdi run: the approved tool
	// called, then the rug pull listed as nothing and refused.
	for _, want := range []string{`"text":"sunny in Oslo"`, `"tools":[]}`, `"code":-32090`, `withheld tool "get_weather": definition_changed`} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("walk-through output lacks %s:\n%s", want, out.String())
		}
	}
	t.Logf("%d walk-through lines ran as written", lines)
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
