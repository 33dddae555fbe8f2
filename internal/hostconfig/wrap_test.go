package hostconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// testEtdi is an etdi program for the tests: a file of that name, which
// Wrap writes into entries and Load proves them wrapped by.
var testEtdi string

// testGate is the user's etdi in the tests.
func testGate() Gate { return Gate{Etdi: []string{testEtdi}} }

// mine replaces the etdi path of an expected text with testEtdi.
func mine(s string) string { return strings.ReplaceAll(s, "/opt/etdi/bin/etdi", testEtdi) }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hostconfig-etdi")
	if err != nil {
		panic(err)
	}
	testEtdi = filepath.Join(dir, "bin", "etdi")
	if err := os.MkdirAll(filepath.Dir(testEtdi), 0o755); err != nil {
		panic(err)
	}
	if err := os.WriteFile(testEtdi, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// hostFiles are realistic configuration files of every supported host,
// with the status Wrap gives each entry.
var hostFiles = []struct {
	file, host string
	want       map[string]string
}{
	{"claude_desktop_config.json", ClaudeDesktop, map[string]string{"filesystem": StatusWrapped, "weather": StatusWrapped, "time": StatusWrapped}},
	{"dot.claude.json", ClaudeCode, map[string]string{"sentry": StatusWrapped, "local": StatusWrapped}},
	{"cursor-mcp.json", Cursor, map[string]string{"remote": StatusWrapped, "docker": StatusWrapped}},
	{"vscode-mcp.json", VSCode, map[string]string{"github": StatusWrapped, "local": StatusWrapped}},
	{"vscode-settings.json", VSCode, map[string]string{"fetch": StatusWrapped}},
	{"cline_mcp_settings.json", Cline, map[string]string{"github": StatusWrapped, "off": StatusDisabled}},
	{"mcp_config.json", Windsurf, map[string]string{"remote": StatusWrapped, "git": StatusWrapped}},
	{"gemini-settings.json", Gemini, map[string]string{"gem": StatusWrapped, "old": StatusRefused, "py": StatusWrapped}},
	{"zed-settings.json", Zed, map[string]string{"old-form": StatusWrapped, "new-form": StatusWrapped, "bare": StatusWrapped, "extension": StatusSkipped}},
	{"kiro-mcp.json", Kiro, map[string]string{"aws-docs": StatusWrapped}},
	{"amazonq-mcp.json", AmazonQ, map[string]string{"git": StatusWrapped}},
	{"config.toml", Codex, map[string]string{"docs": StatusWrapped, "time server": StatusWrapped, "remote": StatusWrapped, "withauth": StatusRefused}},
}

func statuses(r *Result) map[string]string {
	m := map[string]string{}
	for _, o := range r.Outcomes {
		m[o.Name] = o.Status
	}
	return m
}

func crlf(b []byte) []byte {
	return bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
}

// Every host's file: wrap rewrites what it can, Load sees the same
// servers through etdi run, a second wrap changes nothing, and unwrap
// gives back the original bytes; with LF and with CRLF line endings.
func TestWrapRoundTripEveryHost(t *testing.T) {
	for _, hf := range hostFiles {
		orig, err := os.ReadFile("testdata/wrap/" + hf.file)
		if err != nil {
			t.Fatal(err)
		}
		for _, data := range [][]byte{orig, crlf(orig)} {
			name := hf.file
			if bytes.Contains(data, []byte("\r\n")) {
				name += " (CRLF)"
			}
			t.Run(name, func(t *testing.T) {
				path := "/cfg/" + hf.file
				o := WrapOptions{Host: hf.host, Etdi: testEtdi, Cwd: "PROJECT"}
				res, err := Wrap(path, data, o)
				if err != nil {
					t.Fatal(err)
				}
				if got := statuses(res); !reflect.DeepEqual(got, hf.want) {
					t.Fatalf("statuses %v, want %v", got, hf.want)
				}
				for _, c := range []string{"//", "/*", "#"} {
					if bytes.Count(res.Data, []byte(c)) != bytes.Count(data, []byte(c)) {
						t.Errorf("wrap changed the number of %q:\n%s", c, res.Data)
					}
				}
				before, err := loadData(path, data, hf.host, Options{Cwd: "PROJECT", Gate: testGate()})
				if err != nil {
					t.Fatal(err)
				}
				after, err := loadData(path, res.Data, hf.host, Options{Cwd: "PROJECT", Gate: testGate()})
				if err != nil {
					t.Fatalf("wrapped file does not load: %v\n%s", err, res.Data)
				}
				for i := range after {
					w := hf.want[after[i].Name] == StatusWrapped
					if after[i].Wrapped != w {
						t.Errorf("%s: Wrapped=%v, want %v", after[i].Name, after[i].Wrapped, w)
					}
					if after[i].Command != before[i].Command || !reflect.DeepEqual(after[i].Args, before[i].Args) || after[i].URL != before[i].URL || !sameMap(after[i].Headers, before[i].Headers) {
						t.Errorf("%s: seen through as %+v, was %+v", after[i].Name, after[i], before[i])
					}
				}
				if bytes.Contains(res.Data, []byte(`"--header", `)) || bytes.Contains(res.Data, []byte("Bearer t\"]")) {
					t.Errorf("a header value is in the arguments:\n%s", res.Data)
				}
				again, err := Wrap(path, res.Data, o)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(again.Data, res.Data) || len(again.Records) != 0 {
					t.Fatalf("second wrap changed the file:\n%s", again.Data)
				}
				for n, s := range statuses(again) {
					if hf.want[n] == StatusWrapped && s != StatusAlreadyWrapped {
						t.Errorf("second wrap: %s is %q, want already wrapped", n, s)
					}
				}
				un, err := Unwrap(path, res.Data, UnwrapOptions{Host: hf.host, Records: res.Records, Cwd: "PROJECT", Gate: testGate()})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(un.Data, data) {
					t.Fatalf("unwrap did not restore the file:\n--- got\n%s\n--- want\n%s", un.Data, data)
				}
				if len(un.Records) != 0 || un.Count(StatusUnwrapped) != len(res.Records) {
					t.Fatalf("unwrap outcomes %+v, records left %d", un.Outcomes, len(un.Records))
				}
			})
		}
	}
}

// Only the bytes of the replaced values change: the text before the
// first change and after the last one is the original's.
func TestWrapKeepsEverythingElse(t *testing.T) {
	data, _ := os.ReadFile("testdata/wrap/vscode-mcp.json")
	res, err := Wrap("/cfg/.vscode/mcp.json", data, WrapOptions{Host: VSCode, Etdi: testEtdi})
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []string{"// trailing", "// VS Code allows comments and trailing commas.", `/* a comment, "with quotes" */`, "// trailing", `"envFile": "${workspaceFolder}/.env",`, "/* prompted */", "// remote"} {
		if !bytes.Contains(res.Data, []byte(keep)) {
			t.Errorf("lost %q:\n%s", keep, res.Data)
		}
	}
	want := `"command": "/opt/etdi/bin/etdi",   /* a comment, "with quotes" */
      "args": ["run", "--name", "local", "--", "${workspaceFolder}/bin/server", "--root", "${workspaceFolder}", // trailing
      ],`
	if !bytes.Contains(res.Data, []byte(mine(want))) {
		t.Errorf("stdio entry not rewritten as expected:\n%s", res.Data)
	}
	want = `"type": "stdio",
      "command": "/opt/etdi/bin/etdi", "args": ["run", "--name", "github", "--url", "https://api.githubcopilot.com/mcp/", "--header-env", "Authorization=ETDI_HEADER_1"], // remote
      "env": {"ETDI_HEADER_1": "Bearer ${input:token}"}, /* prompted */`
	if !bytes.Contains(res.Data, []byte(mine(want))) {
		t.Errorf("HTTP entry not rewritten as expected:\n%s", res.Data)
	}
	first, last := res.Changes[0], res.Changes[len(res.Changes)-1]
	if !bytes.Equal(data[:first.OldStart], res.Data[:first.NewStart]) || !bytes.Equal(data[last.OldEnd:], res.Data[last.NewEnd:]) {
		t.Error("text outside the changes differs")
	}
}

// Codex: the command and args values are replaced in place, comments
// kept; an entry without args gets an args line after its command line.
func TestWrapCodexText(t *testing.T) {
	data, _ := os.ReadFile("testdata/wrap/config.toml")
	res, err := Wrap("/cfg/config.toml", data, WrapOptions{Host: Codex, Etdi: testEtdi})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"command = \"/opt/etdi/bin/etdi\"   # the launcher\nargs = [\"run\", \"--name\", \"docs\", \"--\", \"npx\",\n  \"-y\",  # yes\n  '@acme/docs-mcp',\n]\nenv =",
		"command = \"/opt/etdi/bin/etdi\"\nargs = [\"run\", \"--name\", \"time server\", \"--\", 'uvx']\n",
		"command = \"/opt/etdi/bin/etdi\"\nargs = [\"run\", \"--name\", \"remote\", \"--url\", \"https://mcp.example.com/mcp\"]\n",
	} {
		if !strings.Contains(string(res.Data), mine(want)) {
			t.Errorf("missing %q in:\n%s", want, res.Data)
		}
	}
	for _, o := range res.Outcomes {
		if o.Name == "withauth" && !strings.Contains(o.Reason, "bearer_token_env_var") {
			t.Errorf("refusal does not say why: %q", o.Reason)
		}
	}
}
