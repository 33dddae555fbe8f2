package lockfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/pin"
	"golang.org/x/mod/sumdb/note"
)

// signedTeam is the team database's export, signed by signer at
// generation gen, expiring at exp.
func signedTeam(t *testing.T, s *pin.Store, signer note.Signer, gen uint64, exp time.Time) *File {
	t.Helper()
	f, err := Export(s)
	if err != nil {
		t.Fatal(err)
	}
	f.Generation, f.Expires = gen, exp
	if err := f.Sign(signer); err != nil {
		t.Fatal(err)
	}
	// Through its file form, as a check reads it.
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if f, err = Parse(b); err != nil {
		t.Fatal(err)
	}
	return f
}

// Accept remembers the highest generation per key: a lower one is a
// rollback, the same one with other content too, the same lockfile
// again and a higher one pass; an expired lockfile is refused and not
// remembered; another key's generations are its own.
func TestAcceptRollback(t *testing.T) {
	s := openStore(t)
	team(t, s, "Get the weather.")
	signer, verifier := newKey(t)
	otherSigner, otherVerifier := newKey(t)
	state := filepath.Join(t.TempDir(), "config", StateFile)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	exp := now.Add(24 * time.Hour)
	accept := func(f *File, keys ...note.Verifier) error {
		return f.Accept(AcceptOptions{Keys: keys, Now: now, State: state})
	}
	v5 := signedTeam(t, s, signer, 5, exp)
	if err := accept(v5, verifier); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(state); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v", fi, err)
	}
	if err := accept(v5, verifier); err != nil {
		t.Fatalf("the same lockfile again: %v", err)
	}
	// A revocation, then generation 6.
	if err := s.Revoke(pin.Revocation{Server: "acme:weather", Tool: "get_weather", By: "bob"}); err != nil {
		t.Fatal(err)
	}
	v6 := signedTeam(t, s, signer, 6, exp)
	if err := accept(v6, verifier); err != nil {
		t.Fatal(err)
	}
	var re *RollbackError
	err := accept(v5, verifier)
	if !errors.As(err, &re) || re.SameGeneration || re.Generation != 5 || re.Accepted != 6 || !strings.Contains(err.Error(), "older than generation 6") {
		t.Fatalf("generation 5 after 6: %v", err)
	}
	// Generation 6 again with other content (the revocation left out,
	// say): refused, though its signature is valid.
	other := signedTeam(t, s, signer, 6, exp)
	other.Revocations = other.Revocations[1:]
	if err := other.Sign(signer); err != nil {
		t.Fatal(err)
	}
	if err := accept(other, verifier); !errors.As(err, &re) || !re.SameGeneration {
		t.Fatalf("generation 6 with other content: %v", err)
	}
	// The same content with a later expiry is other content as well.
	later := signedTeam(t, s, signer, 6, exp.Add(time.Hour))
	if err := accept(later, verifier); !errors.As(err, &re) || !re.SameGeneration {
		t.Fatalf("generation 6 with a later expiry: %v", err)
	}
	if err := accept(v6, verifier); err != nil {
		t.Fatalf("the accepted generation again: %v", err)
	}
	// Another key: its own generations, which leave the first key's alone.
	o1 := signedTeam(t, s, otherSigner, 1, exp)
	if err := accept(o1, otherVerifier, verifier); err != nil {
		t.Fatalf("another key's generation 1: %v", err)
	}
	if err := accept(v5, verifier); !errors.As(err, &re) {
		t.Fatalf("the other key's lockfile lowered the first key's generation: %v", err)
	}
	// Signed by both keys: each key's generation counts.
	both := signedTeam(t, s, signer, 6, exp)
	msg, err := note.Sign(&note.Note{Text: mustText(t, both)}, signer, otherSigner)
	if err != nil {
		t.Fatal(err)
	}
	both.Signature = string(msg)
	if err := accept(both, verifier, otherVerifier); err != nil {
		t.Fatalf("signed by both at generations they accept: %v", err)
	}
	low := signedTeam(t, s, signer, 2, exp)
	msg, _ = note.Sign(&note.Note{Text: mustText(t, low)}, signer, otherSigner)
	low.Signature = string(msg)
	if err := accept(low, otherVerifier); !errors.As(err, &re) || re.Accepted != 6 {
		t.Fatalf("generation 2 of a key that reached 6: %v", err)
	}

	// Expired: refused, and not remembered.
	x := signedTeam(t, s, signer, 100, now)
	var xe *ExpiredError
	if err := accept(x, verifier); !errors.As(err, &xe) {
		t.Fatalf("expired at now: %v", err)
	}
	if err := accept(signedTeam(t, s, signer, 7, exp), verifier); err != nil {
		t.Fatalf("the expired generation 100 was remembered: %v", err)
	}
	if err := x.Accept(AcceptOptions{Keys: []note.Verifier{verifier}, Now: now.Add(-time.Second)}); err != nil {
		t.Fatalf("a second before its expiry: %v", err)
	}
	// The signature first: a lockfile of another key is a VerifyError
	// and touches no state.
	var ve *VerifyError
	before, _ := os.ReadFile(state)
	if err := accept(signedTeam(t, s, otherSigner, 99, exp), verifier); !errors.As(err, &ve) {
		t.Fatalf("another key's lockfile: %v", err)
	}
	if after, _ := os.ReadFile(state); string(after) != string(before) {
		t.Error("a lockfile that does not verify changed the state")
	}
	// Without a state file: signature and expiry only.
	if err := v5.Accept(AcceptOptions{Keys: []note.Verifier{verifier}, Now: now}); err != nil {
		t.Fatalf("without state: %v", err)
	}
	// A damaged state file fails closed, naming itself.
	for _, bad := range []string{"{", `{"etdiLockState":2,"keys":{}}`, `{"etdiLockState":1,"keys":{"k":{"generation":1}}}`,
		`{"etdiLockState":1,"keys":{"k":{"generation":1,"digest":"x"}}}`, `{"etdiLockState":1,"keys":[]}`, `{"etdiLockState":1}`,
		`{"etdiLockState":1,"keys":{},"x":1}`, strings.Repeat(" ", maxStateBytes+1)} {
		os.WriteFile(state, []byte(bad), 0o600)
		if err := accept(v6, verifier); err == nil || !strings.Contains(err.Error(), state) {
			t.Errorf("state %.40q: %v", bad, err)
		}
	}
	os.WriteFile(state, []byte(`{"etdiLockState":1,"keys":{}}`+strings.Repeat(" ", maxStateBytes)), 0o600)
	if err := accept(v6, verifier); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a state file beyond its bound: %v", err)
	}
}

