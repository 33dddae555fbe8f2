package mcpb

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"unicode/utf8"
)

// Bounds of an MCPB file (docs/registry.md#mcpb-files).
const (
	// MaxFileSize bounds the .mcpb file, in bytes.
	MaxFileSize = 512 << 20
	// MaxEntries bounds the archive's entries.
	MaxEntries = 20000
	// MaxUncompressed bounds the archive's total uncompressed size.
	MaxUncompressed = 2 << 30
	// MaxRatio bounds an entry's uncompressed size over its compressed
	// size, for entries above ratioFloor bytes: a zip bomb's ratio is in
	// the thousands, source code and node_modules stay far below.
	MaxRatio   = 200
	ratioFloor = 1 << 20
	// MaxNameLen bounds an entry's name, in bytes.
	MaxNameLen = 1024
)

// File is an MCPB file that was read and checked.
type File struct {
	// Manifest is manifest.json, parsed; ManifestJSON its bytes.
	Manifest     *Manifest
	ManifestJSON []byte
	// Digest is "sha256:" and the lowercase hex SHA-256 of the whole file
	// as given (signature block included): the value of an mcpb artifact's
	// digest, and after "sha256:" of server.json's fileSha256.
	Digest string
	// Size is the file's size in bytes.
	Size int64
	// Signature is the signature block's verdict, nil when the file has
	// none.
	Signature *Signature
	// Entries are the archive's regular files and directories, by name.
	Entries []Entry

	zr *zip.Reader
}

// Entry is one entry of the archive.
type Entry struct {
	// Name is the entry's slash-separated relative name, without a
	// trailing slash.
	Name string
	Dir  bool
	// Size is the uncompressed size.
	Size uint64
	// Executable says whether the archive marks it executable.
	Executable bool

	zf *zip.File
}

// Open reads the MCPB file at path. See [Read].
func Open(name string) (*File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("MCPB file %s: not a regular file", name)
	}
	if st.Size() > MaxFileSize {
		return nil, fmt.Errorf("MCPB file %s: larger than %d bytes", name, MaxFileSize)
	}
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("MCPB file %s: %w", name, err)
	}
	if n, _ := f.Read(make([]byte, 1)); n != 0 {
		return nil, fmt.Errorf("MCPB file %s: grew while it was read", name)
	}
	out, err := readBytes(data)
	if err != nil {
		return nil, fmt.Errorf("MCPB file %s: %w", name, err)
	}
	return out, nil
}

// Read reads an MCPB file of size bytes from r: at most [MaxFileSize]
// bytes, a zip archive (before the signature block, if any) of at most
// [MaxEntries] entries and [MaxUncompressed] bytes uncompressed, no
// entry compressed more than [MaxRatio] to one, no entry named with an
// absolute path, a ".." element, a backslash, a control character or a
// name given twice (letter case aside), no symbolic link or other special
// file, and a manifest.json at the top of at most [MaxManifestSize] bytes
// that [ParseManifest] accepts. A signature block that does not verify is
// not an error of Read: it is reported in [File.Signature].
func Read(r io.ReaderAt, size int64) (*File, error) {
	if size < 0 || size > MaxFileSize {
		return nil, fmt.Errorf("MCPB file: size %d is outside 0 to %d bytes", size, MaxFileSize)
	}
	data := make([]byte, size)
	if _, err := r.ReadAt(data, 0); err != nil && !(errors.Is(err, io.EOF) && size == 0) {
		return nil, fmt.Errorf("MCPB file: %w", err)
	}
	return readBytes(data)
}

