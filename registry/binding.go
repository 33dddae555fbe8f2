package registry

import (
	"fmt"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/artifact"
)

// A Mismatch says how a bundle's server differs from a registry entry.
type Mismatch struct {
	// What is "name", or the package or remote it is about, as
	// "npm acme-weather@1.0.0" or "remote https://…".
	What string
	// Why says what differs.
	Why string
}

func (m Mismatch) Error() string { return m.What + ": " + m.Why }

// Binding compares a signed server (a verified bundle's server) with a
// registry entry's server.json: the registry name, when the bundle names
// one, and every package and remote of the entry, which the bundle's
// artifacts and endpoints must bind (SPEC.md §4.1, §4.2). It returns every
// mismatch; none means the bundle was made for this entry.
//
// Only what the entry itself states can be compared here: an npm or PyPI
// package's name and version, an OCI image's name and digest or tag, an
// MCPB's SHA-256, a remote's URL. What a launch actually runs is compared
// with the same artifacts when the server is started (the npm integrity,
// the image digest).
func Binding(s *ServerJSON, signed etdi.Server) []Mismatch {
	var out []Mismatch
	if signed.RegistryName != "" && !etdi.SameRegistryName(signed.RegistryName, s.Name) {
		out = append(out, Mismatch{"name", fmt.Sprintf("the bundle is for %s, the entry is %s", signed.RegistryName, s.Name)})
	}
	for _, p := range s.Packages {
		if err := BindsPackage(p, signed); err != nil {
			out = append(out, *err)
		}
	}
	for _, r := range s.Remotes {
		if err := BindsRemote(r, signed); err != nil {
			out = append(out, *err)
		}
	}
	return out
}

// PackageLabel names a package as mismatches do: "npm acme-weather@1.0.0".
func PackageLabel(p Package) string {
	l := p.RegistryType + " " + p.Identifier
	if p.Version != "" {
		l += "@" + p.Version
	}
	return l
}

// BindsPackage reports whether the signed server's artifacts bind package
// p: nil if they do.
func BindsPackage(p Package, signed etdi.Server) *Mismatch {
	what := PackageLabel(p)
	miss := func(format string, args ...any) *Mismatch {
		return &Mismatch{what, fmt.Sprintf(format, args...)}
	}
	typ := p.RegistryType
	switch typ {
	case PackageNPM, PackagePyPI, PackageOCI, PackageMCPB:
	default:
		return miss("etdi cannot bind %s packages", typ)
	}
	var ofType []etdi.Artifact
	for _, a := range signed.Artifacts {
		if a.Type == typ {
			ofType = append(ofType, a)
		}
	}
	if len(ofType) == 0 {
		return miss("the bundle names no %s artifact", typ)
	}
	switch typ {
	case PackageMCPB:
		if p.FileSHA256 == "" {
			return miss("the entry gives no fileSha256")
		}
		for _, a := range ofType {
			if a.Digest == "sha256:"+p.FileSHA256 {
				return nil
			}
		}
		return miss("the bundle names another file: %s", artifactList(ofType))
	case PackageOCI:
		name, tag, digest := splitImage(p.Identifier)
		if p.Version != "" && tag == "" {
			tag = p.Version
		}
		for _, a := range ofType {
			if !artifact.SameName(typ, a.Name, name) {
				continue
			}
			if digest != "" {
				if a.Digest == digest {
					return nil
				}
				continue
			}
			if tag != "" && a.Version == tag {
				return nil
			}
		}
		if digest == "" && tag == "" {
			return miss("the entry names the image without a tag or digest: it runs whatever is newest")
		}
		return miss("the bundle names %s", artifactList(ofType))
	}
	if p.Version == "" {
		return miss("the entry gives no version: the host would run whatever is newest")
	}
	for _, a := range ofType {
		if artifact.SameName(typ, a.Name, p.Identifier) && (a.Version == "" || artifact.SameVersion(typ, a.Version, p.Version)) {
			return nil
		}
	}
	return miss("the bundle names %s", artifactList(ofType))
}

// BindsRemote reports whether the signed server's endpoints cover remote
// r's URL: nil if they do. A URL with {variables} is filled in by the
// host and cannot be bound.
func BindsRemote(r Transport, signed etdi.Server) *Mismatch {
	what := "remote " + r.URL
	if strings.ContainsAny(r.URL, "{}") {
		return &Mismatch{what, "a URL with variables cannot be bound to endpoints"}
	}
	if len(signed.Endpoints) == 0 {
		return &Mismatch{what, "the bundle names no endpoints"}
	}
	if !signed.Covers(r.URL) {
		return &Mismatch{what, "not covered by the bundle's endpoints " + strings.Join(signed.Endpoints, ", ")}
	}
	return nil
}

// splitImage splits an OCI reference into name, tag and digest
// ("sha256:…").
func splitImage(ref string) (name, tag, digest string) {
	name = ref
	if i := strings.Index(name, "@"); i >= 0 {
		name, digest = name[:i], name[i+1:]
	}
	slash := strings.LastIndex(name, "/")
	if i := strings.LastIndex(name, ":"); i > slash {
		name, tag = name[:i], name[i+1:]
	}
	return name, tag, digest
}

func artifactList(as []etdi.Artifact) string {
	var s []string
	for _, a := range as {
		l := a.Type + " " + a.Name
		if a.Version != "" {
			l += "@" + a.Version
		}
		s = append(s, l+" "+a.Digest)
	}
	return strings.Join(s, ", ")
}
