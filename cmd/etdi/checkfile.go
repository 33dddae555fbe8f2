package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/etdi-dev/etdi/pin"
)

// checkFileEnv names the pin database a child etdi checks page by page.
const checkFileEnv = "ETDI_INTERNAL_CHECK_FILE"

// exitDamaged is the child's exit code for a database that failed the check.
const exitDamaged = 3

// checkFileIsolated runs the page-by-page check of the pin database at path
// (pin.Store.CheckFile) in a child etdi process. bbolt checks pages in a
// goroutine of its own, and a damaged page can panic there or fault on
// the memory map, which no recover in etdi can catch; in a child, such a
// crash is a finding about the file ("damaged"), never a crash of etdi.
func checkFileIsolated(path string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("checking %s: %w", path, err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), checkFileEnv+"="+path)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.ExitCode() == exitDamaged:
		return &pin.CorruptError{Path: path, Err: errors.New(strings.TrimSpace(out.String()))}
	case errors.As(err, &ee) && ee.ExitCode() == exitError:
		return fmt.Errorf("checking %s: %s", path, strings.TrimSpace(out.String()))
	case errors.As(err, &ee):
		// The check crashed on the file: that is damage too.
		first, _, _ := strings.Cut(strings.TrimSpace(errOut.String()), "\n")
		return &pin.CorruptError{Path: path, Err: fmt.Errorf("the page check crashed on it (%s): %s", ee, first)}
	}
	return fmt.Errorf("checking %s: %w", path, err)
}

// checkFileChild is the child side of checkFileIsolated.
func checkFileChild(path string) int {
	err := pin.CheckFileAt(path, 0)
	if errors.Is(err, pin.ErrLocked) {
		fmt.Println(err)
		return exitError
	}
	if err != nil {
		// The parent names the file and says what to do; the child says
		// what is wrong with it.
		var ce *pin.CorruptError
		if errors.As(err, &ce) {
			err = ce.Err
		}
		fmt.Println(err)
		return exitDamaged
	}
	return exitOK
}
