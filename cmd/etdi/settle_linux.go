package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// trimProgram drops the resident pages of the read-only mappings of
// etdi's own program file (code and read-only data): package
// initialisation and command set-up touch much of a 45 MB binary once,
// and the kernel maps neighbouring pages along. The pages stay in the
// page cache, shared with every other etdi; the ones the relay uses are
// mapped again at their next use. Writable mappings are never touched,
// and anything unexpected leaves memory as it is.
func trimProgram() {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset dev inode path
		fs := strings.Fields(sc.Text())
		if len(fs) != 6 || fs[5] != exe || fs[1] != "r-xp" && fs[1] != "r--p" {
			continue
		}
		lo, hi, ok := strings.Cut(fs[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		// The range is not Go memory: it is passed to the kernel as numbers.
		syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), syscall.MADV_DONTNEED)
	}
}
