package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// hostJS is the scripted MCP host written with the TypeScript SDK.
func hostJS() string { return filepath.Join(mcpDir, "host-client.mjs") }

// transcript is what host-client.mjs received (see its header comment).
type transcript struct {
	Initialize struct {
		ServerInfo      json.RawMessage `json:"serverInfo"`
		Instructions    *string         `json:"instructions"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ProtocolVersion string          `json:"protocolVersion"`
	} `json:"initialize"`
	Steps         []hostStep `json:"steps"`
	Notifications []struct {
		Seq    int             `json:"seq"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	} `json:"notifications"`
	Elicitations []struct {
		Seq    int             `json:"seq"`
		ID     json.RawMessage `json:"id"`
		Params json.RawMessage `json:"params"`
		Action *string         `json:"action"`
	} `json:"elicitations"`
	ServerExit *struct {
		Code   *int    `json:"code"`
		Signal *string `json:"signal"`
	} `json:"serverExit"`
	Stderr string `json:"stderr"`
	Exit   string `json:"exit"`
	raw    string
}

type hostStep struct {
	Step   int               `json:"step"`
	At     int64             `json:"at"` // when the step started, ms since 1970
	Op     string            `json:"op"`
	Result json.RawMessage   `json:"result"`
	Pages  []json.RawMessage `json:"pages"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
		Timeout bool            `json:"timeout"`
	} `json:"error"`
}

// blocked returns the finding kind of a call the gate refused with its
// error, or "" if the step was not refused by the gate: -32090, or, for
// what the server does not offer (not_listed), -32602 or -32002 (a
// resource) as the server would answer.
func (s hostStep) blocked(t *testing.T) string {
	t.Helper()
	if s.Error == nil || s.Error.Code != -32090 && s.Error.Code != -32602 && s.Error.Code != -32002 {
		return ""
	}
	var d struct{ Etdi, Kind, Review string }
	if s.Error.Code != -32090 && json.Unmarshal(s.Error.Data, &d) == nil && d.Kind != "not_listed" {
		return "" // the server's own error
	}
	if err := json.Unmarshal(s.Error.Data, &d); err != nil || d.Etdi != "blocked" || !strings.HasPrefix(d.Review, "etdi check") {
		t.Fatalf("error data of a blocked call: %s (%v)", s.Error.Data, err)
	}
	return d.Kind
}

// names returns the names in every page of a list step.
func (s hostStep) names(t *testing.T) []string {
	t.Helper()
	var out []string
	type entry struct{ Name, URI, URITemplate string }
	for _, p := range s.Pages {
		var page struct{ Tools, Prompts, Resources, ResourceTemplates []entry }
		if err := json.Unmarshal(p, &page); err != nil {
			t.Fatalf("page %s: %v", p, err)
		}
		for _, list := range [][]entry{page.Tools, page.Prompts, page.Resources, page.ResourceTemplates} {
			for _, e := range list {
				out = append(out, cmp.Or(e.URI, e.URITemplate, e.Name))
			}
		}
	}
	return out
}

func (tr *transcript) methods(method string) int {
	n := 0
	for _, x := range tr.Notifications {
		if x.Method == method {
			n++
		}
	}
	return n
}

// stepTimes matches the start time of a step in a transcript.
var stepTimes = regexp.MustCompile(`"at":[0-9]+,`)

// host runs host-client.mjs with the script steps against the server
// command cmd, with env added to the environment.
func (p *pinEnv) host(env []string, steps string, hostArgs []string, cmd ...string) *transcript {
	p.t.Helper()
	script := filepath.Join(p.dir, fmt.Sprintf("script-%d.json", time.Now().UnixNano()))
	p.write(filepath.Base(script), steps)
	args := append([]string{hostJS(), "--script", script, "--timeout-ms", "40000"}, hostArgs...)
	if len(cmd) > 0 {
		args = append(append(args, "--"), cmd...)
	}
	c := exec.Command("node", args...)
	c.Dir = p.dir
	c.Env = append(append(os.Environ(), "HOME="+p.dir, "XDG_CONFIG_HOME="+filepath.Join(p.dir, ".config")), env...)
	var so, se bytes.Buffer
	c.Stdout, c.Stderr = &so, &se
	if err := c.Run(); err != nil {
		p.t.Fatalf("host: %v\n%s%s", err, so.String(), se.String())
	}
	var tr transcript
	if err := json.Unmarshal(so.Bytes(), &tr); err != nil {
		p.t.Fatalf("host transcript: %v\n%s%s", err, so.String(), se.String())
	}
	// raw is what tests search for text the host must not see: without
	// the steps' start times, whose digits could match by chance.
	tr.raw = stepTimes.ReplaceAllString(so.String(), "")
	return &tr
}

// gated is the command that runs the server behind etdi run: flags, then
// the server command (none for --url).
func (p *pinEnv) gated(flags []string, cmd ...string) []string {
	args := append([]string{etdiBin, "run", "--trust", "trust.json", "--pins", "pins.db"}, flags...)
	if len(cmd) > 0 {
		args = append(append(args, "--"), cmd...)
	}
	return args
}

// runEnv is a client that approved the fixture server with its bundle.
func runEnv(t *testing.T) *pinEnv {
	p := liveEnv(t)
	if r := p.liveCheck(nil, append([]string{"--yes", "--bundle", "w.etdi.json"}, fixture("approve")...)...); r.code != 0 {
		t.Fatalf("approve: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	return p
}

// fixtureCmd starts the fixture server with a marker argument.
func fixtureCmd(marker string) []string { return []string{"node", fixtureJS, marker} }

// otherFixture is a copy of the fixture server that is another artifact
// (its SHA-256 differs, and differs for each tag): it shares no approval
// with fixtureJS or another copy under another name (docs/storage.md#one-artifact-under-several-configuration-names).
func otherFixture(t *testing.T, tag string) string {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(fixtureJS)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "server.mjs")
	if err := os.WriteFile(path, append(src, "\n// another artifact: "+tag+"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(mcpDir, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return path
}

const everyStep = `[{"op":"listTools"},{"op":"call","name":"get_weather","arguments":{"city":"Berlin"}},
 {"op":"call","name":"get_forecast","arguments":{"city":"Berlin","days":3}},{"op":"listPrompts"},
 {"op":"getPrompt","name":"weather_report","arguments":{"city":"Berlin"}},{"op":"listResources"},
 {"op":"readResource","uri":"weather://cities"},{"op":"listResourceTemplates"}]`

// An unchanged server through the gate: a real host written with the
// TypeScript SDK receives exactly what it receives without it, result by
// result. The raw answers are compared byte for byte by the script
// run_unchanged_server.txtar; this test stays Go because its host is the
// SDK's own client (its initialize, capability and result handling), which
// a script's JSON-RPC session is not.
func TestRunUnchangedServer(t *testing.T) {
	t.Parallel() // its own folder, servers and store
	p := runEnv(t)
	direct := p.host(nil, everyStep, nil, fixtureCmd("direct")...)
	through := p.host(nil, everyStep, nil, p.gated([]string{"--bundle", "w.etdi.json"}, fixtureCmd("gated")...)...)
	if direct.Exit != "ok" || through.Exit != "ok" {
		t.Fatalf("exit: %s / %s\n%s", direct.Exit, through.Exit, through.Stderr)
	}
	if got, want := fmt.Sprintf("%s %v %s", through.Initialize.ServerInfo, *through.Initialize.Instructions, through.Initialize.Capabilities),
		fmt.Sprintf("%s %v %s", direct.Initialize.ServerInfo, *direct.Initialize.Instructions, direct.Initialize.Capabilities); got != want {
		t.Errorf("initialize through the gate: %s\nwithout: %s", got, want)
	}
	if len(through.Steps) != len(direct.Steps) {
		t.Fatalf("steps: %d, want %d", len(through.Steps), len(direct.Steps))
	}
	for i := range direct.Steps {
		direct.Steps[i].At, through.Steps[i].At = 0, 0 // when, not what
		a, _ := json.Marshal(direct.Steps[i])
		b, _ := json.Marshal(through.Steps[i])
		if !bytes.Equal(a, b) {
			t.Errorf("step %d through the gate:\n%s\nwithout:\n%s", i, b, a)
		}
	}
	if through.Stderr != "" || len(through.Notifications) != 0 {
		t.Errorf("an approved server raised something: %q %v", through.Stderr, through.Notifications)
	}
}

// pgrepMarker reports whether a process with marker in its command line
// runs.
func pgrepMarker(marker string) bool {
	out, _ := exec.Command("pgrep", "-f", marker).Output()
	return len(bytes.TrimSpace(out)) > 0
}

// fixtureInstructions are the fixture server's instructions.
const fixtureInstructions = "Weather server. Use get_weather for current conditions and get_forecast for the coming days."
