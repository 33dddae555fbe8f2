package guard

import "github.com/etdi-dev/etdi/internal/mcpclient"

// AdoptOrphans has the processes a stdio server detaches from itself end
// with it. A server's process group is always ended when the server is
// stopped, and on Linux so is every process descending from it at that
// moment; a process that called setsid and whose parent exited before
// (a double fork) descends from nothing etdi knows. On Linux AdoptOrphans
// makes this process their child subreaper (PR_SET_CHILD_SUBREAPER), so
// such orphans become its children, which stopping the server ends and
// reaps; on Windows every server runs in a job object of its own anyway.
//
// Call it once, before the first server starts, in a program whose only
// children running beside a server are the servers etdi starts: when the
// last running server stops, every other child of the program is taken
// for a server's orphan and ended (docs/gate.md#runtime-gate, "Process lifetime").
// etdi's own command does. It reports whether detached processes are
// ended on this system (false on macOS and the BSDs, which have no
// subreaper).
func AdoptOrphans() bool { return mcpclient.AdoptOrphans() }
