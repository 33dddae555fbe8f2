package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/colour"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/trust"
	"github.com/spf13/pflag"
)

// registryFlags say which registry entry etdi check checks (--registry).
type registryFlags struct {
	url         string
	pkg, remote int
}

// registerRegistry registers --registry, --package and --remote, and
// says what --input gives with --registry.
func (f *serverFlags) registerRegistry(fs *pflag.FlagSet) {
	if in := fs.Lookup("input"); in != nil {
		in.Usage = "with --config: a value for a VS Code ${input:ID} placeholder, ID=VALUE; with --registry: a value for an input of the entry (an environment variable, header, argument or URL variable), NAME=VALUE (repeatable)"
	}
	fs.StringVar(&f.reg.url, "registry", "", "an MCP registry's URL: check the server SERVER[@VERSION] it lists, as a host would install it (docs/registry.md#client-checking-and-installing-from-a-registry)")
	fs.IntVar(&f.reg.pkg, "package", 0, "with --registry: the entry's package to check, 1 the first (default: the first etdi starts)")
	fs.IntVar(&f.reg.remote, "remote", 0, "with --registry: the entry's remote to check, 1 the first (default: a package, else the first remote)")
}

// registryCheck says which registry entry a server is, in etdi check's
// report: where it was read, its status, what was checked of it and the
// bundle it names.
type registryCheck struct {
	URL     string `json:"url"`
	Name    string `json:"name"`
	Version string `json:"version"`
	Status  string `json:"status"`
	// Checked is the package or remote checked: "package 1 (npm
	// @acme/weather@1.2.0)", "remote 1 (https://…)".
	Checked string `json:"checked"`
	// Bundle and Digest are the bundle the entry names (dev.etdi); empty
	// for an unsigned entry.
	Bundle string `json:"bundle,omitempty"`
	Digest string `json:"digest,omitempty"`
	// Note is the registry's deprecation of the entry.
	Note string `json:"note,omitempty"`
}

// registryTargets is the server of --registry URL SERVER[@VERSION]: the
// entry read from the registry and described as a host runs it. An entry
// that cannot be read is an error; one etdi refuses to start (deleted, a
// hostile package, a required input not given) is a target that is not
// checked, so that the report says why.
func (e *env) registryTargets(f *serverFlags, args []string) ([]target, error) {
	if len(args) != 1 {
		return nil, usagef("--registry URL needs the server to check: etdi check --registry URL NAMESPACE/NAME[@VERSION]")
	}
	if f.bundle != "" {
		return nil, usagef("--bundle cannot be combined with --registry: the entry names its bundle")
	}
	if f.reg.pkg < 0 || f.reg.remote < 0 || f.reg.pkg > 0 && f.reg.remote > 0 {
		return nil, usagef("give --package N or --remote N (1 the first), not both")
	}
	name, version, _ := strings.Cut(args[0], "@")
	c, err := registry.NewClient(f.reg.url)
	if err != nil {
		return nil, usagef("--registry: %v", err)
	}
	in, err := parseRegistryInputs(f.inputs)
	if err != nil {
		return nil, err
	}
	e.progress("reading %s@%s from %s", name, cmp.Or(version, "latest"), c.BaseURL)
	en, err := c.Get(e.ctx, name, version)
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", c.BaseURL, err)
	}
	rs, err := guard.DescribeRegistryEntry(e.ctx, en, guard.RegistryOptions{Inputs: in, Package: f.reg.pkg, Remote: f.reg.remote,
		Environ: os.Environ(), Name: f.name})
	rc := &registryCheck{URL: c.BaseURL, Name: en.Server.Name, Version: en.Server.Version, Status: en.Official.Status}
	if err != nil {
		// Not started: the entry's own text may be anywhere in err, and
		// the values given for its inputs are not shown.
		return []target{{ServerSpec: &guard.ServerSpec{Label: en.Server.Name + "@" + en.Server.Version, Name: cmp.Or(f.name, en.Server.Name),
			Problems: []string{maskInputs(in, err)}}, registry: rc}}, nil
	}
	rc.Checked, rc.Note = rs.Chosen(), rs.Deprecated()
	if rs.Meta != nil {
		rc.Bundle, rc.Digest = rs.Meta.Bundle, rs.Meta.Digest
	}
	return []target{{ServerSpec: rs.Spec, reg: rs, registry: rc}}, nil
}

// registryChecked puts what a registry entry says of its server into rep,
// and reports whether that is all there is to check: the entry's bundle
// could not be fetched, is not the one named, does not verify or is not
// bound to the entry (guard.RegistryServer.Precheck), so nothing is
// started.
func (e *env) registryChecked(rep *checkReport, sf *serverFlags, pf *pinFlags, t *target, p *trust.Policy) (bool, error) {
	rep.Registry = t.registry
	if t.reg == nil {
		return false, nil
	}
	rep.approve = "" // etdi pin approve reads no registry: --yes or --approve here
	opts, err := e.guardOptions(sf, pf, t, p)
	if err != nil {
		return false, err
	}
	r, err := t.reg.Precheck(e.ctx, opts)
	if err != nil || r == nil {
		return false, err
	}
	rep.Verification = r.Verification
	rep.Findings = append(rep.Findings, r.Findings...)
	rep.ExitCode = r.ExitCode()
	return true, nil
}

// printRegistry says which registry entry was checked, what of it, and
// with which bundle.
func printRegistry(w io.Writer, rc *registryCheck, p colour.Painter) {
	if rc == nil {
		return
	}
	say(w, "registry entry %s@%s (%s) from %s\n", rc.Name, rc.Version, cmp.Or(rc.Status, "status not given"), rc.URL)
	if rc.Note != "" {
		say(w, p.Warn("note")+": %s\n", rc.Note)
	}
	if rc.Checked != "" {
		say(w, "checked %s\n", rc.Checked)
	}
	if rc.Bundle != "" {
		say(w, "entry's bundle %s (%s)\n", rc.Bundle, rc.Digest)
	} else if rc.Checked != "" {
		say(w, "the entry names no bundle (dev.etdi): unsigned\n")
	}
}
