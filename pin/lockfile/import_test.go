package lockfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/pin"
)

// historySize is the number of records of s's history.
func historySize(t *testing.T, s *pin.Store) int64 {
	t.Helper()
	tree, err := s.VerifyLog()
	if err != nil {
		t.Fatal(err)
	}
	return tree.Size
}

// A lockfile never brings back what the database revoked: a revoked
// tool, a revoked version and every tool of a revoked key stay refused,
// with --replace too, the import fails naming the revocation, and the
// revocation stays.
func TestImportMeetsRevocation(t *testing.T) {
	a := openStore(t)
	team(t, a, "Get the weather.")
	f, err := Export(a)
	if err != nil {
		t.Fatal(err)
	}
	for name, rv := range map[string]pin.Revocation{
		"tool":    {Server: "acme:weather", Tool: "get_weather", By: "sec"},
		"version": {Server: "acme:weather", Tool: "get_weather", Version: "1.0.0", By: "sec"},
		"key":     {KeyID: keyA.ID, By: "sec"},
	} {
		t.Run(name, func(t *testing.T) {
			b := openStore(t)
			// The database approved get_weather 1.0.0 with another
			// definition, then revoked it (or its key).
			o := observations(t, "Another weather tool.")[0]
			o.Tools = o.Tools[:1]
			approveAll(t, b, o, "dave")
			if err := b.Revoke(rv); err != nil {
				t.Fatal(err)
			}
			before, _ := b.Get("acme:weather", "get_weather")
			n := historySize(t, b)
			// Without --replace: a conflict, nothing written.
			var ce *ConflictError
			if _, err := Import(b, f, ImportOptions{}); !errors.As(err, &ce) {
				t.Fatalf("import over a revoked pin: %v", err)
			}
			if historySize(t, b) != n {
				t.Fatal("a conflicting import wrote to the history")
			}
			// With --replace: refused as revoked.
			res, err := Import(b, f, ImportOptions{Replace: true})
			if err == nil || !strings.Contains(err.Error(), "acme:weather/get_weather") || !strings.Contains(err.Error(), "revoked") {
				t.Fatalf("import over a revocation: %v", err)
			}
			if p, _ := b.Get("acme:weather", "get_weather"); p == nil || p.Digest != before.Digest {
				t.Fatalf("the revoked tool was approved from the lockfile: %+v", p)
			}
			if res != nil {
				for _, x := range res.Approved {
					if x.Pin.Tool == "get_weather" {
						t.Fatalf("reported approved: %+v", x)
					}
				}
			}
			revs, _ := b.Revocations()
			found := false
			for _, r := range revs {
				found = found || (r.Server == rv.Server && r.Tool == rv.Tool && r.Version == rv.Version && r.KeyID == rv.KeyID)
			}
			if !found {
				t.Fatal("the revocation is gone")
			}
			if _, dis, err := b.Audit(); err != nil || len(dis) > 0 {
				t.Fatalf("audit: %v %v", err, dis)
			}
		})
	}
	// A revoked key with no pin of the database: the lockfile's tools of
	// that key are refused.
	b := openStore(t)
	if err := b.Revoke(pin.Revocation{KeyID: keyA.ID, By: "sec"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(b, f, ImportOptions{}); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("import of tools of a revoked key: %v", err)
	}
	if p, _ := b.Get("acme:weather", "get_weather"); p != nil {
		t.Fatalf("a tool of a revoked key was approved: %+v", p)
	}
	// A database that pinned the tool, then revoked it, and a lockfile
	// with the same pin: the pin is unchanged, the revocation stays, and
	// the tool is judged revoked.
	b = openStore(t)
	if _, err := Import(b, f, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Revoke(pin.Revocation{Server: "acme:weather", Tool: "get_weather", By: "sec"}); err != nil {
		t.Fatal(err)
	}
	if res, err := Import(b, f, ImportOptions{Replace: true}); err != nil || len(res.Approved) != 0 {
		t.Fatalf("again over the revocation: %v %+v", err, res)
	}
	c, err := b.Compare(observations(t, "Get the weather.")[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(kinds(c), ","), "revoked") {
		t.Fatalf("after importing the same pin again: %v", kinds(c))
	}
}

// A pin of the database served by one artifact and the lockfile's of
// the same definition served by another (a swapped package or image) is
// a conflict naming both, and nothing is written; --replace re-approves
// it as a replacement. A lockfile pin without "served" over one with it
// is a conflict too: the lockfile would lose the binding.
func TestImportMeetsOtherArtifact(t *testing.T) {
	a := openStore(t)
	team(t, a, "Get the weather.")
	f, err := Export(a)
	if err != nil {
		t.Fatal(err)
	}
	for name, served := range map[string]string{
		"other artifact": "npm @acme/weather@1.2.0 sha512-evil",
		"no artifact":    "",
	} {
		t.Run(name, func(t *testing.T) {
			g, _ := Export(a)
			for i := range g.Pins {
				if g.Pins[i].Tool == "get_alerts" { // of the latest bundle
					g.Pins[i].Served = served
				}
			}
			b := openStore(t)
			if _, err := Import(b, f, ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			n := historySize(t, b)
			_, err := Import(b, g, ImportOptions{})
			var ce *ConflictError
			if !errors.As(err, &ce) || len(ce.Conflicts) == 0 {
				t.Fatalf("import of another artifact: %v", err)
			}
			for _, c := range ce.Conflicts {
				if c.Ref != "acme:weather/get_alerts" || !strings.Contains(c.Pinned, "served by npm @acme/weather@1.2.0 sha512-abc") ||
					(served != "" && !strings.Contains(c.Locked, "served by "+served)) || (served == "" && strings.Contains(c.Locked, "served by")) {
					t.Errorf("conflict %+v", c)
				}
			}
			if historySize(t, b) != n {
				t.Fatal("a conflicting import wrote to the history")
			}
			if p, _ := b.Get("acme:weather", "get_alerts"); p == nil || p.Served != "npm @acme/weather@1.2.0 sha512-abc" {
				t.Fatalf("the pin changed: %+v", p)
			}
			if served == "" {
				return
			}
			res, err := Import(b, g, ImportOptions{Replace: true})
			if err != nil {
				t.Fatal(err)
			}
			replaced := 0
			for _, x := range res.Approved {
				if x.Replaced != "" && x.Pin.Served == served {
					replaced++
				}
			}
			if replaced == 0 {
				t.Fatalf("--replace: %+v", res.Approved)
			}
			if p, _ := b.Get("acme:weather", "get_alerts"); p == nil || p.Served != served {
				t.Fatalf("after --replace: %+v", p)
			}
		})
	}
}
