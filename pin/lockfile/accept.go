package lockfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/atomicfile"
	"github.com/etdi-dev/etdi/internal/filelock"
	"github.com/etdi-dev/etdi/strictjson"
	"golang.org/x/mod/sumdb/note"
)

// StateFile is the name of the file, beside the user's etdi
// configuration, in which a check remembers the highest generation of a
// signed lockfile it accepted, per audit key (docs/fleets.md#team-lockfile).
const StateFile = "lock-generations.json"

// Limits of the state file: it is etdi's own, but read as untrusted.
const (
	maxStateBytes = 1 << 20
	maxStateKeys  = 1000
)

// ExpiredError reports a signed lockfile past its expiry: refused, as a
// bundle past its expiry is (exit 14).
type ExpiredError struct {
	Expires, Now time.Time
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("the lockfile expired at %s (now %s): an expired lockfile may predate a revocation; "+
		"export it again (etdi pin export --sign) to renew it", e.Expires.UTC().Format(time.RFC3339), e.Now.UTC().Format(time.RFC3339))
}

// RollbackError reports a signed lockfile older than one accepted before
// with the same key (a lower generation), or another lockfile of the same
// generation: a replayed copy may predate a revocation (exit 11, as a
// downgrade).
type RollbackError struct {
	// Key is the audit key ("name+hash") whose lockfiles are compared.
	Key string
	// Generation is the lockfile's; Accepted the highest accepted before.
	Generation, Accepted uint64
	// SameGeneration says the generation equals the accepted one but the
	// content differs.
	SameGeneration bool
	// State is the file that remembers the accepted generation.
	State string
}

func (e *RollbackError) Error() string {
	if e.SameGeneration {
		return fmt.Sprintf("the lockfile is generation %d of the audit key %s, and another lockfile of generation %d was accepted before: "+
			"two signed lockfiles of one generation, one of them is not the current one; export a new generation with etdi pin export --sign "+
			"(the accepted generations are in %s)", e.Generation, e.Key, e.Accepted, e.State)
	}
	return fmt.Sprintf("the lockfile is generation %d of the audit key %s, older than generation %d accepted before: "+
		"an older signed lockfile, replayed, may predate a revocation; check against the current lockfile, "+
		"or export a new generation with etdi pin export --sign (the accepted generations are in %s)", e.Generation, e.Key, e.Accepted, e.State)
}

// AcceptOptions say how Accept checks a signed lockfile.
type AcceptOptions struct {
	// Keys are the audit verifier keys; the lockfile must be signed by
	// one of them (Verify).
	Keys []note.Verifier
	// Now is the time the expiry is checked at (default: now).
	Now time.Time
	// State is the state file (StateFile beside the user's
	// configuration); "" checks the signature and the expiry only.
	State string
}

// accepted is what the state file remembers of one key.
type accepted struct {
	Generation uint64
	Digest     string
}

// Accept verifies f's signature with opts.Keys ([File.Verify]), refuses it when
// it has expired ([*ExpiredError]), and, with a state file, when a key that
// signed it signed a higher generation accepted before, or another
// lockfile of the same generation ([*RollbackError]); then it records f's
// generation and content digest for each key that signed it. The state
// file is written atomically, mode 0600, under an exclusive lock; the
// generation recorded never decreases. An unreadable or malformed state
// file is an error: Accept fails closed.
func (f *File) Accept(opts AcceptOptions) error {
	signers, err := f.verify(opts.Keys)
	if err != nil {
		return err
	}
	if err := f.CheckExpiry(opts.Now); err != nil {
		return err
	}
	if opts.State == "" {
		return nil
	}
	digest, err := f.contentDigest()
	if err != nil {
		return err
	}
	unlock, err := lockState(opts.State)
	if err != nil {
		return err
	}
	defer unlock()
	state, err := readState(opts.State)
	if err != nil {
		return err
	}
	changed := false
	for _, key := range signers {
		a, ok := state[key]
		switch {
		case !ok || f.Generation > a.Generation:
			state[key] = accepted{f.Generation, digest}
			changed = true
		case f.Generation < a.Generation:
			return &RollbackError{Key: key, Generation: f.Generation, Accepted: a.Generation, State: opts.State}
		case digest != a.Digest:
			return &RollbackError{Key: key, Generation: f.Generation, Accepted: a.Generation, SameGeneration: true, State: opts.State}
		}
	}
	if !changed {
		return nil
	}
	if len(state) > maxStateKeys {
		return fmt.Errorf("%s: more than %d audit keys", opts.State, maxStateKeys)
	}
	return writeState(opts.State, state)
}

