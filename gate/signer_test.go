package gate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/pin"
)

// A live tool of a signed server that the bundle does not sign is
// observed unsigned: its pin, and what the call-time policies see of it
// (signed, annotations), never borrow the bundle's signer.
func TestObserveUnsignedToolOfSignedServer(t *testing.T) {
	opts, bankList := signedBank(t)
	extra := `{"name":"extra","description":"Not in the bundle.","annotations":{"readOnlyHint":true},"inputSchema":{"type":"object"}}`
	l, err := guard.ReadListing([]byte(strings.Replace(bankList, `"tools":[`, `"tools":[`+extra+`,`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := guard.Observe(context.Background(), l, opts.Options)
	if err != nil || r.Observation == nil {
		t.Fatalf("observe: %v %+v", err, r)
	}
	for _, o := range r.Observation.Tools {
		switch o.Name {
		case "extra":
			if o.Signer != pin.Unsigned || o.Version != "" {
				t.Errorf("the unsigned tool is observed as %+v", o.Signer)
			}
		case "transfer_money":
			if o.Signer.Kind != "key" {
				t.Errorf("the signed tool is observed as %+v", o.Signer)
			}
		}
	}
}

// The stateless handshake of MCP 2026-07-28 has no initialize for the gate
// to check first: server/discover and subscriptions/listen are answered
// -32601 and never reach the server.
func TestHandshakeDiscoverRefused(t *testing.T) {
	a := startAtk(t, atkOptions(t), cleanHandler)
	for _, method := range []string{"server/discover", "subscriptions/listen"} {
		if ans := a.ask(t, method, `{}`, 5*time.Second); !strings.Contains(ans, `"code":-32601`) || !strings.Contains(ans, "begins with initialize") {
			t.Errorf("%s: %s", method, ans)
		}
	}
	if got := a.server.received(); len(got) != 0 {
		t.Errorf("the server received %v", got)
	}
}
