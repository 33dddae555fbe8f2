package main

import (
	"bufio"
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/guard"
)

// The answers of a review on a terminal: a approves the rest of what may
// be approved in bulk but still asks about a changed definition; s skips
// the rest of a server; j shows and asks again; q and the end of input
// stop, leaving the rest pending.
func TestReviewAnswers(t *testing.T) {
	rv := &reviewed{ts: []target{{ServerSpec: &guard.ServerSpec{Name: "notes", Label: "notes"}}, {ServerSpec: &guard.ServerSpec{Name: "wiki", Label: "wiki"}}}, reps: []*checkReport{{}, {}}}
	items := []guard.ReviewItem{
		{Report: 0, Server: "unsigned:notes", Tool: "a", Ref: "a", Category: guard.CategoryNewTools, Bulk: true},
		{Report: 0, Server: "unsigned:notes", Tool: "b", Ref: "b", Category: guard.CategoryChanges},
		{Report: 0, Server: "unsigned:notes", Tool: "c", Ref: "c", Category: guard.CategoryNewTools, Bulk: true},
		{Report: 1, Server: "unsigned:wiki", Tool: "d", Ref: "d", Category: guard.CategoryNewTools, Bulk: true},
		{Report: 1, Server: "unsigned:wiki", Tool: "e", Ref: "e", Category: guard.CategoryNewTools, Bulk: true},
	}
	for _, tc := range []struct{ in, want string }{
		{"a\n", "a c d e"}, // b asked, and the input ends: not approved
		{"a\nn\n", "a c d e"},
		{"a\ny\n", "a b c d e"},
		{"s\ny\nn\n", "d"},    // the rest of notes skipped
		{"j\ny\nn\nq\n", "a"}, // j asks again; q stops
		{"y\nyes\nY\n", "a b c"},
		{"x\nn\n\nn\ny\n", "e"}, // an unknown answer is no
	} {
		names, stderr := walkAnswers(t, rv, items, tc.in)
		if names != tc.want {
			t.Errorf("answers %q approved %q, want %q\n%s", tc.in, names, tc.want, stderr)
		}
	}
}

// walkAnswers walks the review of items with the answers in, and returns
// the tools approved, space-separated, and what the person was shown.
func walkAnswers(t *testing.T, rv *reviewed, items []guard.ReviewItem, in string) (string, string) {
	t.Helper()
	var stderr bytes.Buffer
	e := &env{ctx: context.Background(), stderr: &stderr}
	got, err := e.walkReview(bufio.NewReader(strings.NewReader(in)), rv, items)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range got {
		names = append(names, it.Tool)
	}
	return strings.Join(names, " "), stderr.String()
}
