package etdi

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/etdi-dev/etdi/internal/artifactsyntax"
	"github.com/etdi-dev/etdi/strictjson"
)

// Artifact types (SPEC.md §4.1).
const (
	ArtifactNPM  = "npm"
	ArtifactPyPI = "pypi"
	ArtifactOCI  = "oci"
	ArtifactFile = "file"
	// ArtifactMCPB is an MCPB file: the manifest's name and version, and
	// the SHA-256 of the .mcpb file (server.json's fileSha256).
	ArtifactMCPB = "mcpb"
)

// Bounds of a server's binding (SPEC.md §2).
const (
	MaxEndpoints   = 64
	MaxArtifacts   = 64
	maxEndpointLen = 2048
)

// String names the artifact for messages: "npm @acme/weather@1.2.0
// (sha512-…)", the digest cut to 24 characters.
func (a Artifact) String() string {
	s := a.Type + " " + a.Name
	if a.Version != "" {
		s += "@" + a.Version
	}
	d := a.Digest
	if len(d) > 24 {
		d = d[:24] + "…"
	}
	return s + " (" + d + ")"
}

// ValidateArtifact checks one artifact as written in a manifest or statement: a
// known type, a name of 1 to 256 bytes of printable UTF-8 with the syntax
// of the type's ecosystem (a base name without '/' for file, the MCPB
// manifest's name for mcpb), a version
// of at most 128 printable bytes without spaces (none for file), and the
// digest syntax of the type: an SRI integrity with one sha512, sha384 or
// sha256 hash for npm, "sha256:" and 64 lowercase hex digits otherwise.
func ValidateArtifact(a Artifact) error {
	switch a.Type {
	case ArtifactNPM, ArtifactPyPI, ArtifactOCI, ArtifactFile, ArtifactMCPB:
	case "":
		return errors.New("artifact: no type (want npm, pypi, oci, file or mcpb)")
	default:
		return fmt.Errorf("artifact type %q is unknown (want npm, pypi, oci, file or mcpb)", a.Type)
	}
	if err := validateArtifactName(a); err != nil {
		return err
	}
	what := a.Type + " artifact " + fmt.Sprintf("%q", a.Name)
	switch {
	case a.Type == ArtifactFile && a.Version != "":
		return fmt.Errorf("%s: a file artifact has no version", what)
	case len(a.Version) > artifactsyntax.MaxVersionLen:
		return fmt.Errorf("%s: version longer than %d bytes", what, artifactsyntax.MaxVersionLen)
	case a.Version != "" && (!artifactsyntax.Printable(a.Version) || strings.ContainsRune(a.Version, ' ')):
		return fmt.Errorf("%s: the version holds a space, a control character or invalid UTF-8", what)
	case a.Type == ArtifactOCI && a.Version != "" && !artifactsyntax.Tag(a.Version):
		return fmt.Errorf("%s: version %q is not an image tag", what, a.Version)
	}
	if a.Type == ArtifactNPM {
		if !artifactsyntax.SRI(a.Digest) {
			return fmt.Errorf("%s: digest %q is not an integrity string (sha512-<base64>, as package-lock.json records it)", what, a.Digest)
		}
	} else if !artifactsyntax.SHA256(a.Digest) {
		return fmt.Errorf("%s: digest %q is not sha256:<64 lowercase hex digits>", what, a.Digest)
	}
	return nil
}