// CheckExpiry refuses f when it has an expiry and now (zero: the
// current time) is at or after it ([*ExpiredError]). Without a key the
// expiry is not authenticated, but a lockfile that says it expired is
// not used either.
func (f *File) CheckExpiry(now time.Time) error {
	if now.IsZero() {
		now = time.Now()
	}
	if !f.Expires.IsZero() && !now.Before(f.Expires) {
		return &ExpiredError{Expires: f.Expires, Now: now}
	}
	return nil
}

// lockState takes the exclusive lock of the state file (path + ".lock"),
// waiting for another etdi that holds it.
func lockState(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	lf, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for i := 0; ; i++ {
		err = filelock.TryLock(lf)
		if err == nil {
			return func() { lf.Close() }, nil
		}
		if !errors.Is(err, filelock.ErrLocked) || i == 1000 {
			lf.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readState reads the state file: {"etdiLockState": 1, "keys": {KEY:
// {"generation": N, "digest": "sha256:..."}}}; a missing file is empty.
func readState(path string) (map[string]accepted, error) {
	state := map[string]accepted{}
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return state, nil
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxStateBytes+1))
	if err != nil {
		return nil, err
	}
	state, err = parseState(data)
	if err != nil {
		return nil, fmt.Errorf("%s, where etdi remembers the lockfile generations it accepted, is damaged (%v): "+
			"remove it only if you know why, as the generations accepted before are then forgotten", path, err)
	}
	return state, nil
}

// parseState reads the bytes of a state file.
func parseState(data []byte) (map[string]accepted, error) {
	state := map[string]accepted{}
	if len(data) > maxStateBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxStateBytes)
	}
	v, err := strictjson.Parse(data)
	if err != nil {
		return nil, err
	}
	root, err := strictjson.Root(v).Object()
	if err != nil {
		return nil, err
	}
	if err := root.Only("etdiLockState", "keys"); err != nil {
		return nil, err
	}
	if ver, err := root.Field("etdiLockState").Uint(); err != nil || ver != 1 {
		return nil, errors.New(`"etdiLockState" is not 1`)
	}
	keys := root.Field("keys")
	if keys.V == nil || keys.V.Kind != strictjson.Object {
		return nil, errors.New(`"keys" is not an object`)
	}
	for _, m := range keys.V.Members {
		o, err := (strictjson.Field{Path: keys.Path + "." + m.Name, V: m.Value}).Object()
		if err != nil {
			return nil, err
		}
		if err := o.Only("generation", "digest"); err != nil {
			return nil, err
		}
		var a accepted
		if a.Generation, err = o.Field("generation").Uint(); err != nil {
			return nil, err
		}
		if a.Digest, err = o.Field("digest").Str(); err != nil {
			return nil, err
		}
		if d, err := etdi.ParseDigest(a.Digest); err != nil || d.String() != a.Digest {
			return nil, fmt.Errorf("%q is not a digest", a.Digest)
		}
		state[m.Name] = a
	}
	return state, nil
}

func writeState(path string, state map[string]accepted) error {
	return atomicfile.Write(path, encodeState(state), 0o600)
}

// encodeState is the state file's bytes, keys in order.
func encodeState(state map[string]accepted) []byte {
	names := make([]string, 0, len(state))
	for k := range state {
		names = append(names, k)
	}
	slices.Sort(names)
	keys := &strictjson.Value{Kind: strictjson.Object}
	for _, k := range names {
		a := state[k]
		keys.Members = append(keys.Members, member(k, object(member("digest", str(a.Digest)), member("generation", num(a.Generation)))))
	}
	doc := object(member("etdiLockState", num(1)), member("keys", keys))
	return append(strictjson.AppendIndent(nil, doc, "", "  "), '\n')
}

// NextGeneration is the generation to sign a new lockfile with, when none
// is given: one more than the previous lockfile's (previous may be nil),
// and at least the time in Unix seconds, so that lockfiles exported on
// different machines without the previous one still increase.
func NextGeneration(previous *File, now time.Time) uint64 {
	g := uint64(max(now.Unix(), 1))
	if previous != nil && previous.Generation >= g {
		g = previous.Generation + 1
	}
	return min(g, MaxGeneration)
}
