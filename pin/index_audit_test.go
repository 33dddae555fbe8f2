package pin

import (
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestAuditNamesIndexEntryWithoutPin proves that an entry of the names
// index that no pin explains (written by hand, or left by a deletion) is
// named by the audit, while the index an approval writes audits clean.
func TestAuditNamesIndexEntryWithoutPin(t *testing.T) {
	s := openTemp(t)
	mustApprove(t, s, obs("acme:weather", 1, tool(t, "get_weather", "1.0.0", weatherDef, keyA)))
	d, err := auditPins(t, s)
	if err != nil || len(d) != 0 {
		t.Fatalf("a store as approved audits with %v, %v", d, err)
	}
	s = edit(t, s, func(tx *bolt.Tx) {
		if err := tx.Bucket(bNames).Put([]byte("ghost_tool"), []byte(`["acme:weather"]`)); err != nil {
			t.Fatal(err)
		}
	})
	d, _ = auditPins(t, s)
	if !slices.ContainsFunc(d, func(d Disagreement) bool {
		return d.What == "index" && d.Ref == "name ghost_tool" && d.Msg == "no pin has it"
	}) {
		t.Fatalf("audit does not name the index entry no pin has: %v", d)
	}
}
