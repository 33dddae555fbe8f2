package pin

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// A fixed key used only by this test, so seeds stay valid; generated with
// note.GenerateKey.
const (
	fuzzSKey = "PRIVATE+KEY+etdi-audit+705816af+AWVW6Na3cQZRk766r2R5TlhUi+PDwERHRtaW9IYoTsW7"
	fuzzVKey = "etdi-audit+705816af+AUfw2rQfooNZpk4XW1xdoaIQFZFKXWX/EU7ifJbfITJ+"
)

// FuzzOpenCheckpoint: a checkpoint that opens re-serializes to exactly the
// signed text, so no two texts can be accepted as the same checkpoint.
func FuzzOpenCheckpoint(f *testing.F) {
	signer, err := note.NewSigner(fuzzSKey)
	if err != nil {
		f.Fatal(err)
	}
	v, err := note.NewVerifier(fuzzVKey)
	if err != nil {
		f.Fatal(err)
	}
	for _, text := range []string{
		"etdi.dev/pins/00112233445566778899aabbccddeeff\n8\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",
		"etdi.dev/pins/x\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",
		"o\n-1\nAA==\n",
	} {
		msg, err := note.Sign(&note.Note{Text: text}, signer)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(msg)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		c, err := OpenCheckpoint(msg, v)
		if err != nil {
			return
		}
		n, err := note.Open(msg, note.VerifierList(v))
		if err != nil {
			t.Fatal("OpenCheckpoint accepted a note that note.Open refuses")
		}
		if c.Text() != n.Text {
			t.Fatalf("accepted checkpoint text %q re-serializes as %q", n.Text, c.Text())
		}
		if strings.Count(n.Text, "\n") != 3 {
			t.Fatalf("accepted a checkpoint with extra lines: %q", n.Text)
		}
	})
}

// FuzzCheckpointText signs arbitrary texts and checks the parser on them:
// whatever it accepts must re-serialize to exactly the signed text.
func FuzzCheckpointText(f *testing.F) {
	signer, _ := note.NewSigner(fuzzSKey)
	v, _ := note.NewVerifier(fuzzVKey)
	f.Add("etdi.dev/pins/00112233445566778899aabbccddeeff\n8\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n")
	f.Add("o\n08\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n")
	f.Add("o\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFV=\n")
	f.Fuzz(func(t *testing.T, text string) {
		msg, err := note.Sign(&note.Note{Text: text}, signer)
		if err != nil {
			return // not a valid note text
		}
		c, err := OpenCheckpoint(msg, v)
		if err != nil {
			return
		}
		if c.Text() != text {
			t.Fatalf("accepted %q, which re-serializes as %q", text, c.Text())
		}
	})
}

// FuzzGeneration: whatever the first bytes of a database file are,
// reading its generation never panics; a file it accepts has a meta page
// whose checksum checks out, and a real database reads as its last
// transaction.
func FuzzGeneration(f *testing.F) {
	dir := f.TempDir()
	real := filepath.Join(dir, "real.db")
	s, err := Open(real, Options{})
	if err != nil {
		f.Fatal(err)
	}
	s.Close()
	seed, _ := os.ReadFile(real)
	f.Add(seed[:min(len(seed), 8192)])
	f.Add([]byte{})
	f.Add(make([]byte, 4096+80))
	f.Fuzz(func(t *testing.T, data []byte) {
		txid, err := generationOf(bytes.NewReader(data))
		if err != nil {
			return
		}
		if len(data) < 80 {
			t.Fatalf("generation %d of %d bytes", txid, len(data))
		}
	})
}
