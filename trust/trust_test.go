package trust

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/keys"
)

func newKey(t *testing.T) Key {
	t.Helper()
	priv, err := keys.Generate(keys.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	return Key{PublicKey: priv.Public()}
}

func TestAddRemoveRoundTrip(t *testing.T) {
	p := New()
	k1, k2 := newKey(t), newKey(t)
	k2.NotAfter = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	if upd, err := p.AddKey("acme", k1); err != nil || upd {
		t.Fatal(upd, err)
	}
	if _, err := p.AddKey("acme", k2); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AddKey("globex", k1); err != nil {
		t.Fatal(err)
	}
	k1w := k1
	k1w.NotBefore = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if upd, err := p.AddKey("acme", k1w); err != nil || !upd {
		t.Fatalf("re-adding a key should update its window: %v %v", upd, err)
	}
	path := filepath.Join(t.TempDir(), "trust.json")
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	q, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Providers) != 2 || len(q.Provider("acme").Keys) != 2 || q.Unsigned != Block {
		t.Fatalf("round trip: %+v", q)
	}
	if got := q.Provider("acme").Keys[0].NotBefore; !got.Equal(k1w.NotBefore) {
		t.Errorf("window lost: %v", got)
	}
	id2, _ := keys.ID(k2.PublicKey)
	if err := q.Remove("acme", id2[:len("sha256:")+8]); err == nil || !strings.Contains(err.Error(), "at least 16") {
		t.Fatalf("an 8-digit prefix was accepted: %v", err)
	}
	if err := q.Remove("acme", id2[:len("sha256:")+16]); err != nil {
		t.Fatal(err)
	}
	if len(q.Provider("acme").Keys) != 1 {
		t.Fatal("key not removed")
	}
	if err := q.Remove("acme", "sha256:12"); err == nil {
		t.Error("short key id accepted")
	}
	if err := q.Remove("globex", ""); err != nil || q.Provider("globex") != nil {
		t.Fatal("provider not removed")
	}
	if err := q.Remove("nobody", ""); err == nil {
		t.Error("removing an unknown provider succeeded")
	}
	if _, err := p.AddKey("bad id!", k1); err == nil {
		t.Error("invalid provider id accepted")
	}
	bad := k1
	bad.NotBefore, bad.NotAfter = k2.NotAfter, k2.NotAfter.Add(-time.Hour)
	if _, err := p.AddKey("acme", bad); err == nil {
		t.Error("inverted window accepted")
	}
}

