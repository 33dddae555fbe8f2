package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/redact"
	"github.com/etdi-dev/etdi/mcpb"
	"github.com/etdi-dev/etdi/registry"
)

// readServerJSON reads and parses a server.json file: the document's
// bytes too, which sign --server-json rewrites.
func (e *env) readServerJSON(path string) (*registry.ServerJSON, error) {
	data, err := e.readInput(path)
	if err != nil {
		return nil, err
	}
	s, err := registry.ParseServerJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// parseRegistryInputs maps --input NAME=VALUE: values for a server.json
// package's inputs (registry.Inputs).
func parseRegistryInputs(kvs []string) (registry.Inputs, error) {
	in := registry.Inputs{}
	for i, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			// Not quoted: the value may be a secret.
			return nil, usagef("--input #%d: want NAME=VALUE", i+1)
		}
		in[k] = v
	}
	return in, nil
}

// maskInputs is err's text with the values given for an entry's inputs
// masked: an error about the entry may quote them anywhere.
func maskInputs(in registry.Inputs, err error) string {
	var given redact.Set
	for _, v := range in {
		given.Add(v)
	}
	return given.String(err.Error())
}

// serverJSONTarget is the server a host starts for server.json s: its
// first stdio package as a host launches it (registry.Package.Command),
// else its first remote.
func serverJSONTarget(path string, s *registry.ServerJSON, in registry.Inputs) (target, error) {
	if p, ok := s.StdioPackage(); ok {
		c, err := p.Command(in)
		if err != nil {
			return target{}, fmt.Errorf("%s: %w", path, err)
		}
		environ := os.Environ()
		var keep []string
		names := make([]string, 0, len(c.Env))
		for n := range c.Env {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			environ = append(environ, n+"="+c.Env[n])
			keep = append(keep, n)
		}
		spec := guard.Describe(append([]string{c.Program}, c.Args...), "", nil, "", environ, false)
		spec.KeepEnv = keep
		for _, n := range names {
			spec.Secrets.Add(c.Env[n]) // a package's environment may hold a key
		}
		return targetOf(spec), nil
	}
	if len(s.Remotes) > 0 {
		r, err := s.Remotes[0].Remote(in)
		if err != nil {
			return target{}, fmt.Errorf("%s: %w", path, err)
		}
		h := http.Header{}
		for n, v := range r.Headers {
			h.Set(n, v)
		}
		return targetOf(guard.Describe(nil, r.URL, h, "", nil, false)), nil
	}
	return target{}, usagef("%s has no package etdi starts and no remote: give the server with --server -- CMD..., --url URL or --tools FILE", path)
}

// serverJSONBinding is the server section of a manifest for server.json
// s (registry.ManifestServer), made after the server t was listed: an npm
// or PyPI package, or an image by tag, is bound to what t's command runs
// when it is that package, else to what a host's launch of it would run,
// resolved in the current directory. A package or remote it cannot bind
// is an error naming each.
func (e *env) serverJSONBinding(path string, s *registry.ServerJSON, t *target, in registry.Inputs, mcpbFiles []string) (etdi.Server, error) {
	var files []*mcpb.File
	for _, name := range mcpbFiles {
		f, err := mcpb.Open(name)
		if err != nil {
			return etdi.Server{}, err
		}
		files = append(files, f)
	}
	var started *etdi.Artifact
	if t.URL == "" && len(t.Command) > 0 {
		if a, _, ok := guard.ResolveOrigin(e.ctx, t.Server()).Artifact(); ok {
			started = &a
		}
	}
	resolve := func(p registry.Package) (etdi.Artifact, error) {
		if p.RegistryType == registry.PackageMCPB {
			for i, f := range files {
				if f.Digest == "sha256:"+p.FileSHA256 {
					a := f.Artifact()
					say(e.stderr, "etdi: bound %s to %s (from %s)\n", registry.PackageLabel(p), a.String(), mcpbFiles[i])
					return a, nil
				}
			}
			return etdi.Artifact{}, fmt.Errorf("no --mcpb file has its fileSha256: give the MCPB file with --mcpb FILE (its manifest.json names the artifact)")
		}
		if started != nil && registry.BindsPackage(p, etdi.Server{Artifacts: []etdi.Artifact{*started}}) == nil {
			say(e.stderr, "etdi: bound %s to %s (the server started)\n", registry.PackageLabel(p), started.String())
			return *started, nil
		}
		a, from, err := registry.ResolvePackage(e.ctx, p, in, "", nil)
		if err != nil {
			return a, err
		}
		say(e.stderr, "etdi: bound %s to %s (from %s)\n", registry.PackageLabel(p), a.String(), from)
		return a, nil
	}
	server, problems, err := registry.ManifestServer(s, resolve)
	if err != nil {
		return server, fmt.Errorf("%s: %w", path, err)
	}
	if len(problems) > 0 {
		return server, &hintError{
			err: mismatchList(fmt.Sprintf("%s: the bundle would not bind every package and remote", path), problems),
			hint: "run manifest init where a host's launch of each npm or PyPI package resolves " +
				"(in the project whose lockfile installed it, or once npx or uvx has run it), pull an image " +
				"named by tag, or remove from server.json what clients should not run " +
				"(docs/registry.md#provider-publishing-a-signed-server)",
		}
	}
	return server, nil
}

// mismatchList is an error listing mismatches one a line.
func mismatchList(sentence string, ms []registry.Mismatch) error {
	items := make([]string, len(ms))
	for i, m := range ms {
		items[i] = m.Error()
	}
	return &linesError{err: errors.New(sentence), items: items}
}
