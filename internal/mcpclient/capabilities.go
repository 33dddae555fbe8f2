package mcpclient

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/etdi-dev/etdi/strictjson"
)

// MaxCapabilities bounds the client capabilities object a listing
// declares, in bytes.
const MaxCapabilities = 16 << 10

// CapabilityNames are the client capabilities that can be declared by
// name (ParseCapabilities), in the order they are written.
var CapabilityNames = []string{"roots", "sampling", "elicitation"}

// ParseCapabilities turns a comma-separated list of CapabilityNames into
// the capabilities object a listing declares: "roots,elicitation" is
// {"roots":{},"elicitation":{}}; "none" declares none ({}). An unknown
// name, a name given twice, an empty list or "none" beside a name is an
// error naming what is allowed.
func ParseCapabilities(list string) (json.RawMessage, error) {
	allowed := "a comma-separated list of " + strings.Join(CapabilityNames, ", ") + ", or none"
	if strings.TrimSpace(list) == "none" {
		return json.RawMessage(`{}`), nil
	}
	seen := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			return nil, fmt.Errorf("capabilities %q: an empty name; want %s", clip(list), allowed)
		case n == "none":
			return nil, fmt.Errorf("capabilities %q: none cannot be combined with a capability", clip(list))
		case !isCapabilityName(n):
			return nil, fmt.Errorf("unknown capability %q; want %s", clip(n), allowed)
		case seen[n]:
			return nil, fmt.Errorf("capability %q is given twice", clip(n))
		}
		seen[n] = true
	}
	var members []string
	for _, n := range CapabilityNames {
		if seen[n] {
			members = append(members, fmt.Sprintf("%q:{}", n))
		}
	}
	return json.RawMessage("{" + strings.Join(members, ",") + "}"), nil
}

func isCapabilityName(n string) bool {
	for _, c := range CapabilityNames {
		if n == c {
			return true
		}
	}
	return false
}

// ValidCapabilities checks a client capabilities object before it is
// declared: one JSON object under the profile of SPEC.md §2 (no member
// twice), of at most MaxCapabilities bytes, each member an object (as
// the protocol defines every client capability).
func ValidCapabilities(caps []byte) error {
	if len(caps) > MaxCapabilities {
		return fmt.Errorf("the client capabilities are larger than %d bytes", MaxCapabilities)
	}
	v, err := strictjson.Parse(caps)
	if err != nil {
		return fmt.Errorf("the client capabilities: %w", err)
	}
	if v.Kind != strictjson.Object {
		return fmt.Errorf("the client capabilities are a %s, not an object", v.Kind)
	}
	for _, m := range v.Members {
		if m.Value.Kind != strictjson.Object {
			return fmt.Errorf("the client capability %q is a %s, not an object", clip(m.Name), m.Value.Kind)
		}
	}
	return nil
}

// capabilitySet says which capabilities with requests of the server a
// listing declared.
type capabilitySet struct{ roots, sampling, elicitation bool }

// declared reads a valid capabilities object (ValidCapabilities).
func declared(caps []byte) capabilitySet {
	return capabilitySet{roots: Member(caps, "roots") != nil, sampling: Member(caps, "sampling") != nil,
		elicitation: Member(caps, "elicitation") != nil}
}

// answerRequest is the answer to a request the server sends while it is
// listed. A listing has no workspace, no model and no person: roots/list,
// when roots were declared, is answered with no roots; sampling and
// elicitation, when declared, with an error saying that etdi does not
// sample or ask during a listing (never left unanswered, so a server that
// waits for the answer before it lists goes on); ping with an empty
// result; everything else, and what was not declared, with -32601.
func answerRequest(id []byte, method string, caps capabilitySet) []byte {
	switch {
	case method == "ping":
		return EncodeResult(id, []byte(`{}`))
	case method == "roots/list" && caps.roots:
		return EncodeResult(id, []byte(`{"roots":[]}`))
	case method == "sampling/createMessage" && caps.sampling:
		return EncodeError(id, -1, "etdi does not sample during a check: it only lists the server's tools, prompts and resources", nil)
	case method == "elicitation/create" && caps.elicitation:
		return EncodeError(id, -1, "etdi does not ask the person during a check: it only lists the server's tools, prompts and resources", nil)
	}
	return encodeRefusal(id, method)
}
