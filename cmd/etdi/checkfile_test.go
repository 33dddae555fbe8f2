package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuditVerifyDamagedPages: pin databases damaged so that bbolt's own
// page check panics in its goroutine (meta page 1 zeroed) or faults on the
// memory map (8 bytes written into a branch page) are reported as damaged
// with exit 10; etdi itself never crashes.
func TestAuditVerifyDamagedPages(t *testing.T) {
	for _, name := range []string{"meta1-zeroed.db", "page5-8bytes.db"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			data, err := os.ReadFile(filepath.Join("testdata", "damaged", name))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, "pins.db"), data, 0o600)
			for _, args := range [][]string{{"audit", "verify", "--pins", "pins.db"}, {"audit", "verify", "--pins", "pins.db", "--json"}} {
				r := runEtdi(t, dir, nil, args...)
				if r.code != 10 || !strings.Contains(r.stdout, "is damaged") {
					t.Fatalf("etdi %v: exit %d, want 10 naming the damage:\n%s%s", args, r.code, r.stdout, r.stderr)
				}
				if strings.Contains(r.stderr, "goroutine ") {
					t.Fatalf("etdi crashed:\n%s", r.stderr)
				}
			}
		})
	}
}