func readBytes(data []byte) (*File, error) {
	sum := sha256.Sum256(data)
	f := &File{Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(data))}
	content, der, present, err := splitSignature(data)
	if err != nil {
		f.Signature = &Signature{Err: err}
	} else if present {
		f.Signature = verifySignature(content, der)
	}
	zr, err := zip.NewReader(bytes.NewReader(content), int64(len(content)))
	if err != nil {
		return nil, fmt.Errorf("not a zip archive: %w", err)
	}
	if len(zr.File) > MaxEntries {
		return nil, fmt.Errorf("more than %d entries", MaxEntries)
	}
	f.zr = zr
	var total uint64
	seen := map[string]string{}
	var manifest *zip.File
	for _, zf := range zr.File {
		e, err := checkEntry(zf)
		if err != nil {
			return nil, err
		}
		key := strings.ToLower(e.Name)
		if prev, dup := seen[key]; dup {
			return nil, fmt.Errorf("entry %q is given twice (as %q)", e.Name, prev)
		}
		seen[key] = e.Name
		total += zf.UncompressedSize64
		if total > MaxUncompressed {
			return nil, fmt.Errorf("more than %d bytes uncompressed", uint64(MaxUncompressed))
		}
		if e.Name == "manifest.json" && !e.Dir {
			manifest = zf
		}
		f.Entries = append(f.Entries, e)
	}
	// A file under a name another entry uses as a directory would be
	// extracted through it: refuse it.
	for _, e := range f.Entries {
		for d := path.Dir(e.Name); d != "."; d = path.Dir(d) {
			if prev, ok := seen[strings.ToLower(d)]; ok && !isDirEntry(f.Entries, prev) {
				return nil, fmt.Errorf("entry %q lies under %q, which is a file", e.Name, prev)
			}
		}
	}
	if manifest == nil {
		return nil, errors.New("no manifest.json at the top of the archive")
	}
	if manifest.UncompressedSize64 > MaxManifestSize {
		return nil, fmt.Errorf("manifest.json: larger than %d bytes", MaxManifestSize)
	}
	mj, err := readEntry(manifest, MaxManifestSize)
	if err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	m, err := ParseManifest(mj)
	if err != nil {
		return nil, err
	}
	f.Manifest, f.ManifestJSON = m, mj
	return f, nil
}

func isDirEntry(es []Entry, name string) bool {
	for _, e := range es {
		if e.Name == name {
			return e.Dir
		}
	}
	return false
}

// checkEntry checks one entry's name, type and sizes.
func checkEntry(zf *zip.File) (Entry, error) {
	name := zf.Name
	q := fmt.Sprintf("%q", name)
	if len(q) > 200 {
		q = q[:200] + "…"
	}
	switch {
	case len(name) == 0:
		return Entry{}, errors.New("an entry has no name")
	case len(name) > MaxNameLen:
		return Entry{}, fmt.Errorf("entry %s: name longer than %d bytes", q, MaxNameLen)
	case !utf8.ValidString(name):
		return Entry{}, fmt.Errorf("entry %s: name is not valid UTF-8", q)
	case strings.ContainsRune(name, '\\'):
		return Entry{}, fmt.Errorf("entry %s: name holds a backslash", q)
	case strings.HasPrefix(name, "/") || (len(name) > 1 && name[1] == ':'):
		return Entry{}, fmt.Errorf("entry %s: absolute name", q)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return Entry{}, fmt.Errorf("entry %s: name holds a control character", q)
		}
	}
	dir := strings.HasSuffix(name, "/")
	clean := strings.TrimSuffix(name, "/")
	for _, el := range strings.Split(clean, "/") {
		if el == "" || el == "." || el == ".." {
			return Entry{}, fmt.Errorf("entry %s: name holds an empty, \".\" or \"..\" element", q)
		}
	}
	mode := zf.Mode()
	switch {
	case mode&os.ModeSymlink != 0:
		return Entry{}, fmt.Errorf("entry %s: a symbolic link", q)
	case mode.IsDir() || dir:
		if !dir || !(mode.IsDir() || mode.IsRegular()) || zf.UncompressedSize64 != 0 {
			return Entry{}, fmt.Errorf("entry %s: a directory with content or a file named as a directory", q)
		}
	case !mode.IsRegular():
		return Entry{}, fmt.Errorf("entry %s: not a regular file (%v)", q, mode.Type())
	}
	if zf.UncompressedSize64 > MaxUncompressed {
		return Entry{}, fmt.Errorf("entry %s: more than %d bytes uncompressed", q, uint64(MaxUncompressed))
	}
	if zf.UncompressedSize64 > ratioFloor {
		if zf.CompressedSize64 == 0 || zf.UncompressedSize64/zf.CompressedSize64 > MaxRatio {
			return Entry{}, fmt.Errorf("entry %s: compressed more than %d to 1 (%d bytes from %d)", q, MaxRatio, zf.UncompressedSize64, zf.CompressedSize64)
		}
	}
	return Entry{Name: clean, Dir: dir, Size: zf.UncompressedSize64, Executable: !dir && mode&0o111 != 0, zf: zf}, nil
}

// readEntry reads an entry whole, at most limit bytes; archive/zip refuses
// an entry that inflates beyond its declared size or fails its CRC.
func readEntry(zf *zip.File, limit int64) ([]byte, error) {
	rc, err := zf.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return b, nil
}
