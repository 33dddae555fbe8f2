package identity

import "github.com/etdi-dev/etdi/internal/cmdline"

// runnerFlags are the flags of a package runner that FuzzCommand reads:
// those that name the package and the long ones known to take no value.
type runnerFlags struct {
	pkg, bools map[string]bool
}

// npmFlags and uvFlags are the flag tables runner reads, from package
// cmdline.
var (
	npmFlags = runnerFlags{pkg: cmdline.NPMFlags.Pkg, bools: cmdline.NPMFlags.Bools}
	uvFlags  = runnerFlags{pkg: cmdline.UVFlags.Pkg, bools: cmdline.UVFlags.Bools}
)
