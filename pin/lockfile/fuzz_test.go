package lockfile

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/strictjson"
	"golang.org/x/mod/sumdb/note"
)

// A fixed audit key used only by these tests, so that the committed
// lockfile's signature stays valid; generated with note.GenerateKey.
const (
	testSKey = "PRIVATE+KEY+etdi-audit+07f8964f+AYj3uLuoQ3T6f/eaf+abwkqPKIq0MkPZ8aS3IRposi7q"
	testVKey = "etdi-audit+07f8964f+AS2lYMuaQOsrJBmWPTtDYxYH+Qn3xzYOOEmeDgX2NY7E"
)

// seed is the committed example lockfile (signed with the test key).
const seed = "testdata/team.lock.json"

// The committed example is what Export, Sign and Marshal make of the
// team database today: the canonical form does not drift.
func TestSeedLockfile(t *testing.T) {
	s := openStore(t)
	team(t, s, "Get the weather.")
	f, err := Export(s)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := note.NewSigner(testSKey)
	f.Generation, f.Expires = 1, expiry
	if err := f.Sign(signer); err != nil {
		t.Fatal(err)
	}
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("ETDI_UPDATE_LOCKFILE") == "1" {
		os.WriteFile(seed, b, 0o644)
	}
	want, err := os.ReadFile(seed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("%s is not today's export (ETDI_UPDATE_LOCKFILE=1 rewrites it):\n%s", seed, b)
	}
	v, _ := note.NewVerifier(testVKey)
	g, err := Parse(want)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Verify(v); err != nil {
		t.Fatal(err)
	}
}

// FuzzParse: whatever Parse accepts has a canonical form that parses back
// to the same form, every definition has its digest, and verification
// never panics.
func FuzzParse(f *testing.F) {
	data, err := os.ReadFile(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	v, _ := strictjson.Parse(data)
	f.Add(strictjson.AppendCanonical(nil, v))
	for _, s := range []string{
		`{"etdiLock":1,"servers":[],"pins":[],"revocations":[]}`,
		`{"etdiLock":1,"servers":[],"pins":[],"revocations":[],"signature":"x\n\n— etdi-audit AAAA\n"}`,
		`{"etdiLock":1,"etdiLock":1}`,
		`{"etdiLock":1,"servers":[{"server":"unsigned:a","name":"a"}],"pins":[{"server":"unsigned:a","tool":"t","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","signer":{"kind":"none"},"permissions":[],"definition":{"name":"t"}}],"revocations":[]}`,
		`{"etdiLock":1,"servers":[{"server":"p:a","name":"a","provider":"p","instructionsKnown":true,"instructions":"x"}],"pins":[{"server":"p:a","provider":"p","tool":"t","version":"1.0.0","digest":"sha256:3647a67649228b62fe3d139c47f7a3c673c31ce57da824082b6654fc0b15751f","signer":{"kind":"key","id":"k"},"permissions":[{"scope":"a:b"}],"sequence":2,"served":"url https://x:443/","definition":{"name":"t"}}],"revocations":[{"server":"p:a","tool":"t","version":"1.0.0"},{"keyId":"sha256:3647a67649228b62fe3d139c47f7a3c673c31ce57da824082b6654fc0b15751f","reason":"r"}]}`,
	} {
		f.Add([]byte(s))
	}
	verifier, _ := note.NewVerifier(testVKey)
	f.Fuzz(func(t *testing.T, data []byte) {
		lf, err := Parse(data)
		if err != nil {
			return
		}
		for _, p := range lf.Pins {
			if etdi.Digest(sha256.Sum256(p.Definition)).String() != p.Digest {
				t.Fatalf("%s: accepted with a definition of another digest", p.Ref())
			}
		}
		b, err := lf.Marshal()
		if err != nil {
			t.Fatalf("accepted, but its canonical form does not read back: %v", err)
		}
		again, err := Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		c, err := again.Marshal()
		if err != nil || !bytes.Equal(b, c) {
			t.Fatalf("the canonical form is not stable: %v\n%s\n----\n%s", err, b, c)
		}
		var ve *VerifyError
		if err := lf.Verify(verifier); err != nil && !errors.As(err, &ve) {
			t.Fatalf("verification failed with %T, not a VerifyError: %v", err, err)
		}
	})
}
