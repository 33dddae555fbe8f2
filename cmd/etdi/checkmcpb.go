package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/artifact"
	"github.com/etdi-dev/etdi/mcpb"
	"github.com/spf13/pflag"
)

// mcpbTarget is an MCPB file checked with --mcpb: read, extracted into a
// private directory and started as its desktop host starts it.
type mcpbTarget struct {
	path    string
	file    *mcpb.File
	dir     string // the private directory, removed after the check
	checked bool   // the served tools were compared once
	launch  *mcpb.Launch
}

// registerMCPB adds --mcpb and --mcpb-config to etdi check.
func registerMCPB(fs *pflag.FlagSet, sf *serverFlags) {
	fs.StringVar(&sf.mcpb, "mcpb", "", "an MCPB file (.mcpb): verify its signature, extract it into a private directory, start its server as a desktop host would, and check the served tools, also against the tools its manifest.json declares")
	fs.StringArrayVar(&sf.mcpbConfig, "mcpb-config", nil, "with --mcpb: KEY=VALUE, a user_config value the host would ask the user for (repeatable)")
}

// mcpbTargets reads, extracts and describes the MCPB file of --mcpb.
func (e *env) mcpbTargets(f *serverFlags) ([]target, error) {
	values := map[string]string{}
	for _, kv := range f.mcpbConfig {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--mcpb-config %q: want KEY=VALUE", kv)
		}
		values[k] = v
	}
	file, err := mcpb.Open(f.mcpb)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "etdi-mcpb-")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(tmp, "extension")
	if err := file.Extract(dir); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	l, err := file.Launch(dir, values)
	if err != nil {
		os.RemoveAll(tmp)
		if ce, ok := err.(*mcpb.ConfigError); ok {
			return nil, &hintError{fmt.Errorf("MCPB %s: %w", f.mcpb, err), "give the value with --mcpb-config " + ce.Keys[0] + "=VALUE"}
		}
		return nil, fmt.Errorf("MCPB %s: %w", f.mcpb, err)
	}
	environ := os.Environ()
	for k, v := range l.Env {
		environ = append(environ, k+"="+v)
	}
	name := f.name
	if name == "" {
		name = file.Manifest.Name
	}
	spec := guard.Describe(append([]string{l.Command}, l.Args...), "", nil, name, environ, false)
	for key, opt := range file.Manifest.UserConfig {
		if v, ok := values[key]; ok && opt.Sensitive {
			spec.Secrets.Add(v)
		}
	}
	for k := range l.Env {
		spec.KeepEnv = append(spec.KeepEnv, k)
	}
	spec.Label = "MCPB " + f.mcpb
	spec.Findings = append(spec.Findings, file.SignatureFindings()...)
	if s := file.Signature; s != nil && s.Err != nil {
		// A file changed after it was signed is not run: fail closed.
		spec.Problems = append(spec.Problems, "the MCPB file's signature does not verify, so its server is not started")
	}
	t := targetOf(spec)
	t.location = f.mcpb
	t.mcpb = &mcpbTarget{path: f.mcpb, file: file, dir: tmp, launch: l}
	if s := file.Signature; s != nil && s.Err == nil {
		say(e.stderr, "etdi: MCPB %s %s: signed by %s\n", file.Manifest.Name, file.Manifest.Version, s.Signer.String())
	} else if s == nil {
		say(e.stderr, "etdi: MCPB %s %s: unsigned\n", file.Manifest.Name, file.Manifest.Version)
	}
	return []target{t}, nil
}

// origin is what the launch runs: the MCPB file, as etdi hashed it, when
// the command runs a file of the extension and nothing else; nil when it
// runs something from outside the file (a package npx fetches, a program
// of the host, code an option or a variable loads), which is then
// resolved as any command's is.
func (m *mcpbTarget) origin() *guard.Origin {
	argv := append([]string{m.launch.Command}, m.launch.Args...)
	path, why := artifact.RunsFile(argv, m.launch.Env)
	if why != "" || !filepath.IsAbs(path) || !insideDir(m.dir, path) {
		return nil
	}
	abs, err := filepath.Abs(m.path)
	if err != nil {
		abs = m.path
	}
	return guard.MCPBOrigin(m.file.Artifact(), abs)
}

// insideDir reports whether p lies under dir, lexically.
func insideDir(dir, p string) bool {
	rel, err := filepath.Rel(dir, filepath.Clean(p))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// served adds the findings of comparing the served tools with the
// manifest's, once.
func (m *mcpbTarget) served(t *target, l *guard.Listing) {
	if m == nil || l == nil || m.checked {
		return
	}
	m.checked = true
	t.Findings = append(t.Findings, m.file.Manifest.CheckServed(l.Tools)...)
}

// blocks reports whether the MCPB's own findings hold an error, which
// --yes and --approve do not approve past: what the MCPB declares is what
// its host showed the user.
func (m *mcpbTarget) blocks(t *target) bool {
	if m == nil {
		return false
	}
	for _, f := range t.Findings {
		if f.Severity == finding.Error {
			return true
		}
	}
	return false
}

// removeMCPB removes the directories MCPB files were extracted into.
func removeMCPB(ts []target) {
	for _, t := range ts {
		if t.mcpb != nil {
			os.RemoveAll(t.mcpb.dir)
		}
	}
}
