//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// rssHelper is the helper side of peakRSS: run the command in os.Args[1:]
// and print its ru_maxrss in KB.
func rssHelper() {
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
	os.Exit(0)
}

// cpuOf returns the CPU time a waited-for process used (user and system,
// with the processes it waited for).
func cpuOf(ps *os.ProcessState) (time.Duration, bool) {
	u, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, false
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), true
}
