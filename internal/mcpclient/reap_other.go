//go:build !linux && !windows

package mcpclient

import (
	"os/exec"
	"time"
)

// Without a child subreaper (macOS, the BSDs), a process a server
// detaches with setsid and a double fork is given to init: etdi ends the
// server's process group and, where it can list them, the family noted
// before the server is stopped, but not such an orphan.

// AdoptOrphans reports that this system cannot adopt orphans.
func AdoptOrphans() bool { return false }

type tree struct{}

func watch(cmd *exec.Cmd) *tree { return &tree{} }

func (t *tree) end(deadline time.Time) {}

func (t *tree) forget() {}
