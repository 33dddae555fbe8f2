package pin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/etdi-dev/etdi/internal/atomicfile"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// AutoCheckpoint signs a checkpoint (docs/storage.md#history-and-checkpoints) after every write that
// grows the history, so that no record is appended without the audit key
// signing the history it ends: the latest one is kept at Path.
type AutoCheckpoint struct {
	// Signer is the audit key; nil when it is configured but cannot be
	// opened (Missing says why): every write then warns.
	Signer note.Signer
	// Missing says why there is no Signer.
	Missing error
	// Verifier checks the checkpoint at Path before a new one replaces
	// it.
	Verifier note.Verifier
	// Path is the latest signed checkpoint.
	Path string
	// Warn receives the failure to sign after a write that committed.
	Warn func(error)
}

// ErrCheckpointNotExtended is wrapped by the error of a signing refused
// because the history no longer extends the last signed checkpoint.
var ErrCheckpointNotExtended = errors.New("the history does not extend the last signed checkpoint")

var (
	autoMu sync.Mutex
	autos  = map[string]*AutoCheckpoint{}
)

// SignWrites makes every store that [Open] opens for writing afterwards,
// whose local file ([LocalFile]) is local, sign a checkpoint with a after
// each write that grows the history (nil: none). A process configures it
// once for the stores it opens, whatever package opens them.
func SignWrites(local string, a *AutoCheckpoint) {
	autoMu.Lock()
	defer autoMu.Unlock()
	if a == nil {
		delete(autos, filepath.Clean(local))
		return
	}
	autos[filepath.Clean(local)] = a
}

func signerFor(local string) *AutoCheckpoint {
	autoMu.Lock()
	defer autoMu.Unlock()
	return autos[filepath.Clean(local)]
}

// SignEachWrite makes every write of s that grows the history sign a
// checkpoint with a's key (nil: none).
func (s *Store) SignEachWrite(a *AutoCheckpoint) { s.auto = a }

// signAfterWrite signs a checkpoint of the history as it is after a
// write, when it grew since the checkpoint at a.Path. It signs only a
// history that extends that checkpoint (a consistency proof from the
// stored hashes), or, without one, a history that verifies in full.
func (s *Store) signAfterWrite() error {
	a := s.auto
	if a.Signer == nil {
		return fmt.Errorf("the history grew without a signed checkpoint: %w", a.Missing)
	}
	origin, err := s.Origin()
	if err != nil {
		return err
	}
	var old *Checkpoint
	msg, err := os.ReadFile(a.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	default:
		if old, err = OpenCheckpoint(msg, a.Verifier); err != nil {
			return fmt.Errorf("the last signed checkpoint %s: %w", a.Path, err)
		}
		if old.Origin != origin {
			return fmt.Errorf("the last signed checkpoint %s is of %s, not of this store (%s)", a.Path, old.Origin, origin)
		}
	}
	var size int64
	var root tlog.Hash
	err = s.view(func(tx *kvTx) error {
		if old == nil {
			t, err := verifyLog(tx)
			if err != nil {
				return err
			}
			size, root = t.Size, t.Hash
			return nil
		}
		hr := bucketHashes{tx.Bucket(bLog).Bucket(bHashes)}
		size = logSize(tx)
		if root, err = tlog.TreeHash(size, hr); err != nil {
			return err
		}
		switch {
		case old.Size > size:
			return fmt.Errorf("%w of %d records: the history has %d", ErrCheckpointNotExtended, old.Size, size)
		case old.Size == size:
			if old.Hash != root {
				return fmt.Errorf("%w of %d records: records before it were rewritten", ErrCheckpointNotExtended, old.Size)
			}
			return nil
		}
		proof, err := tlog.ProveTree(size, old.Size, hr)
		if err != nil {
			return err
		}
		if tlog.CheckTree(proof, size, root, old.Size, old.Hash) != nil {
			return fmt.Errorf("%w of %d records: records before it were rewritten", ErrCheckpointNotExtended, old.Size)
		}
		return nil
	})
	if err != nil || (old != nil && old.Size == size) {
		return err
	}
	c := Checkpoint{Origin: origin, Size: size, Hash: root}
	signed, err := note.Sign(&note.Note{Text: c.Text()}, a.Signer)
	if err != nil {
		return err
	}
	return atomicfile.Write(a.Path, signed, 0o644)
}
