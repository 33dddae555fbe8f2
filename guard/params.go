package guard

import (
	"fmt"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/mcpclient"
)

// paramsError says why the gate cannot read a host's params as strictly
// as it must (SPEC.md §25): the request is answered -32602 and never
// relayed.
type paramsError struct{ msg string }

func (e *paramsError) Error() string { return e.msg }

// strictObject returns the raw values of the members of the JSON object
// obj (a decoded message's slice: valid JSON) that the gate reads, by
// name; where names where obj is (for errors: "params", "params.ref").
// obj absent or null has none. It is refused when it is not an object,
// when two of its member names are equal or equal under case folding (a
// peer may read either), or when a member differs from one the gate
// reads only in case (a peer that matches names case-insensitively reads
// it, the gate would not).
func strictObject(obj []byte, where string, read ...string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(obj) == 0 || string(obj) == "null" {
		return out, nil
	}
	names := mcpclient.Names(obj)
	if names == nil {
		return nil, &paramsError{where + " is not an object"}
	}
	if hasTwice(names) {
		return nil, &paramsError{where + " holds a member twice (or two that differ only in case)"}
	}
	for _, n := range names {
		for _, r := range read {
			if n != r && foldKey(n) == foldKey(r) {
				return nil, &paramsError{fmt.Sprintf("%s holds %q, which differs from %q only in case", where, clipText(n), r)}
			}
		}
	}
	for _, r := range read {
		if raw := mcpclient.Member(obj, r); raw != nil {
			out[r] = raw
		}
	}
	return out, nil
}

// strictString reads a string value under etdi's strict profile (SPEC.md
// §2); absent is "", false.
func strictString(raw []byte, where string) (string, bool, error) {
	if raw == nil {
		return "", false, nil
	}
	v, err := etdi.ParseJSON(raw)
	if err != nil {
		return "", false, &paramsError{where + ": " + err.Error()}
	}
	if v.Kind != etdi.String {
		return "", false, &paramsError{where + " is not a string"}
	}
	return v.Str, true, nil
}
