package main

import (
	"fmt"
	"strings"
	"testing"
)

// Before a first approval records a live server's instructions, --approve
// shows them. It stays a Go test: it answers the prompts on a terminal as
// they appear.
func TestLiveApproveShowsInstructions(t *testing.T) {
	needNode(t)
	p := textEnv(t)
	r := startPty(t, p.dir, "check", "--trust", "trust.json", "--pins", "pins.db", "--name", "fx", "--approve", "--server", "--", "node", fixtureJS, "m9")
	r.waitFor(t, prompt, 1)
	out := r.output()
	if !strings.Contains(out, "server unsigned:fx sends these instructions to the model; approving records them:") ||
		!strings.Contains(out, "    | Weather server. Use get_weather for current conditions") {
		t.Fatalf("instructions not shown:\n%s", out)
	}
	fmt.Fprint(r.stdin, "n\n")
	r.waitFor(t, prompt, 2)
	fmt.Fprint(r.stdin, "n\n")
	r.wait(t)
}
