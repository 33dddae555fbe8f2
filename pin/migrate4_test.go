package pin

import (
	"encoding/binary"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A schema 3 database pins a name with a braille blank, indexed under the
// skeleton schema 3 gave it: migration 4 indexes it under today's
// skeleton, so a look-alike with a space is caught and audit verify finds
// the index in agreement with the pins.
func TestMigrate4Skeletons(t *testing.T) {
	fileOnly(t)
	s := openTemp(t)
	blank := tool(t, "get\u2800weather", "", `{"name":"get\u2800weather"}`, Unsigned)
	mustApprove(t, s, obs(UnsignedServerKey("a"), 0, blank))
	s = edit(t, s, func(tx *bolt.Tx) {
		sk := tx.Bucket(bSkeletons)
		sk.Delete([]byte(skeletonOf(blank.Name)))
		putStrings(&kvBucket{b: sk}, "get\u2800weather", []string{blank.Name}) // schema 3's skeleton kept the blank
		tx.Bucket(bMeta).Put(kSchema, u64(3))
	})
	var schema uint64
	var names []string
	s.db.View(func(tx *bolt.Tx) error {
		schema = binary.BigEndian.Uint64(tx.Bucket(bMeta).Get(kSchema))
		names, _ = getStrings(&kvBucket{b: tx.Bucket(bSkeletons)}, skeletonOf(blank.Name))
		return nil
	})
	if schema != SchemaVersion || !slices.Equal(names, []string{blank.Name}) {
		t.Fatalf("schema %d, skeleton entry %v", schema, names)
	}
	if d, err := auditPins(t, s); err != nil || len(d) != 0 {
		t.Fatalf("audit after the migration: %v %v", d, err)
	}
	expect(t, s, obs(UnsignedServerKey("b"), 0, tool(t, "get weather", "", `{"name":"x"}`, Unsigned)), "confusable_name")
}
