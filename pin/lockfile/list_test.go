package lockfile

import (
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/pin"
)

// TestErrorsListTheirItems: the errors that list items give them apart
// (List), so that a program prints one a line with each escaped on its
// own, and their text is the sentence and the items, one a line.
func TestErrorsListTheirItems(t *testing.T) {
	for _, e := range []interface {
		error
		List() (string, []string)
	}{
		&ConflictError{Conflicts: []Conflict{{Ref: "a/b", Pinned: "x", Locked: "y\nforged"}}},
		&UnjustifiedError{Disagreements: []pin.Disagreement{{What: "pin", Ref: "a/b", Record: -1, Msg: "edited"}}},
		&RefusedError{Refused: []string{"a/b: revoked", "a/c: changed"}},
	} {
		sentence, items := e.List()
		if e.Error() != sentence+":\n  "+strings.Join(items, "\n  ") || len(items) == 0 || strings.Contains(sentence, "\n") {
			t.Errorf("%T: %q vs %q %q", e, e.Error(), sentence, items)
		}
	}
}
