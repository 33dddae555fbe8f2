package mcpb

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Extract unpacks the archive into dir, which must not exist yet: it is
// created with mode 0700 (so no other user reads or swaps what will be
// run), every entry is created inside it with O_EXCL (a name given twice
// or a link planted meanwhile fails), files with mode 0600, or 0700 when
// the archive marks them executable, and no entry is written larger than
// its declared size. On an error the directory is removed.
func (f *File) Extract(dir string) (err error) {
	if f.zr == nil {
		return errors.New("mcpb: Extract of a File not made by Open or Read")
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("MCPB extraction directory: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	made := map[string]bool{}
	for _, e := range f.Entries {
		if err := extractEntry(root, e, made); err != nil {
			return fmt.Errorf("MCPB entry %q: %w", e.Name, err)
		}
	}
	return nil
}

// extractEntry writes one entry through root, which refuses any path
// that would leave the directory, symbolic links included.
func extractEntry(root *os.Root, e Entry, made map[string]bool) error {
	if err := mkdirAll(root, parentOf(e.Name), made); err != nil {
		return err
	}
	if e.Dir {
		return mkdirAll(root, e.Name, made)
	}
	mode := os.FileMode(0o600)
	if e.Executable {
		mode = 0o700
	}
	rc, err := e.zf.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	out, err := root.OpenFile(filepath.FromSlash(e.Name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, io.LimitReader(rc, int64(e.Size)+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if uint64(n) != e.Size {
		return fmt.Errorf("inflates to %d bytes, not the %d it declares", n, e.Size)
	}
	return nil
}

func parentOf(name string) string {
	i := strings.LastIndex(name, "/")
	if i < 0 {
		return ""
	}
	return name[:i]
}

// mkdirAll creates name's directories inside root, mode 0700; made
// holds those already made by this extraction (only etdi writes into the
// new directory, whose mode keeps other users out).
func mkdirAll(root *os.Root, name string, made map[string]bool) error {
	if name == "" || made[name] {
		return nil
	}
	cur := ""
	for _, el := range strings.Split(name, "/") {
		if cur != "" {
			cur += string(filepath.Separator)
		}
		cur += el
		if err := root.Mkdir(cur, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		st, err := root.Lstat(cur)
		if err != nil {
			return err
		}
		if !st.IsDir() {
			return fmt.Errorf("%s is not a directory", cur)
		}
	}
	made[name] = true
	return nil
}