// validateArtifactName checks the name of an artifact of a known type.
func validateArtifactName(a Artifact) error {
	switch {
	case a.Name == "":
		return fmt.Errorf("%s artifact: no name", a.Type)
	case len(a.Name) > artifactsyntax.MaxNameLen:
		return fmt.Errorf("%s artifact: name longer than %d bytes", a.Type, artifactsyntax.MaxNameLen)
	case !artifactsyntax.Printable(a.Name):
		return fmt.Errorf("%s artifact %q: the name holds a control character or invalid UTF-8", a.Type, a.Name)
	}
	what := a.Type + " artifact " + fmt.Sprintf("%q", a.Name)
	switch a.Type {
	case ArtifactNPM:
		if len(a.Name) > 214 || !artifactsyntax.NPMName(a.Name) {
			return fmt.Errorf("%s: not an npm package name (name or @scope/name)", what)
		}
	case ArtifactPyPI:
		if !artifactsyntax.PyPIName(a.Name) {
			return fmt.Errorf("%s: not a Python distribution name", what)
		}
	case ArtifactOCI:
		if !artifactsyntax.ImageName(a.Name) {
			return fmt.Errorf("%s: not an image name (write the tag in version and the digest in digest)", what)
		}
	case ArtifactFile:
		if strings.ContainsAny(a.Name, `/\`) || a.Name == "." || a.Name == ".." {
			return fmt.Errorf("%s: the name of a file artifact is its base name, without a directory", what)
		}
	}
	return nil
}

// ValidateEndpoint checks a URL prefix a server is served from: https (or
// http to a loopback host), a host, no user information, query or
// fragment.
func ValidateEndpoint(e string) error {
	_, err := parseEndpoint(e)
	return err
}

type endpoint struct {
	scheme, host, port, path string
}

func parseEndpoint(e string) (endpoint, error) {
	if len(e) > maxEndpointLen {
		return endpoint{}, fmt.Errorf("longer than %d bytes", maxEndpointLen)
	}
	u, err := url.Parse(e)
	if err != nil {
		return endpoint{}, fmt.Errorf("%q is not a URL", truncate(e, 80))
	}
	ep, err := endpointOf(u)
	if err != nil {
		return endpoint{}, fmt.Errorf("%q: %v", truncate(e, 80), err)
	}
	return ep, nil
}

// endpointOf is the comparable form of a URL: lowercase scheme and host,
// the port made explicit, the escaped path without dot segments.
func endpointOf(u *url.URL) (endpoint, error) {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	switch {
	case scheme != "https" && scheme != "http":
		return endpoint{}, fmt.Errorf("scheme %q: only https (or http to a loopback host)", u.Scheme)
	case u.Opaque != "" || host == "":
		return endpoint{}, fmt.Errorf("no host")
	case u.User != nil:
		return endpoint{}, fmt.Errorf("user information is not part of an endpoint")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.RawFragment != "":
		return endpoint{}, fmt.Errorf("a query or fragment is not part of an endpoint")
	case scheme == "http" && !LoopbackHost(host):
		return endpoint{}, fmt.Errorf("http is accepted only for a loopback host")
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[scheme]
	}
	p := u.EscapedPath()
	// What a server or a proxy in front of it may read as another path: an
	// encoded slash or backslash, a ;parameter, an empty segment.
	if lp := strings.ToLower(p); strings.Contains(lp, "%2f") || strings.Contains(lp, "%5c") || strings.ContainsAny(p, `;\`) || strings.Contains(p, "//") {
		return endpoint{}, fmt.Errorf("an encoded slash, a backslash, a ';' or an empty segment in the path")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." || strings.EqualFold(seg, "%2e") || strings.EqualFold(seg, "%2e%2e") ||
			strings.EqualFold(seg, ".%2e") || strings.EqualFold(seg, "%2e.") {
			return endpoint{}, fmt.Errorf("a dot segment in the path")
		}
	}
	return endpoint{scheme, host, port, p}, nil
}

// LoopbackHost reports whether a URL's host (lower case, without port or
// brackets) is "localhost" or a loopback address: the only hosts etdi
// speaks plain http to.
func LoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// SecureURL reports whether u is https, or http to a loopback host: where
// etdi sends a credential or fetches what it trusts.
func SecureURL(u *url.URL) bool {
	return u.Scheme == "https" || (u.Scheme == "http" && LoopbackHost(u.Hostname()))
}

// Covers reports whether the server is served from rawURL: one of its
// endpoints has the same scheme, host and port, and rawURL's path is the
// endpoint's path or lies below it (a segment boundary: "/mcp" covers
// "/mcp" and "/mcp/x", not "/mcpx"). A URL with a dot segment, user
// information or that does not parse is covered by nothing.
func (s *Server) Covers(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", "" // a query names no other server
	got, err := endpointOf(u)
	if err != nil {
		return false
	}
	for _, e := range s.Endpoints {
		ep, err := parseEndpoint(e)
		if err != nil || ep.scheme != got.scheme || ep.host != got.host || ep.port != got.port {
			continue
		}
		prefix := strings.TrimSuffix(ep.path, "/")
		if got.path == prefix || strings.HasPrefix(got.path, prefix+"/") || (prefix == "" && got.path == "") {
			return true
		}
	}
	return false
}

func parseEndpoints(f strictjson.Field) ([]string, error) {
	if f.V == nil {
		return nil, nil
	}
	a, err := f.Array()
	if err != nil {
		return nil, err
	}
	if a.Len() == 0 || a.Len() > MaxEndpoints {
		return nil, a.Errorf("must hold 1 to %d endpoints (leave it out for none)", MaxEndpoints)
	}
	var out []string
	for i := 0; i < a.Len(); i++ {
		s, err := a.Elem(i).Str()
		if err != nil {
			return nil, err
		}
		if err := ValidateEndpoint(s); err != nil {
			return nil, a.Elem(i).Errorf("%v", err)
		}
		out = append(out, s)
	}
	return out, nil
}

func parseArtifacts(f strictjson.Field) ([]Artifact, error) {
	if f.V == nil {
		return nil, nil
	}
	a, err := f.Array()
	if err != nil {
		return nil, err
	}
	if a.Len() == 0 || a.Len() > MaxArtifacts {
		return nil, a.Errorf("must hold 1 to %d artifacts (leave it out for none)", MaxArtifacts)
	}
	var out []Artifact
	for i := 0; i < a.Len(); i++ {
		o, err := a.Elem(i).Object()
		if err != nil {
			return nil, err
		}
		if err := o.Only("type", "name", "version", "digest"); err != nil {
			return nil, err
		}
		var art Artifact
		if art.Type, err = o.Field("type").Str(); err != nil {
			return nil, err
		}
		if art.Name, err = o.Field("name").Str(); err != nil {
			return nil, err
		}
		if art.Version, err = o.Field("version").OptStr(); err != nil {
			return nil, err
		}
		if art.Digest, err = o.Field("digest").Str(); err != nil {
			return nil, err
		}
		if err := ValidateArtifact(art); err != nil {
			return nil, a.Elem(i).Errorf("%v", err)
		}
		out = append(out, art)
	}
	return out, nil
}

// ServerValue is the JSON value of a server object, as manifests and
// statements write it.
func ServerValue(s Server) *strictjson.Value {
	v := obj2(strictjson.Member{Name: "name", Value: str(s.Name)})
	if s.Version != "" {
		v.Members = append(v.Members, strictjson.Member{Name: "version", Value: str(s.Version)})
	}
	if s.RegistryName != "" {
		v.Members = append(v.Members, strictjson.Member{Name: "registryName", Value: str(s.RegistryName)})
	}
	if len(s.Endpoints) > 0 {
		es := &strictjson.Value{Kind: strictjson.Array}
		for _, e := range s.Endpoints {
			es.Elems = append(es.Elems, str(e))
		}
		v.Members = append(v.Members, strictjson.Member{Name: "endpoints", Value: es})
	}
	if len(s.Artifacts) > 0 {
		as := &strictjson.Value{Kind: strictjson.Array}
		for _, a := range s.Artifacts {
			o := obj2(strictjson.Member{Name: "type", Value: str(a.Type)}, strictjson.Member{Name: "name", Value: str(a.Name)})
			if a.Version != "" {
				o.Members = append(o.Members, strictjson.Member{Name: "version", Value: str(a.Version)})
			}
			o.Members = append(o.Members, strictjson.Member{Name: "digest", Value: str(a.Digest)})
			as.Elems = append(as.Elems, o)
		}
		v.Members = append(v.Members, strictjson.Member{Name: "artifacts", Value: as})
	}
	return v
}

// ServedBy lists what a bound server is served by, as pins write it:
// "TYPE NAME@VERSION DIGEST" and "url SCHEME://HOST:PORT/PATH".
func (s *Server) ServedBy() []string {
	var out []string
	for _, a := range s.Artifacts {
		n := a.Type + " " + a.Name
		if a.Version != "" {
			n += "@" + a.Version
		}
		out = append(out, n+" "+a.Digest)
	}
	for _, e := range s.Endpoints {
		if ep, err := parseEndpoint(e); err == nil {
			out = append(out, fmt.Sprintf("url %s://%s:%s%s", ep.scheme, ep.host, ep.port, strings.TrimSuffix(ep.path, "/")))
		}
	}
	return out
}
