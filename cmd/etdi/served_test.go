package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Approving through the review command the gate names (its saved
// listing) records what served that listing: a different program
// serving identical definitions is then refused by etdi run (exit 11),
// as after approving with check --server. A saved listing whose served
// was edited is refused. A Go test: a Go MCP host reads the review command
// from the refused call's error data and runs it as the gate printed it.
func TestServedApprovedThroughGateReview(t *testing.T) {
	t.Parallel() // its own folder, servers and store
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	bin := buildWeather(t, p.dir, "weather", "")
	other := buildWeather(t, p.dir, "weather-next", "next")
	run := filepath.Join(p.dir, "bin", "weather")
	os.MkdirAll(filepath.Dir(run), 0o755)
	copyFile(t, bin, run)

	cs, _ := sdkHost(t, p.gatedCmd(nil, []string{"--name", "weather"}, run))
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_weather", Arguments: map[string]any{"city": "Paris"}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("a tool never approved was called: %v", err)
	}
	var data struct{ Kind, Review string }
	json.Unmarshal(we.Data, &data)
	cs.Close()
	pending, _ := filepath.Glob(filepath.Join(p.dir, "pending", "*.json"))
	if data.Kind != "new_tool" || len(pending) != 1 || !strings.HasPrefix(data.Review, "etdi check ") || !strings.Contains(data.Review, "--tools "+pending[0]+" --approve") {
		t.Fatalf("review %q (kind %s), saved %v", data.Review, data.Kind, pending)
	}
	saved, _ := os.ReadFile(pending[0])
	if !bytes.Contains(saved, []byte(fileSHA256(t, run))) {
		t.Fatalf("the saved listing does not say what served it:\n%s", saved)
	}
	// The review command, as the gate printed it (--yes: no terminal).
	review := strings.Fields(strings.Replace(strings.TrimPrefix(data.Review, "etdi "), "--approve", "--yes", 1))
	r := runEtdi(t, p.dir, nil, review...)
	if r.code != 0 || !strings.Contains(r.stdout, "approved unsigned:weather/get_weather") {
		t.Fatalf("the review command: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The approved program runs behind the gate.
	cs, _ = sdkHost(t, p.gatedCmd(nil, []string{"--name", "weather"}, run))
	if lt, err := cs.ListTools(context.Background(), nil); err != nil || len(lt.Tools) != 1 {
		t.Fatalf("the approved program through the gate: %v %v", lt, err)
	}
	cs.Close()
	// Another program serving identical definitions is not started where
	// the trust policy blocks updates (a replaced file of the same name
	// is an update of the server otherwise: script update_unsigned_server).
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn", "--on-update", "block")
	copyFile(t, other, run)
	gate := exec.Command(etdiBin, p.gated([]string{"--name", "weather"}, run)[1:]...)
	gate.Dir = p.dir
	gate.Env = append(os.Environ(), "HOME="+p.dir)
	out, err := gate.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 11 || !strings.Contains(string(out), "not starting the server") || !strings.Contains(string(out), fileSHA256(t, other)) {
		t.Fatalf("etdi run of the swapped program: %v\n%s", err, out)
	}
	// A saved listing whose served was edited (to the swapped program)
	// is refused, and approves nothing.
	tampered := bytes.Replace(saved, []byte(fileSHA256(t, bin)), []byte(fileSHA256(t, other)), 1)
	if bytes.Equal(tampered, saved) {
		t.Fatal("nothing edited")
	}
	p.write("tampered.json", string(tampered))
	r = p.liveCheck(nil, "--yes", "--name", "weather", "--tools", "tampered.json")
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "changed after it was saved") || strings.Contains(r.stdout, "approved unsigned:") {
		t.Fatalf("a tampered saved listing: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
