package finding

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The manual's table of what approving resolves (docs/check.md) lists
// every kind once, in the row of its Approvability.
func TestDocumentedApprovability(t *testing.T) {
	b, err := os.ReadFile("../docs/check.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "#### Which findings approving resolves")
	if !ok {
		t.Fatal("docs/check.md has no section \"Which findings approving resolves\"")
	}
	rows := map[string]Approvability{"resolves it (": Approvable, "resolves it only when": ApprovableByName, "never resolves it": NotApprovable}
	code := regexp.MustCompile("`([a-z_]+)`")
	documented := map[Kind]Approvability{}
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| ") {
			if len(documented) > 0 {
				break // the end of the table
			}
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for prefix, a := range rows {
			if !strings.HasPrefix(strings.TrimSpace(cells[1]), prefix) {
				continue
			}
			for _, m := range code.FindAllStringSubmatch(cells[2], -1) {
				k := Kind(m[1])
				if _, dup := documented[k]; dup {
					t.Errorf("%s is listed twice", k)
				}
				documented[k] = a
			}
		}
	}
	kinds := Kinds()
	slices.Sort(kinds)
	for _, k := range kinds {
		a, ok := documented[k]
		switch {
		case !ok:
			t.Errorf("%s is not in the table", k)
		case a != k.Approvability():
			t.Errorf("%s is in the row of approvability %d, its kind says %d", k, a, k.Approvability())
		}
		delete(documented, k)
	}
	for k := range documented {
		t.Errorf("the table lists %s, which is no kind", k)
	}
}
