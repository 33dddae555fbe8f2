//go:build !linux

package registrytest

import (
	"errors"
	"os/exec"
	"syscall"
)

// supported says whether the fixture runs here, and why not: it needs
// Linux's parent-death signal so that no registry or PostgreSQL outlives
// the tests, and Debian's PostgreSQL packages.
func supported() (bool, string) {
	return false, "the registry fixture runs on Linux only"
}

type runAs struct{}

func spawn(*exec.Cmd, syscall.Signal, *runAs) error {
	return errors.New("the registry fixture runs on Linux only")
}

func signalGroup(*exec.Cmd, syscall.Signal) {}

func postgresUser() (*runAs, error) { return nil, nil }

func chown(string, *runAs) error { return nil }

func lchown(string, *runAs) error { return nil }

func alive(int) bool { return true }
