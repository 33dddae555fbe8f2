package main

import (
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/guard"
)

// The hint after a review names --yes only with the categories that would
// approve something pending, as one argument a person can paste; what may
// only be decided one by one gets no --yes at all.
func TestDecideHint(t *testing.T) {
	bulk := []guard.ReviewItem{
		{Category: guard.CategoryNewTools, Bulk: true},
		{Category: guard.CategoryUpdates, Bulk: true},
		{Category: guard.CategoryChanges},
	}
	h := decideHint("decide the rest", bulk)
	if !strings.Contains(h, "etdi review --yes=new-tools,updates for") {
		t.Errorf("hint %q does not name exactly the pending bulk categories as one argument", h)
	}
	h = decideHint("decide the rest", []guard.ReviewItem{{Category: guard.CategoryChanges}, {Category: guard.CategoryImpersonation}})
	if strings.Contains(h, "--yes") || !strings.HasSuffix(h, "on a terminal\n") {
		t.Errorf("hint %q offers bulk approval for what is decided one by one", h)
	}
}
