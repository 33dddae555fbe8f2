package main

import (
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/guard"
)

// Once the input of a review ends, nothing more is asked: the items left
// stay pending, and only what a approved before is approved.
func TestReviewEndOfInput(t *testing.T) {
	rv := &reviewed{ts: []target{{ServerSpec: &guard.ServerSpec{Name: "notes", Label: "notes"}}}, reps: []*checkReport{{}}}
	items := []guard.ReviewItem{
		{Report: 0, Server: "unsigned:notes", Tool: "a", Ref: "a", Category: guard.CategoryNewTools, Bulk: true},
		{Report: 0, Server: "unsigned:notes", Tool: "b", Ref: "b", Category: guard.CategoryChanges},
		{Report: 0, Server: "unsigned:notes", Tool: "c", Ref: "c", Category: guard.CategoryNewTools, Bulk: true},
		{Report: 0, Server: "unsigned:notes", Tool: "d", Ref: "d", Category: guard.CategoryChanges},
	}
	for _, tc := range []struct {
		in, want string
		asked    int
	}{
		{"y\n", "a", 2},
		{"a\n", "a c", 2},
		{"", "", 1},
	} {
		names, stderr := walkAnswers(t, rv, items, tc.in)
		if n := strings.Count(stderr, "? [y]es"); names != tc.want || n != tc.asked {
			t.Errorf("answers %q approved %q after %d questions, want %q after %d\n%s", tc.in, names, n, tc.want, tc.asked, stderr)
		}
	}
}
