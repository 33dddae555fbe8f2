package artifact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/artifactsyntax"
	"github.com/etdi-dev/etdi/internal/redact"
)

// Bounds on what is read.
const (
	maxLock      = 64 << 20 // package-lock.json, npm-shrinkwrap.json, uv.lock
	maxSmall     = 1 << 20  // package.json, .npmrc, image inspect output
	maxFile      = 2 << 30  // a program or script hashed
	maxParents   = 64       // directories walked up looking for a lock
	maxCacheDirs = 4096     // npx cache entries looked at
)

// Resolved is what a launch runs.
type Resolved struct {
	Artifact etdi.Artifact
	// Digests is every digest the artifact is known by, Artifact.Digest
	// first; Match accepts any of them. uv.lock records one file per
	// platform for a Python version (the sdist and each wheel), and uvx
	// installs whichever fits; an image may be listed under several
	// digests (its index and its manifest); an npm integrity string may
	// hold several hashes. Empty means Artifact.Digest alone.
	Digests []string
	// From says where it was resolved from, for messages:
	// "package-lock.json /x/y", "npx cache /home/u/.npm/_npx/ab12",
	// "docker image inspect", "file /usr/bin/x".
	From string
	// Path is, for a file, the absolute path the launch names it by
	// (after the PATH lookup, before symbolic links are followed): what
	// stays when a package manager repoints a link at a new version.
	Path string
}

// digests is Digests, or Artifact.Digest alone.
func (r *Resolved) digests() []string {
	if len(r.Digests) == 0 {
		return []string{r.Artifact.Digest}
	}
	if !slices.Contains(r.Digests, r.Artifact.Digest) {
		return append([]string{r.Artifact.Digest}, r.Digests...)
	}
	return r.Digests
}

// UnresolvedError reports a command line whose artifact cannot be told
// without guessing.
type UnresolvedError struct {
	What   string // what was being resolved: "npx @acme/weather", "program ./server"
	Reason string // why, and what to do about it
}

func (e *UnresolvedError) Error() string {
	if e.What == "" {
		return "cannot resolve what the server runs: " + e.Reason
	}
	return "cannot resolve what " + e.What + " runs: " + e.Reason
}

// MismatchError reports a launch that runs none of the artifacts a bundle
// names.
type MismatchError struct {
	Got    etdi.Artifact   // what the launch runs
	Signed []etdi.Artifact // what the bundle names
	Reason string
}

func (e *MismatchError) Error() string {
	return describe(e.Got) + " is not what the bundle names: " + e.Reason
}

// describe names an artifact in a message: "npm @acme/weather 1.2.3".
func describe(a etdi.Artifact) string {
	s := a.Type + " " + a.Name
	if a.Version != "" {
		s += " " + a.Version
	}
	return s
}

// noun is what an artifact of type t is, in a sentence.
func noun(t string) string {
	switch t {
	case etdi.ArtifactNPM:
		return "an npm package"
	case etdi.ArtifactPyPI:
		return "a PyPI distribution"
	case etdi.ArtifactOCI:
		return "an image"
	case etdi.ArtifactFile:
		return "a file"
	}
	return "an artifact of type " + t
}

// Match compares what is launched with the artifacts a bundle names: nil
// when one of them matches exactly, else a *MismatchError naming both.
//
// The signed artifact must have the same type, and:
//   - npm: the same name, the same version when the signed one has one,
//     and the same integrity string (a different hash algorithm is a
//     mismatch: the message says so);
//   - pypi: the same name (PEP 503 normalized), the same version when the
//     signed one has one (PEP 440 zero padding aside), and a digest among
//     got's Digests;
//   - oci: the same image name (docker.io/library/x and x are the same)
//     and a digest among got's Digests; tags are not compared;
//   - file: a digest among got's Digests; names are not compared.
//
// To match a bare Artifact, pass &Resolved{Artifact: a}.
func Match(got *Resolved, signed []etdi.Artifact) error {
	g := got.Artifact
	digests := got.digests()
	var ofType, named, versioned []etdi.Artifact
	for _, s := range signed {
		if s.Type != g.Type {
			continue
		}
		ofType = append(ofType, s)
		if g.Type != etdi.ArtifactFile && !sameName(g.Type, s.Name, g.Name) {
			continue
		}
		named = append(named, s)
		if s.Version != "" && (g.Type == etdi.ArtifactNPM || g.Type == etdi.ArtifactPyPI) && !sameVersion(g.Type, s.Version, g.Version) {
			continue
		}
		versioned = append(versioned, s)
		if s.Digest != "" && slices.Contains(digests, s.Digest) {
			return nil
		}
	}
	e := &MismatchError{Got: g, Signed: signed}
	switch {
	case len(signed) == 0:
		e.Reason = "the bundle names no artifacts"
	case len(ofType) == 0:
		var types []string
		for _, s := range signed {
			if !slices.Contains(types, s.Type) {
				types = append(types, s.Type)
			}
		}
		e.Reason = fmt.Sprintf("the bundle names only %s artifacts; this launch runs %s", strings.Join(types, " and "), noun(g.Type))
	case len(named) == 0:
		e.Reason = fmt.Sprintf("the bundle names no %s %s; it names %s", g.Type, g.Name, list(ofType, false))
	case len(versioned) == 0:
		e.Reason = fmt.Sprintf("the bundle names %s; this launch runs version %s", list(named, false), orNone(g.Version))
	default:
		e.Reason = fmt.Sprintf("the bundle names %s; this launch runs %s", list(versioned, true), strings.Join(digests, " or "))
		if g.Type == etdi.ArtifactNPM {
			if sa, ga := sriAlg(versioned[0].Digest), sriAlg(digests[0]); sa != ga {
				e.Reason = fmt.Sprintf("the bundle signs a %s integrity and the lock records %s (%s); sign the integrity the lock records",
					orNone(sa), orNone(ga), digests[0])
			}
		}
	}
	return e
}

