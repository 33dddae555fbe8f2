package keys

import (
	"fmt"
	"strings"
)

// MinIDPrefix is the shortest key id prefix accepted where a key id is
// given: 16 hex digits (64 bits), as [ShortID] prints it, so a prefix never
// matches another key by accident.
const MinIDPrefix = 16

// ResolveID returns the one id among known that ref names: a full key id
// ("sha256:" and 64 hex digits) or an unambiguous prefix of at least
// [MinIDPrefix] hex digits, with or without "sha256:". It never guesses: a
// prefix that matches several ids is an error naming them.
func ResolveID(ref string, known []string) (string, error) {
	h := strings.ToLower(strings.TrimPrefix(ref, "sha256:"))
	if len(h) < MinIDPrefix || len(h) > 64 {
		return "", fmt.Errorf("key id %q: want sha256: and 64 hex digits, or a prefix of at least %d of them", ref, MinIDPrefix)
	}
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", fmt.Errorf("key id %q: %q is not a hex digit", ref, c)
		}
	}
	var found []string
	seen := map[string]bool{}
	for _, id := range known {
		if seen[id] {
			continue
		}
		seen[id] = true
		if strings.HasPrefix(strings.TrimPrefix(id, "sha256:"), h) {
			found = append(found, id)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no known key has the id %q", ref)
	case 1:
		return found[0], nil
	}
	short := make([]string, len(found))
	for i, id := range found {
		short[i] = ShortID(id)
	}
	return "", fmt.Errorf("key id %q is ambiguous: it matches %s", ref, strings.Join(short, ", "))
}