func mustText(t *testing.T, f *File) string {
	t.Helper()
	text, err := f.signedText()
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// Concurrent checks never lower the remembered generation: each read,
// compare and write holds the state's lock.
func TestAcceptConcurrent(t *testing.T) {
	s := openStore(t)
	team(t, s, "Get the weather.")
	signer, verifier := newKey(t)
	state := filepath.Join(t.TempDir(), StateFile)
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	var files []*File
	for g := uint64(1); g <= 8; g++ {
		files = append(files, signedTeam(t, s, signer, g, exp))
	}
	var wg sync.WaitGroup
	for _, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var re *RollbackError
			if err := f.Accept(AcceptOptions{Keys: []note.Verifier{verifier}, State: state}); err != nil && !errors.As(err, &re) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := files[6].Accept(AcceptOptions{Keys: []note.Verifier{verifier}, State: state}); err == nil {
		t.Fatal("generation 7 accepted after 8")
	}
}

// NextGeneration is one more than the previous lockfile's, and at least
// the time in seconds.
func TestNextGeneration(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		prev *File
		want uint64
	}{
		{nil, 1_800_000_000},
		{&File{}, 1_800_000_000},
		{&File{Generation: 7}, 1_800_000_000},
		{&File{Generation: 1_800_000_000}, 1_800_000_001},
		{&File{Generation: 1_900_000_000}, 1_900_000_001},
	} {
		if got := NextGeneration(c.prev, now); got != c.want {
			t.Errorf("NextGeneration(%+v) = %d, want %d", c.prev, got, c.want)
		}
	}
}

// An unsigned lockfile that says it expired is refused too.
func TestCheckExpiry(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var xe *ExpiredError
	if err := (&File{Expires: now}).CheckExpiry(now); !errors.As(err, &xe) || !strings.Contains(err.Error(), "expired at 2030-01-01T00:00:00Z") {
		t.Fatal(err)
	}
	if err := (&File{Expires: now.Add(time.Second)}).CheckExpiry(now); err != nil {
		t.Fatal(err)
	}
	if err := (&File{}).CheckExpiry(now); err != nil {
		t.Fatal(err)
	}
}

// Generation and expiry read strictly.
func TestParseGeneration(t *testing.T) {
	base := `{"etdiLock":1,"servers":[],"pins":[],"revocations":[]`
	for in, want := range map[string]string{
		base + `,"generation":0}`:                        "at least 1",
		base + `,"generation":-1}`:                       "non-negative",
		base + `,"generation":"1"}`:                      "",
		base + `,"expires":"2030-01-01T00:00:00+01:00"}`: "RFC 3339 time in UTC",
		base + `,"expires":"2030-01-01T00:00:00.5Z"}`:    "whole seconds",
		base + `,"expires":"tomorrow"}`:                  "RFC 3339",
	} {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	f, err := Parse([]byte(base + `,"generation":3,"expires":"2030-01-01T00:00:00Z"}`))
	if err != nil || f.Generation != 3 || !f.Expires.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("%+v %v", f, err)
	}
}

// FuzzReadState: the state file is read strictly; whatever it accepts
// writes back to a file that reads as the same state.
func FuzzReadState(f *testing.F) {
	for _, s := range []string{
		`{"etdiLockState":1,"keys":{}}`,
		`{"etdiLockState":1,"keys":{"etdi-audit+07f8964f":{"digest":"sha256:3647a67649228b62fe3d139c47f7a3c673c31ce57da824082b6654fc0b15751f","generation":7}}}`,
		`{"etdiLockState":1,"keys":{"a":{"generation":1,"digest":"x"}}}`,
		`{"etdiLockState":1,"keys":{"a":{},"a":{}}}`,
		`{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		state, err := parseState(data)
		if err != nil {
			return
		}
		again, err := parseState(encodeState(state))
		if err != nil || len(again) != len(state) {
			t.Fatalf("written state does not read back: %v", err)
		}
		for k, v := range state {
			if again[k] != v {
				t.Fatalf("%s: %+v, then %+v", k, v, again[k])
			}
		}
	})
}
