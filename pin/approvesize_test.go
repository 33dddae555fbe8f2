package pin

import (
	"strings"
	"testing"
)

// One approval is one transaction that bbolt holds until its commit: more
// than MaxApprovalBytes of definitions is refused whole, nothing written,
// and the same tools can be approved a part at a time.
func TestApprovalBounded(t *testing.T) {
	s := openTemp(t)
	big := strings.Repeat("x", MaxApprovalBytes/2)
	a := tool(t, "a", "", `{"name":"a","description":"`+big+`"}`, Unsigned)
	b := tool(t, "b", "", `{"name":"b","description":"`+big+`"}`, Unsigned)
	o := obs(UnsignedServerKey("big"), 0, a, b)
	size := logSizeOf(t, s)
	if got, _, err := s.Approve(o, ApproveOptions{By: "x"}); err == nil || !strings.Contains(err.Error(), "MiB of tool definitions") || len(got) != 0 {
		t.Fatalf("approval of %d bytes: %d approved, %v", len(a.Canonical)+len(b.Canonical), len(got), err)
	}
	if logSizeOf(t, s) != size {
		t.Fatal("a refused approval wrote records")
	}
	for _, name := range []string{"a", "b"} {
		if got, _, err := s.Approve(o, ApproveOptions{By: "x", Tools: []string{name}}); err != nil || len(got) != 1 {
			t.Fatalf("approving %s alone: %d approved, %v", name, len(got), err)
		}
	}
	expect(t, s, o)
}
