package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/pin/lockfile"
)

// snapshot maps every file under dir to the SHA-256 of its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if !d.IsDir() {
			b, _ := os.ReadFile(path)
			sum := sha256.Sum256(b)
			out[path] = hex.EncodeToString(sum[:])
		}
		return nil
	})
	return out
}

func sameFiles(t *testing.T, before, after map[string]string) {
	t.Helper()
	for path, sum := range after {
		if b, ok := before[path]; !ok {
			t.Errorf("%s was created", path)
		} else if b != sum {
			t.Errorf("%s was changed", path)
		}
	}
	for path := range before {
		if _, ok := after[path]; !ok {
			t.Errorf("%s was removed", path)
		}
	}
}

// etdi run --lock gates a real session against a lockfile: the approved
// server passes whole, a rug-pulled tool is withheld and its call
// refused, the review command names the lockfile and offers no approval,
// and nothing is written: no pending listing, no history, nothing left
// in the temporary directory. It stays Go: a host drives the gated
// session and its transcript (listed names, a call's error data) is
// decoded.
func TestRunLock(t *testing.T) {
	t.Parallel() // its own folder, servers and store
	p := liveEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	if r := p.liveCheck(nil, append([]string{"--yes", "--name", "weather"}, fixture("approve")...)...); r.code != 0 {
		t.Fatalf("approve: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	p.ok("pin", "export", "--pins", "pins.db", "--lock", "team.lock.json", "--sign")
	if !strings.Contains(readFile(t, p.dir, "team.lock.json"), `"served": "file fixture-server.mjs sha256:`) {
		t.Fatal("the lockfile does not record what served the tools")
	}
	gated := func(extra ...string) []string {
		args := append([]string{etdiBin, "run", "--trust", "trust.json", "--lock", "team.lock.json", "--lock-key", "audit.pub", "--name", "weather"}, extra...)
		return append(args, "--", "node", fixtureJS, "gated")
	}
	tmp := t.TempDir()
	env := []string{"TMPDIR=" + tmp}
	before := snapshot(t, p.dir)
	steps := `[{"op":"listTools"},{"op":"call","name":"get_weather","arguments":{"city":"Berlin"}},{"op":"call","name":"get_forecast","arguments":{"city":"Berlin"}}]`

	tr := p.host(env, steps, nil, gated()...)
	if len(tr.Steps) == 0 {
		t.Fatalf("no steps: %s", tr.raw)
	}
	if got := strings.Join(tr.Steps[0].names(t), ","); got != "get_weather,get_forecast" || tr.Steps[1].Error != nil || tr.Steps[2].Error != nil {
		t.Fatalf("the approved server through the gate: %s\n%s", got, tr.raw)
	}
	if tr.Initialize.Instructions == nil || !strings.HasPrefix(*tr.Initialize.Instructions, "Weather server.") {
		t.Errorf("the approved instructions were withheld: %s", tr.raw)
	}

	tr = p.host(append(env, "FIXTURE_CHANGE=description"), steps, nil, gated()...)
	if strings.Contains(tr.raw, "IMPORTANT") {
		t.Fatalf("the host received the rug-pulled definition:\n%s", tr.raw)
	}
	if got := strings.Join(tr.Steps[0].names(t), ","); got != "get_forecast" {
		t.Fatalf("listed %s", got)
	}
	if k := tr.Steps[1].blocked(t); k != "rug_pull" {
		t.Fatalf("call of the rug-pulled tool: %q\n%s", k, tr.raw)
	}
	var data struct{ Review string }
	json.Unmarshal(tr.Steps[1].Error.Data, &data)
	if !strings.Contains(data.Review, "--lock "+filepath.Join(p.dir, "team.lock.json")) || strings.Contains(data.Review, "--approve") || strings.Contains(data.Review, "pending") {
		t.Errorf("review command: %q", data.Review)
	}
	if tr.Steps[2].Error != nil {
		t.Errorf("the unchanged tool was blocked: %s", tr.raw)
	}
	after := snapshot(t, p.dir)
	state := filepath.Join(p.dir, ".config", "etdi", lockfile.StateFile)
	for path := range after {
		// The host's scripts, and the generation of the signed lockfile
		// accepted, which is all that is written.
		if strings.HasPrefix(filepath.Base(path), "script-") || path == state || path == state+".lock" {
			delete(after, path)
		}
	}
	sameFiles(t, before, after)
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("left in the temporary directory: %v", left)
	}
	if fi, err := os.Stat(state); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the accepted generation is not remembered, 0600: %v %v", fi, err)
	}

	// A newer generation, then the older lockfile again: it starts
	// nothing (exit 11), as it may predate a revocation.
	copyFile(t, filepath.Join(p.dir, "team.lock.json"), filepath.Join(p.dir, "old.lock.json"))
	p.ok("pin", "export", "--pins", "pins.db", "--lock", "team.lock.json", "--sign")
	tr = p.host(env, steps, nil, gated()...)
	if len(tr.Steps) == 0 || tr.Steps[1].Error != nil {
		t.Fatalf("the newer generation: %s", tr.raw)
	}
	r := p.run("run", "--trust", "trust.json", "--lock", "old.lock.json", "--lock-key", "audit.pub", "--name", "weather", "--", "node", fixtureJS, "gated")
	if r.code != 11 || !strings.Contains(r.stderr, "older than generation") || r.stdout != "" {
		t.Fatalf("an older generation: %d %s %s", r.code, r.stdout, r.stderr)
	}

	// A tampered lockfile starts nothing; --audit-calls and --pins are
	// refused.
	p.write("tampered.lock.json", strings.Replace(readFile(t, p.dir, "team.lock.json"), `"etdiLock": 1,`, `"etdiLock": 1, "revocations": [],`, 1))
	r = p.run("run", "--trust", "trust.json", "--lock", "tampered.lock.json", "--name", "weather", "--", "node", fixtureJS, "x")
	if r.code != 1 || !strings.Contains(r.stderr, `duplicate member name "revocations"`) {
		t.Fatalf("tampered lockfile: %d %s", r.code, r.stderr)
	}
	p.expect(2, "--audit-calls records calls", append(gated("--audit-calls")[1:], "x")...)
	p.expect(2, "--lock and --pins cannot be combined", append(gated("--pins", "pins.db")[1:], "x")...)
}