// list names up to three artifacts in a message, with their digests if
// digests is set.
func list(as []etdi.Artifact, digests bool) string {
	var parts []string
	for i, a := range as {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more", len(as)-3))
			break
		}
		s := describe(a)
		if digests {
			s += " " + a.Digest
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// sameName compares names as the type's ecosystem does.
// SameName reports whether two names of an artifact type name the same
// package or image, as its ecosystem compares them: PyPI names PEP 503
// normalized, OCI names fully qualified (x is docker.io/library/x), npm
// names exactly.
func SameName(typ, a, b string) bool { return sameName(typ, a, b) }

// SameVersion reports whether two versions of an artifact type are the
// same, as its ecosystem compares them (PEP 440 for PyPI).
func SameVersion(typ, a, b string) bool { return sameVersion(typ, a, b) }

func sameName(typ, a, b string) bool {
	switch typ {
	case etdi.ArtifactPyPI:
		return pep503(a) == pep503(b)
	case etdi.ArtifactOCI:
		return canonicalImage(a) == canonicalImage(b)
	}
	return a == b
}

// sameVersion compares versions as the type's ecosystem does.
func sameVersion(typ, a, b string) bool {
	if typ == etdi.ArtifactPyPI {
		return pep440(a) == pep440(b)
	}
	return a == b
}

var pep503Run = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[-_.]+`) })

// pep503 normalizes a Python distribution name (PEP 503).
func pep503(name string) string {
	return pep503Run().ReplaceAllString(strings.ToLower(name), "-")
}

// pep440 is a version compared for equality the way PEP 440 "==" does
// for the common cases: case and a leading "v" do not matter, and the
// release segment is padded with zeros (1.0 == 1.0.0).
func pep440(v string) string {
	v = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(v)), "v")
	i := 0
	for i < len(v) && (v[i] == '.' || v[i] >= '0' && v[i] <= '9') {
		i++
	}
	segs := strings.Split(strings.TrimRight(v[:i], "."), ".")
	for j, s := range segs {
		if t := strings.TrimLeft(s, "0"); t != "" {
			segs[j] = t
		} else {
			segs[j] = "0"
		}
	}
	for len(segs) > 1 && segs[len(segs)-1] == "0" {
		segs = segs[:len(segs)-1]
	}
	return strings.Join(segs, ".") + v[i:]
}

// sriAlg is the algorithm of an SRI hash, or "".
func sriAlg(s string) string {
	alg, _, ok := strings.Cut(s, "-")
	if !ok {
		return ""
	}
	return alg
}

// FileDigest returns "sha256:<hex>" of the file at path, symbolic links
// followed, hashed as it is read. The file must be a regular file of 1
// byte to 2 GiB that does not change size while it is read.
func FileDigest(path string) (string, error) {
	return fileDigest(context.Background(), path)
}

// fileDigest is FileDigest, stopped when ctx ends.
func fileDigest(ctx context.Context, path string) (string, error) {
	f, size, err := openRegular(path, maxFile)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if size == 0 {
		return "", fmt.Errorf("%s is empty", path)
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(ctxReader{ctx, f}, size+1))
	if err != nil {
		return "", err
	}
	if n != size {
		return "", fmt.Errorf("%s changed while it was read", path)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// ctxReader is a reader that fails once ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// openRegular opens a regular file of at most max bytes, without blocking
// on a FIFO or device that replaced it since it was looked at.
func openRegular(path string, max int64) (*os.File, int64, error) {
	f, err := openNoBlock(path)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > max {
		f.Close()
		return nil, 0, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return f, fi.Size(), nil
}

// readBounded reads a regular file of at most max bytes.
func readBounded(path string, max int64) ([]byte, error) {
	f, _, err := openRegular(path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return b, nil
}

// conceal masks in a message every argument of argv that looks like a
// credential, and each part of one that does, as a path or assignment
// joined into the message would show it.
func conceal(argv []string, msg string) string {
	var secrets redact.Set
	for _, a := range argv {
		if !redact.LooksSecret(a) {
			continue
		}
		secrets.Add(a)
		for _, part := range strings.FieldsFunc(a, func(r rune) bool { return strings.ContainsRune(`=/\:@,;`, r) }) {
			if redact.LooksSecret(part) {
				secrets.Add(part)
			}
		}
	}
	return secrets.String(msg)
}

// shown is a name taken from a command line, safe to put in a message:
// quoted, or a placeholder when it looks like a credential.
func shown(s string) string {
	if redact.LooksSecret(s) || !artifactsyntax.Printable(s) || len(s) > 200 {
		return "(an argument not shown)"
	}
	return s
}
