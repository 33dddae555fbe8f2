package pin

import (
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The same definition served by another artifact (or endpoint) is a rug
// pull, signed or unsigned; approving it by name records the new one.
// What is unknown on either side is not compared.
func TestServedChange(t *testing.T) {
	// Another package serving the same definitions: not an update of the
	// one approved (cmd/etdi/testdata/script/update_unsigned_server.txtar), for the unsigned server too.
	const oldArt = "npm @acme/weather@1.2.0 sha512-old"
	const newArt = "npm @evil/weather@1.3.0 sha512-new"
	for _, c := range []struct {
		name   string
		server string
		t      Observed
	}{
		{"signed", "acme:weather", tool(t, "get_weather", "1.0.0", weatherDef, keyA, "net:fetch")},
		{"unsigned", UnsignedServerKey("weather"), tool(t, "get_weather", "", weatherDef, Unsigned)},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openTemp(t)
			at := func(served string) *Observation {
				o := obs(c.server, 1, c.t)
				if c.t.Signer == Unsigned {
					o.Sequence = 0
				}
				o.Served = served
				return o
			}
			mustApprove(t, s, at(oldArt))
			expect(t, s, at(oldArt))
			expect(t, s, at("")) // a saved listing: judged by definition
			unresolved := at("")
			unresolved.Unresolved = "file too large to hash"
			expect(t, s, unresolved, "rug_pull") // made unresolvable: fails closed
			cmp := expect(t, s, at(newArt), "rug_pull")
			f := cmp.Findings[0]
			if !strings.Contains(f.Message, newArt) || !strings.Contains(f.Message, oldArt) || len(f.Changes) != 1 || f.Changes[0].Old != oldArt || f.Changes[0].New != newArt {
				t.Fatalf("finding %+v", f)
			}
			still, err := s.StillApproved(at(newArt))
			if err != nil || still[StillApprovedKey("", "get_weather")] != "rug_pull" {
				t.Fatalf("StillApproved: %v %v", still, err)
			}
			// Not approved without naming the tool; by name it is.
			if a, r, err := s.Approve(at(newArt), ApproveOptions{By: "tester"}); err != nil || len(a) != 0 || len(r) != 1 {
				t.Fatalf("approve without --tool: %v %v %v", a, r, err)
			}
			a := mustApprove(t, s, at(newArt), "get_weather")
			if a[0].Pin.Served != newArt {
				t.Fatalf("approval recorded %q", a[0].Pin.Served)
			}
			expect(t, s, at(newArt))
			expect(t, s, at(oldArt), "rug_pull")
		})
	}
	// A pin approved before anything was recorded is judged by definition.
	s := openTemp(t)
	o := obs("acme:weather", 1, tool(t, "get_weather", "1.0.0", weatherDef, keyA, "net:fetch"))
	mustApprove(t, s, o)
	o.Served = newArt
	expect(t, s, o)
}

// What served a tool is bound to the approval record like the rest of
// the pin: editing it in the database is caught.
func TestServedBoundToHistory(t *testing.T) {
	s := openTemp(t)
	o := obs("acme:weather", 1, tool(t, "get_weather", "1.0.0", weatherDef, keyA, "net:fetch"))
	o.Served = "file weather sha256:aaaa"
	mustApprove(t, s, o)
	s = edit(t, s, func(tx *bolt.Tx) {
		p := rawPin(t, tx, "acme:weather", "get_weather")
		p.Served = "file weather sha256:bbbb"
		putJSON(t, tx.Bucket(bPins), pinKey("acme:weather", "get_weather"), p)
	})
	o.Served = "file weather sha256:bbbb"
	refused(t, s, o, "served by")
}

