package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/internal/etcdtest"
	"github.com/etdi-dev/etdi/pin"
)

// startTestEtcd starts a one-member etcd on 127.0.0.1 and returns its
// client endpoint.
func startTestEtcd(t *testing.T) string {
	return etcdtest.Start(t, etcdtest.Options{}).Endpoint(0)
}

// machine is the environment of etdi on a machine of its own: its name
// and its own snapshot of the etcd store.
func (p *pinEnv) machine(name string) []string {
	return []string{"ETDI_MACHINE=" + name, "ETDI_ETCD_SNAPSHOTS=" + filepath.Join(p.dir, "snapshots-"+name)}
}

// Two machines pointed at one etcd: a revocation on one blocks the tool
// at the other's running gate at its next call. It stays Go: the calls
// of a host through the gate are placed in time around the revocation.
// (Sharing approvals, revocations and the history between the machines
// is etcd_two_machines.txtar.)
func TestEtcdTwoMachines(t *testing.T) {
	p := liveEnv(t)
	loc := "etcd://" + startTestEtcd(t) + "/team/weather"
	a, b := p.machine("laptop-a"), p.machine("laptop-b")
	bundle := []string{"--pins", loc, "--bundle", "w.etdi.json"}

	if r := p.liveCheck(a, append(append([]string{"--yes"}, bundle...), fixture("etcd1")...)...); r.code != 0 {
		t.Fatalf("approve on a: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := p.liveCheck(b, append(bundle, fixture("etcd2")...)...); r.code != 0 {
		t.Fatalf("check on b after a approved: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// b's gate; a revokes get_weather while the host calls it every
	// 100 ms.
	var steps []string
	steps = append(steps, `{"op":"listTools"}`, `{"op":"call","name":"get_weather","arguments":{"city":"Berlin"}}`)
	for range 60 {
		steps = append(steps, `{"op":"sleep","ms":100}`, `{"op":"call","name":"get_weather","arguments":{"city":"Berlin"}}`)
	}
	done := make(chan *transcript, 1)
	callLog := filepath.Join(p.dir, "etcd-gate.calls")
	go func() {
		done <- p.host(append(b, "FIXTURE_CALL_LOG="+callLog), "["+strings.Join(steps, ",")+"]", nil, p.gated([]string{"--pins", loc, "--bundle", "w.etdi.json"}, fixtureCmd("etcd-gate")...)...)
	}()
	// The revocation comes once the gate has passed a few calls, however
	// long the gate took to start on a loaded machine.
	waitCalls(t, callLog, 3)
	revokeStart := time.Now()
	if r := runEtdi(t, p.dir, append(a, pwEnv...), "pin", "revoke", "--yes", "--pins", loc, "acme:weather/get_weather"); r.code != 0 {
		t.Fatalf("revoke on a: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	revoked := time.Now()
	tr := <-done

	var before, after, firstBlocked int
	var firstBlockedAt int64
	for _, s := range tr.Steps {
		if s.Op != "call" {
			continue
		}
		at := time.UnixMilli(s.At)
		kind := s.blocked(t)
		switch {
		case at.Before(revokeStart) && kind == "":
			before++
		case at.Before(revokeStart):
			t.Fatalf("a call before the revocation was blocked (%s):\n%s", kind, tr.raw)
		case kind == "revoked":
			if firstBlocked == 0 {
				firstBlocked, firstBlockedAt = s.Step, s.At
			}
			after++
		case at.After(revoked.Add(2 * time.Second)):
			t.Fatalf("a call %s after the revocation went through:\n%s", at.Sub(revoked), tr.raw)
		}
	}
	if before == 0 || after == 0 {
		t.Fatalf("%d calls before the revocation, %d blocked after:\n%s", before, after, tr.raw)
	}
	t.Logf("revocation on a (committed %s after it started) blocked the call at step %d on b's gate %s after the commit",
		revoked.Sub(revokeStart).Round(time.Millisecond), firstBlocked, time.UnixMilli(firstBlockedAt).Sub(revoked).Round(time.Millisecond))
}

// Ten processes on ten "machines" approve and check at once against one
// etcd, and some are killed with SIGKILL mid-transaction: the shared
// history verifies afterwards, holds every approval whose process
// reported success, and no pin lacks its record. It stays Go: ten
// writers run at once and are killed at times of their own, and the
// records are counted through the pin store's reader.
func TestEtcdTenProcessesKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	loc := "etcd://" + startTestEtcd(t) + "/fleet"
	const machines, rounds = 10, 6
	var mu sync.Mutex
	approved, killed := 0, 0
	var wg sync.WaitGroup
	for m := range machines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := append(append(os.Environ(), pwEnv...), p.machine(fmt.Sprintf("m%d", m))...)
			for r := range rounds {
				name := fmt.Sprintf("srv-%d-%d", m, r)
				tools := fmt.Sprintf("tools-%d-%d.json", m, r)
				p.write(tools, fmt.Sprintf(`{"tools":[{"name":"tool_%d_%d","description":"Tool %d of machine %d.","inputSchema":{"type":"object"}}]}`, m, r, r, m))
				for _, sub := range [][]string{{"check"}, {"pin", "approve", "--by", fmt.Sprintf("m%d", m)}} {
					cmd := exec.Command(etdiBin, append(sub, "--trust", "trust.json", "--pins", loc, "--name", name, "--tools", tools)...)
					cmd.Dir, cmd.Env = p.dir, env
					if err := cmd.Start(); err != nil {
						t.Error(err)
						return
					}
					kill := sub[0] == "pin" && r%3 == 1
					if kill {
						time.Sleep(time.Duration(20+10*m) * time.Millisecond)
						cmd.Process.Signal(syscall.SIGKILL)
					}
					err := cmd.Wait()
					mu.Lock()
					switch {
					case kill && err != nil:
						killed++
					case sub[0] == "pin" && err == nil:
						approved++
					case sub[0] == "pin":
						t.Errorf("approve %s: %v", name, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if r := runEtdi(t, p.dir, p.machine("auditor"), "audit", "verify", "--pins", loc); r.code != 0 {
		t.Fatalf("audit verify: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s, err := pin.Open(loc, pin.Options{ReadOnly: true, Etcd: pin.EtcdOptions{SnapshotDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	records := 0
	s.Records(func(_ []byte, r *pin.Record) error {
		if r.Type == pin.RecordApprove {
			records++
		}
		return nil
	})
	pins, err := s.List()
	if err != nil || records < approved || records > approved+killed || len(pins) != records {
		t.Fatalf("%d approvals reported, %d killed; %d approval records, %d pins (%v)", approved, killed, records, len(pins), err)
	}
	t.Logf("%d approvals reported, %d processes killed during approval; %d approval records", approved, killed, records)
}

// etcd goes down under a running gate: calls go on from the snapshot,
// and once it is older than --max-stale (8 s) every call is refused,
// while the host is still calling, before the watch's once-a-minute look
// would notice. It stays Go:
// the calls of a host through the gate are placed in time around etcd's
// stop.
func TestEtcdGateFailsClosedWhenStale(t *testing.T) {
	t.Parallel() // its own folder, servers and store
	if testing.Short() {
		t.Skip("-short")
	}
	p := liveEnv(t)
	c := etcdtest.Start(t, etcdtest.Options{})
	loc := c.URL("team/stale")
	b := p.machine("laptop-b")
	if r := p.liveCheck(b, append([]string{"--yes", "--pins", loc, "--bundle", "w.etdi.json"}, fixture("stale0")...)...); r.code != 0 {
		t.Fatalf("approve: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	steps := []string{`{"op":"listTools"}`}
	for range 60 {
		steps = append(steps, `{"op":"call","name":"get_weather","arguments":{"city":"Berlin"}}`, `{"op":"sleep","ms":500}`)
	}
	done := make(chan *transcript, 1)
	callLog := filepath.Join(p.dir, "etcd-stale.calls")
	go func() {
		done <- p.host(append(b, "FIXTURE_CALL_LOG="+callLog), "["+strings.Join(steps, ",")+"]", nil, p.gated([]string{"--pins", loc, "--bundle", "w.etdi.json", "--max-stale", "8s"}, fixtureCmd("etcd-stale")...)...)
	}()
	waitCalls(t, callLog, 2)
	stopped := time.Now()
	c.Stop()
	tr := <-done
	var before int
	var firstBlocked time.Time
	for _, s := range tr.Steps {
		if s.Op != "call" {
			continue
		}
		at := time.UnixMilli(s.At)
		switch {
		case at.Before(stopped) && s.Error == nil:
			before++
		case at.Before(stopped):
		case s.Error != nil && firstBlocked.IsZero():
			firstBlocked = at
		case s.Error == nil && !firstBlocked.IsZero():
			t.Fatalf("a call at %s went through after one at %s was refused:\n%s", at.Sub(stopped), firstBlocked.Sub(stopped), tr.raw)
		}
	}
	// Some call of the 30 s the host goes on calling is refused: the
	// watch's once-a-minute look could not have noticed in that time, so
	// it is --max-stale that closed the gate (no bound on when, which a
	// loaded machine could miss).
	if before == 0 || firstBlocked.IsZero() {
		t.Fatalf("%d calls before etcd stopped; first refused %s after it stopped:\n%s", before, firstBlocked.Sub(stopped), tr.raw)
	}
}

// waitCalls waits until the fixture server's call log (FIXTURE_CALL_LOG)
// holds n calls: the gate has started and passed them, however long that
// took on a loaded machine.
func waitCalls(t *testing.T, callLog string, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if log, _ := os.ReadFile(callLog); bytes.Count(log, []byte("\n")) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gated server answered fewer than %d calls", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
