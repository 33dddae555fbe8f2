package pin

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"io"
	"os"
	"time"
)

// Generation returns the id of the last transaction committed to the
// database at path, read from its two meta pages (bbolt keeps the newer
// valid one): a cheap way to tell whether anything was written since,
// without opening the database or waiting for its lock. A meta page that
// does not check out (torn, damaged) is ignored; a file with neither is an
// error.
func Generation(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return generationOf(f)
}

// generationOf reads the generation from the bytes of a database file.
func generationOf(f io.ReaderAt) (uint64, error) {
	// bbolt meta page: page header 16 bytes, then magic 4, version 4,
	// pageSize 4, flags 4, root 16, freelist 8, pgid 8, txid 8, checksum 8;
	// the checksum is FNV-64a of the 56 bytes before it.
	var m [16 + 64]byte
	best, found := uint64(0), false
	pageSize := int64(0)
	for i := int64(0); i < 2; i++ {
		if _, err := f.ReadAt(m[:], i*pageSize); err != nil {
			break
		}
		meta := m[16:]
		if binary.LittleEndian.Uint32(meta) != 0xED0CDAED {
			break
		}
		h := fnv.New64a()
		h.Write(meta[:56])
		if h.Sum64() == binary.LittleEndian.Uint64(meta[56:]) {
			if txid := binary.LittleEndian.Uint64(meta[48:]); !found || txid > best {
				best, found = txid, true
			}
		}
		if i == 0 {
			if pageSize = int64(binary.LittleEndian.Uint32(meta[8:])); pageSize < 1024 || pageSize > 1<<16 {
				break
			}
		}
	}
	if !found {
		return 0, errors.New("no valid meta page")
	}
	return best, nil
}

// GenerationReader reads the [Generation] of one database file again and
// again, cheaply: it keeps the file open, and looks at the path again at
// most every second, so that a file replaced by another (a restore) is
// read from then on.
type GenerationReader struct {
	Path    string
	f       *os.File
	fi      os.FileInfo
	checked time.Time
}

// Read returns the database's generation now.
func (g *GenerationReader) Read() (uint64, error) {
	if g.f == nil || time.Since(g.checked) > time.Second {
		fi, err := os.Stat(g.Path)
		if err != nil {
			g.Close()
			return 0, err
		}
		if g.f == nil || !os.SameFile(fi, g.fi) {
			g.Close()
			f, err := os.Open(g.Path)
			if err != nil {
				return 0, err
			}
			g.f, g.fi = f, fi
		}
		g.checked = time.Now()
	}
	return generationOf(g.f)
}

// Close closes the file.
func (g *GenerationReader) Close() error {
	if g.f == nil {
		return nil
	}
	err := g.f.Close()
	g.f = nil
	return err
}