// ServerPins returns one server's pins and no other's, even one whose key
// starts with the same text.
func TestServerPins(t *testing.T) {
	s := openTemp(t)
	mustApprove(t, s, obs("acme:weather", 1, tool(t, "get_weather", "1.0.0", weatherDef, keyA, "net:fetch")))
	mustApprove(t, s, obs("acme:weather2", 1, tool(t, "get_forecast", "1.0.0", `{"name":"get_forecast"}`, keyA)))
	ps, err := s.ServerPins("acme:weather")
	if err != nil || len(ps) != 1 || ps[0].Tool != "get_weather" {
		t.Fatalf("ServerPins: %+v %v", ps, err)
	}
	if ps, err := s.ServerPins("acme:none"); err != nil || len(ps) != 0 {
		t.Fatalf("ServerPins of an unknown server: %+v %v", ps, err)
	}
}

// A pin approved without what served it is reported (Unserved) while
// what serves it now is known, and upgraded only by RecordServed: one
// history record per pin, which the history then justifies; a changed
// definition or a new tool is never upgraded, nor a pin that has one.
func TestRecordServed(t *testing.T) {
	const art = "file weather sha256:aaaa"
	s := openTemp(t)
	a, b := tool(t, "get_weather", "1.0.0", weatherDef, keyA, "net:fetch"), tool(t, "get_forecast", "1.0.0", `{"name":"get_forecast"}`, keyA)
	mustApprove(t, s, obs("acme:weather", 1, a, b))
	o := obs("acme:weather", 1, a, b, tool(t, "get_alerts", "1.0.0", `{"name":"get_alerts"}`, keyA))
	if c := expect(t, s, o, "new_tool"); len(c.Unserved) != 0 {
		t.Fatalf("unserved without a known served: %v", c.Unserved)
	}
	if _, err := s.RecordServed(o, "tester", time.Time{}); err == nil {
		t.Fatal("recorded an unknown served")
	}
	o.Served = art
	// get_forecast changed: it is judged (rug pull), not upgraded.
	o.Tools[1] = tool(t, "get_forecast", "1.0.0", `{"name":"get_forecast","description":"x"}`, keyA)
	c := expect(t, s, o, "rug_pull", "new_tool")
	if !slices.Equal(c.Unserved, []string{"get_weather"}) {
		t.Fatalf("unserved %v", c.Unserved)
	}
	before := logSizeOf(t, s)
	rec, err := s.RecordServed(o, "tester", time.Time{})
	if err != nil || len(rec) != 1 || rec[0].Pin.Tool != "get_weather" || rec[0].Pin.Served != art || rec[0].Kind != ServedRecorded {
		t.Fatalf("RecordServed: %v %+v", err, rec)
	}
	if n := logSizeOf(t, s); n != before+1 {
		t.Fatalf("history grew by %d records", n-before)
	}
	if c := expect(t, s, o, "rug_pull", "new_tool"); len(c.Unserved) != 0 {
		t.Fatalf("still unserved: %v", c.Unserved)
	}
	p, err := s.Get("acme:weather", "get_weather")
	if err != nil || p == nil || p.Served != art || p.Digest != a.Digest.String() {
		t.Fatalf("pin after: %+v %v", p, err)
	}
	// Recorded: another program is a rug pull now; again, nothing to do.
	o.Tools = []Observed{a}
	o.Served = "file weather sha256:bbbb"
	expect(t, s, o, "rug_pull")
	if rec, err := s.RecordServed(o, "tester", time.Time{}); err != nil || len(rec) != 0 {
		t.Fatalf("RecordServed over a recorded served: %v %+v", err, rec)
	}
	if _, err := s.VerifyLog(); err != nil {
		t.Fatal(err)
	}
}

// Naming a tool the server does not offer approves nothing: a typo must
// not pass as an approval of what was meant.
func TestApproveNamedNotOffered(t *testing.T) {
	s := openTemp(t)
	o := obs("acme:weather", 1, tool(t, "get_weather", "1.0.0", weatherDef, keyA, "net:fetch"))
	if a, _, err := s.Approve(o, ApproveOptions{Tools: []string{"get_wether"}, By: "tester"}); err == nil || len(a) != 0 || !strings.Contains(err.Error(), "not offered") {
		t.Fatalf("approved a tool not offered: %v %+v", err, a)
	}
	expect(t, s, o, "new_tool")
}
