//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
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