func TestParseRejects(t *testing.T) {
	p := New()
	k := newKey(t)
	p.AddKey("acme", k)
	good, _ := p.Marshal()
	other := newKey(t)
	otherID, _ := keys.ID(other.PublicKey)
	id, _ := keys.ID(k.PublicKey)
	for _, tc := range []struct{ name, from, to, want string }{
		{"unknown field", `"unsigned"`, `"unsinged": "allow", "unsigned"`, `unknown field "unsinged"`},
		{"bad unsigned rule", `"unsigned": "block"`, `"unsigned": "maybe"`, "not allow, warn or block"},
		{"bad artifacts rule", `"unsigned": "block"`, `"unsigned": "block", "artifacts": "sometimes"`, "not require, warn or ignore"},
		{"wrong version", `"version": 1`, `"version": 2`, "unsupported trust policy version"},
		{"key id mismatch", id, otherID, "is not the id of publicKey"},
		{"duplicate provider", `"providers": [`, `"providers": [{"id":"acme","keys":[{"id":"` + id + `","publicKey":"x"}]},`, "publicKey"},
		{"bad time", `"id": "` + id + `"`, `"id": "` + id + `", "notAfter": "soon"`, "RFC 3339"},
		{"inverted window", `"id": "` + id + `"`, `"id": "` + id + `", "notBefore": "2027-01-01T00:00:00Z", "notAfter": "2026-01-01T00:00:00Z"`, "not after notBefore"},
		{"duplicate json key", `"version": 1`, `"version": 1, "version": 1`, "duplicate member name"},
		{"no keys", `"keys": [`, `"keys": [], "x": [`, `unknown field "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Replace(string(good), tc.from, tc.to, 1)
			if in == string(good) {
				t.Fatal("edit did not apply")
			}
			if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v does not contain %q", err, tc.want)
			}
		})
	}
	// Two providers with the same id.
	p2 := New()
	p2.AddKey("acme", k)
	p2.Providers = append(p2.Providers, p2.Providers[0])
	b, _ := p2.Marshal()
	if _, err := Parse(b); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Errorf("duplicate provider: %v", err)
	}
	// One key twice under a provider.
	p3 := New()
	p3.AddKey("acme", k)
	p3.Providers[0].Keys = append(p3.Providers[0].Keys, p3.Providers[0].Keys[0])
	b, _ = p3.Marshal()
	if _, err := Parse(b); err == nil || !strings.Contains(err.Error(), "key "+keys.ShortID(id)+" listed twice") {
		t.Errorf("duplicate key: %v", err)
	}
	// A provider that cannot be satisfied: no way to sign, or a required
	// way it does not configure.
	pemText, err := keys.MarshalPublicKey(k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	idp := `"idp": {"issuer": "https://idp.example", "audience": "etdi", "subjects": ["acme-ci"]}`
	for _, tc := range []struct{ prov, want string }{
		{`{"id": "acme", "keys": []}`, `provider "acme" has no keys, no keyless signers and no identity provider`},
		{`{"id": "acme", "require": "key", ` + idp + `}`, `provider "acme" requires a key signature but lists no keys`},
		{`{"id": "acme", "require": "both", ` + idp + `}`, `provider "acme" requires a key signature but lists no keys`},
		{`{"id": "acme", "require": "idp", "keys": [{"id": "` + id + `", "publicKey": ` + strconv.Quote(string(pemText)) + `}]}`, `provider "acme" requires an identity provider token but configures none`},
	} {
		doc := `{"version": 1, "providers": [` + tc.prov + `]}`
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v does not contain %q", doc, err, tc.want)
		}
	}
	if _, err := Parse([]byte(`{"version": 1, "providers": [{"id": "acme", "require": "idp", ` + idp + `}]}`)); err != nil {
		t.Errorf("a provider with only an identity provider: %v", err)
	}
	// Absent unsigned rule means block.
	q, err := Parse([]byte(`{"version":1,"providers":[]}`))
	if err != nil || q.Unsigned != Block {
		t.Errorf("default unsigned rule: %v %v", q, err)
	}
	// Absent artifacts rule means warn; a rule set survives a round trip.
	if q.ArtifactRule() != ArtifactsWarn || q.Artifacts != "" {
		t.Errorf("default artifacts rule: %q", q.ArtifactRule())
	}
	q.Artifacts = ArtifactsRequire
	b, _ = q.Marshal()
	if r, err := Parse(b); err != nil || r.ArtifactRule() != ArtifactsRequire {
		t.Errorf("artifacts rule round trip: %v %v\n%s", r, err, b)
	}
}

func TestValidAt(t *testing.T) {
	nb := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	na := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	k := Key{ID: "sha256:00", NotBefore: nb, NotAfter: na}
	for at, ok := range map[time.Time]bool{nb.Add(-time.Second): false, nb: true, na: true, na.Add(time.Second): false} {
		err := k.ValidAt(at)
		if (err == nil) != ok {
			t.Errorf("ValidAt(%v) = %v", at, err)
		}
		if we, isWE := err.(*WindowError); isWE && we.NotYetValid() != at.Before(nb) {
			t.Errorf("NotYetValid wrong at %v", at)
		}
	}
	if (&Key{}).ValidAt(time.Now()) != nil {
		t.Error("unbounded key not valid")
	}
}

func TestSaveKeepsOldFileOnFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trust.json")
	p := New()
	p.AddKey("acme", newKey(t))
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	os.Chmod(dir, 0o500)
	defer os.Chmod(dir, 0o700)
	p.AddKey("globex", newKey(t))
	if err := p.Save(path); err == nil && os.Geteuid() != 0 {
		t.Fatal("save into a read-only directory succeeded")
	}
	after, _ := os.ReadFile(path)
	if os.Geteuid() != 0 && string(before) != string(after) {
		t.Fatal("a failed save changed the policy file")
	}
}

// TestParseBounds: every member is bounded and read strictly; the first
// member in error is the one reported.
func TestParseBounds(t *testing.T) {
	files := func(n int) string {
		var fs []string
		for i := range n {
			fs = append(fs, strconv.Quote(fmt.Sprintf("p%d.cedar", i)))
		}
		return "[" + strings.Join(fs, ",") + "]"
	}
	for _, tc := range []struct{ name, members, want string }{
		{"cedar file twice", `"cedar": ["a.cedar", "a.cedar"]`, `"a.cedar" listed twice`},
		{"too many cedar files", `"cedar": ` + files(MaxCedarFiles+1), fmt.Sprintf("more than %d policy files", MaxCedarFiles)},
		{"empty cedar path", `"cedar": [""]`, "not a file path"},
		{"NUL in cedar path", `"cedar": ["a\u0000b"]`, "not a file path"},
		{"long cedar path", `"cedar": ["` + strings.Repeat("a", 4097) + `"]`, "not a file path"},
		{"no trusted roots", `"sigstoreTrustedRoots": []`, fmt.Sprintf("must hold 1 to %d trusted roots", MaxSigstoreRoots)},
		{"too many trusted roots", `"sigstoreTrustedRoots": [` + strings.Repeat(`{},`, MaxSigstoreRoots) + `{}]`, fmt.Sprintf("must hold 1 to %d trusted roots", MaxSigstoreRoots)},
		{"version before cedar", `"version": 2, "cedar": [""]`, "unsupported trust policy version"},
	} {
		doc := `{"version": 1, "providers": [], ` + tc.members + `}`
		if strings.Contains(tc.members, `"version"`) {
			doc = `{"providers": [], ` + tc.members + `}`
		}
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v does not contain %q", tc.name, err, tc.want)
		}
	}
	// A policy is read whole, within 4 MiB.
	big := `{"version": 1, "providers": [], "cedar": ["a.cedar"]}` + strings.Repeat(" ", 4<<20)
	if _, err := Parse([]byte(big)); err == nil || !strings.Contains(err.Error(), "larger than 4 MiB") {
		t.Errorf("a policy over 4 MiB: %v", err)
	}
	if _, err := Parse([]byte(big[:4<<20])); err != nil {
		t.Errorf("a policy of 4 MiB: %v", err)
	}
}
