package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Zeroed pages: audit verify exits 10 naming the damage and never panics.
// It stays Go: it zeroes each page of a database whose page count is known
// only at run time, and a free page may pass (0) while a used one fails.
func TestCLIZeroedPages(t *testing.T) {
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "allow")
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		p.ok(append([]string{"pin", "approve"}, append(pinArgs, "--name", n, "--tools", "live-ok.json")...)...)
	}
	p.expect(0, "history intact", "audit", "verify", "--pins", "pins.db")
	good, _ := os.ReadFile(filepath.Join(p.dir, "pins.db"))
	const page = 4096
	detected := 0
	for pg := 2; pg < len(good)/page; pg++ {
		bad := bytes.Clone(good)
		clear(bad[pg*page : (pg+1)*page])
		os.WriteFile(filepath.Join(p.dir, "pins.db"), bad, 0o600)
		r := p.run("audit", "verify", "--pins", "pins.db")
		if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine") {
			t.Fatalf("page %d: audit verify crashed:\n%s", pg, r.stderr)
		}
		switch r.code {
		case 0: // a free page
		case 10:
			if !strings.Contains(r.stdout, "damaged") && !strings.Contains(r.stdout, "history record") {
				t.Fatalf("page %d: exit 10 without naming the damage: %s", pg, r.stdout)
			}
			detected++
		default:
			t.Fatalf("page %d: exit %d\n%s%s", pg, r.code, r.stdout, r.stderr)
		}
	}
	if detected == 0 {
		t.Fatal("no zeroed page detected")
	}
}
