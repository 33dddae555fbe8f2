package registry

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/artifact"
)

// ManifestServer is the server section of a manifest (SPEC.md §4) made
// from server.json s, so that the bundle signed from it binds to the
// registry entry: RegistryName is s's name, Name the part after its "/",
// Version s's version; Endpoints are the remotes' URLs (a URL with
// {variables} is an error: a host fills them in, so no endpoint can cover
// it); Artifacts hold one artifact per package. An OCI image named by
// digest is bound by that digest: server.json states it. For the others
// resolve returns the artifact: for an npm or PyPI package or an image by
// tag, what a host's launch of it runs ([ResolvePackage] resolves it from
// the runner's cache or lockfile); for an MCPB, the file's artifact, whose
// name and version are its manifest.json's (mcpb.File.Artifact), and
// whose digest must be the fileSha256. A package that resolve cannot
// resolve, or
// that etdi cannot bind (NuGet), is returned as a [Mismatch] saying why;
// so is each package or remote the result does not bind ([Binding]). No
// mismatch means every package and remote of s is bound.
func ManifestServer(s *ServerJSON, resolve func(Package) (etdi.Artifact, error)) (etdi.Server, []Mismatch, error) {
	_, name, _ := strings.Cut(s.Name, "/")
	out := etdi.Server{Name: name, Version: s.Version, RegistryName: s.Name}
	for _, r := range s.Remotes {
		if strings.ContainsAny(r.URL, "{}") {
			return out, nil, fmt.Errorf("remote %s: the URL has {variables} the host fills in, which no endpoint of a bundle can cover: publish the remote under its full URL", r.URL)
		}
		if err := etdi.ValidateEndpoint(r.URL); err != nil {
			return out, nil, fmt.Errorf("remote %s: %w", r.URL, err)
		}
		if !slices.Contains(out.Endpoints, r.URL) {
			out.Endpoints = append(out.Endpoints, r.URL)
		}
	}
	var problems []Mismatch
	failed := map[string]bool{}
	for _, p := range s.Packages {
		a, err := packageArtifact(p, resolve)
		if err != nil {
			problems = append(problems, Mismatch{PackageLabel(p), err.Error()})
			failed[PackageLabel(p)] = true
			continue
		}
		if !slices.Contains(out.Artifacts, a) {
			out.Artifacts = append(out.Artifacts, a)
		}
	}
	for _, m := range Binding(s, out) {
		if !failed[m.What] {
			problems = append(problems, m)
		}
	}
	return out, problems, nil
}

// packageArtifact is the artifact that binds package p.
func packageArtifact(p Package, resolve func(Package) (etdi.Artifact, error)) (etdi.Artifact, error) {
	switch p.RegistryType {
	case PackageMCPB:
		if p.FileSHA256 == "" {
			return etdi.Artifact{}, fmt.Errorf("the entry gives no fileSha256")
		}
		if resolve == nil {
			return etdi.Artifact{}, fmt.Errorf("its artifact is named by the file's manifest.json, and no MCPB file was read")
		}
	case PackageOCI:
		if name, tag, digest := splitImage(p.Identifier); digest != "" {
			return etdi.Artifact{Type: etdi.ArtifactOCI, Name: name, Version: tag, Digest: digest}, nil
		}
	case PackageNPM, PackagePyPI:
	default:
		return etdi.Artifact{}, fmt.Errorf("etdi cannot bind %s packages: a client checking this entry refuses it (remove the package from server.json, or publish it as npm, PyPI, OCI or MCPB)", p.RegistryType)
	}
	if resolve == nil {
		return etdi.Artifact{}, fmt.Errorf("its digest is known only from what a host's launch runs, and nothing was resolved")
	}
	a, err := resolve(p)
	if err != nil {
		return etdi.Artifact{}, err
	}
	if m := BindsPackage(p, etdi.Server{Artifacts: []etdi.Artifact{a}}); m != nil {
		return etdi.Artifact{}, fmt.Errorf("what the launch runs, %s, is not this package: %s", a.String(), m.Why)
	}
	return a, nil
}

// ResolvePackage returns the artifact a host's launch of package p runs
// ([Package.Command] with in), resolved as etdi resolves any command line
// (the npm lockfile or npx cache, uv.lock, the local image store; nothing
// is fetched or started), in directory dir with environment env (this
// process's when nil); from says where it was found. An MCPB or a package
// that cannot be started is an error.
func ResolvePackage(ctx context.Context, p Package, in Inputs, dir string, env []string) (a etdi.Artifact, from string, err error) {
	c, err := p.Command(in)
	if err != nil {
		return a, "", err
	}
	if env == nil {
		env = os.Environ()
	}
	env = append([]string{}, env...)
	for k, v := range c.Env {
		env = append(env, k+"="+v)
	}
	res, err := artifact.Resolve(ctx, artifact.Launch{Argv: append([]string{c.Program}, c.Args...), Dir: dir, Env: env})
	if err != nil {
		return a, "", err
	}
	return res.Artifact, res.From, nil
}

// StdioPackage is the first package of s a host starts over stdio (one
// with a runner in [Runners]), the one whose server lists the tools when
// nothing else is given; ok is false when s has none.
func (s *ServerJSON) StdioPackage() (p Package, ok bool) {
	for _, p := range s.Packages {
		if _, runs := Runners[p.RegistryType]; !runs {
			continue
		}
		if t := p.Transport.Type; t == "" || t == TransportStdio {
			return p, true
		}
	}
	return Package{}, false
}

// Compare checks a manifest's server section against server.json s, as a
// provider does before it signs and a release pipeline before it
// publishes: the manifest must name s as its registryName and s's version,
// and bind every package and remote of s ([Binding]). It returns every
// difference; none means a client checking the registry entry finds the
// bundle made for it.
func Compare(s *ServerJSON, server etdi.Server) []Mismatch {
	var out []Mismatch
	if server.RegistryName == "" {
		out = append(out, Mismatch{"name", fmt.Sprintf("the manifest names no server.registryName; server.json's name is %s", s.Name)})
	}
	if server.Version != s.Version {
		v := server.Version
		if v == "" {
			v = "no version"
		}
		out = append(out, Mismatch{"version", fmt.Sprintf("the manifest's server.version is %s, server.json's version is %s", v, s.Version)})
	}
	return append(out, Binding(s, server)...)
}

// CanSetEtdiMeta reports whether [SetEtdiMeta] would accept doc with a
// bundle at bundleURL, whatever the bundle's digest turns out to be: a
// provider runs it before signing, so that nothing is signed that cannot
// be recorded in server.json (a malformed document, a URL that is not
// https, a publisher-provided object over [MaxPublisherMeta] bytes).
func CanSetEtdiMeta(doc []byte, bundleURL string) error {
	// Every digest has the same length: any stands for the real one.
	_, err := SetEtdiMeta(doc, EtdiMeta{Bundle: bundleURL, Digest: "sha256:" + strings.Repeat("0", 64)})
	return err
}
