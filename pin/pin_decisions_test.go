package pin

import (
	"errors"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/finding"
	bolt "go.etcd.io/bbolt"
)

// StillApproved withdraws a name with a control character as
// impersonation, whatever the pins hold.
func TestStillApprovedControlName(t *testing.T) {
	s := openTestStore(t, Options{})
	mustApprove(t, s, obs("acme:weather", 1, tool(t, "get_weather", "1.0.0", weatherDef, keyA, "net")))
	o := obs("acme:weather", 1, tool(t, "get_weather", "1.0.0", weatherDef, keyA, "net"), tool(t, "get\x1bweather", "1.0.0", weatherDef, keyA, "net"))
	still, err := s.StillApproved(o)
	if err != nil {
		t.Fatal(err)
	}
	if still[StillApprovedKey("", "get\x1bweather")] != finding.Impersonation || still[StillApprovedKey("", "get_weather")] != "" {
		t.Fatalf("%v", still)
	}
}

// StillApproved withdraws a tool served under another signer, and every
// tool of an older bundle than the one approved.
func TestStillApprovedSignerAndReplay(t *testing.T) {
	s := openTestStore(t, Options{})
	mustApprove(t, s, obs("acme:weather", 5, tool(t, "get_weather", "1.0.0", weatherDef, keyA, "net")))
	key := StillApprovedKey("", "get_weather")
	still, err := s.StillApproved(obs("acme:weather", 5, tool(t, "get_weather", "1.0.0", weatherDef, keyB, "net")))
	if err != nil || still[key] != finding.RugPull {
		t.Fatalf("another signer: %v %v", still, err)
	}
	still, err = s.StillApproved(obs("acme:weather", 3, tool(t, "get_weather", "1.0.0", weatherDef, keyA, "net")))
	if err != nil || still[key] != finding.Downgrade {
		t.Fatalf("an older bundle: %v %v", still, err)
	}
}

// A revocation stored under another tool's key is refused, not read as
// that tool's revocation (nor as none).
func TestRevocationUnderAnotherKey(t *testing.T) {
	s := openTestStore(t, Options{})
	mustApprove(t, s, obs("acme:weather", 1, tool(t, "get_weather", "1.0.0", weatherDef, keyA, "net"), tool(t, "get_forecast", "1.0.0", `{"name":"get_forecast"}`, keyA)))
	if err := s.Revoke(Revocation{Server: "acme:weather", Tool: "get_weather", By: "x"}); err != nil {
		t.Fatal(err)
	}
	s = edit(t, s, func(tx *bolt.Tx) {
		rb := tx.Bucket(bRevoked)
		rb.Put([]byte("acme:weather/get_forecast"), rb.Get([]byte("acme:weather/get_weather")))
	})
	o := obs("acme:weather", 1, tool(t, "get_forecast", "1.0.0", `{"name":"get_forecast"}`, keyA))
	var ue *UnjustifiedError
	if _, err := s.StillApproved(o); !errors.As(err, &ue) {
		t.Fatalf("a revocation under another key: %v", err)
	}
}

// A checkpoint of another store never proves this one.
func TestCheckpointOfAnotherStore(t *testing.T) {
	a, b := openTestStore(t, Options{}), openTestStore(t, Options{})
	signer, verifier := auditKeys(t)
	fillServer(t, a, "acme:one", 1)
	fillServer(t, b, "acme:one", 1)
	msg, _, err := a.SignCheckpoint(signer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := OpenCheckpoint(msg, verifier)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := b.VerifyLog()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.CheckConsistency(tree, c); err == nil || !strings.Contains(err.Error(), "checkpoint is for") {
		t.Fatalf("a checkpoint of another store: %v", err)
	}
}
