package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/internal/etcdtest"
)

// One key under PREFIX/log/ longer than bbolt's 32 KiB key limit (a
// client role may write there) makes the gate's store open fail to catch
// up; the gate opens on its stale snapshot, finds nothing revoked, and
// takes the new head as seen: a revocation committed afterwards never
// blocks the tool, and the calls keep going through past --max-stale
// while etcd answers all along. It stays Go: the calls of a host through
// the gate are placed in time around the revocation, and the hostile key
// is written with etcd's client.
func TestRedGateMissesRevocationAfterHostileKey(t *testing.T) {
	t.Parallel() // its own folder, servers and store
	p := liveEnv(t)
	c := etcdtest.Start(t, etcdtest.Options{})
	loc := "etcd://" + c.Endpoint(0) + "/team/red"
	a, b := p.machine("laptop-a"), p.machine("laptop-b")
	bundle := []string{"--pins", loc, "--bundle", "w.etdi.json"}
	if r := p.liveCheck(a, append(append([]string{"--yes"}, bundle...), fixture("red-etcd1")...)...); r.code != 0 {
		t.Fatalf("approve on a: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	steps := []string{`{"op":"listTools"}`, `{"op":"call","name":"get_weather","arguments":{"city":"Berlin"}}`}
	for range 80 {
		steps = append(steps, `{"op":"sleep","ms":100}`, `{"op":"call","name":"get_weather","arguments":{"city":"Berlin"}}`)
	}
	done := make(chan *transcript, 1)
	go func() {
		done <- p.host(b, "["+strings.Join(steps, ",")+"]", nil, p.gated([]string{"--pins", loc, "--bundle", "w.etdi.json", "--max-stale", "2s"}, fixtureCmd("red-etcd-gate")...)...)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !pgrepMarker("red-etcd-gate") {
		if time.Now().After(deadline) {
			t.Fatal("the gated server did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Client(t).Put(ctx, "team/red/log/records/"+strings.Repeat("x", 40<<10), "x"); err != nil {
		t.Fatal(err)
	}
	if r := runEtdi(t, p.dir, append(a, pwEnv...), "pin", "revoke", "--yes", "--pins", loc, "acme:weather/get_weather"); r.code != 0 {
		t.Fatalf("revoke on a: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	revoked := time.Now()
	tr := <-done
	through := 0
	for _, s := range tr.Steps {
		if s.Op == "call" && time.UnixMilli(s.At).After(revoked.Add(3*time.Second)) && s.blocked(t) == "" {
			through++
		}
	}
	if through > 0 {
		t.Fatalf("%d calls went through more than 3 s after the revocation (etcd up, --max-stale 2s)", through)
	}
}
