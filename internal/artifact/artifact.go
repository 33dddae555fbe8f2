package artifact

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/etdi-dev/etdi/internal/redact"
)

// Artifact is one component of a stdio server, as server.artifacts in a
// bundle names it (etdi.Artifact is this type).
type Artifact struct {
	Type    string `json:"type"`
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Digest  string `json:"digest"`
}

// Artifact types.
const (
	TypeNPM  = "npm"  // Name: the package; Version; Digest: the registry's integrity (SRI)
	TypePyPI = "pypi" // Name: the distribution; Version; Digest: sha256 of one of its files
	TypeOCI  = "oci"  // Name: the image without tag or digest; Version: the tag; Digest: the manifest digest
	TypeFile = "file" // Name: the file's base name; no Version; Digest: sha256 of its content
)

// Bounds on what is read.
const (
	maxLock       = 64 << 20 // package-lock.json, npm-shrinkwrap.json, uv.lock
	maxSmall      = 1 << 20  // package.json, .npmrc, image inspect output
	maxFile       = 2 << 30  // a program or script hashed
	maxNameLen    = 256
	maxVersionLen = 128
	maxParents    = 64   // directories walked up looking for a lock
	maxCacheDirs  = 4096 // npx cache entries looked at
)

// Resolved is what a launch runs.
type Resolved struct {
	Artifact Artifact
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
	Got    Artifact   // what the launch runs
	Signed []Artifact // what the bundle names
	Reason string
}

func (e *MismatchError) Error() string {
	return describe(e.Got) + " is not what the bundle names: " + e.Reason
}

// describe names an artifact in a message: "npm @acme/weather 1.2.3".
func describe(a Artifact) string {
	s := a.Type + " " + a.Name
	if a.Version != "" {
		s += " " + a.Version
	}
	return s
}

// noun is what an artifact of type t is, in a sentence.
func noun(t string) string {
	switch t {
	case TypeNPM:
		return "an npm package"
	case TypePyPI:
		return "a PyPI distribution"
	case TypeOCI:
		return "an image"
	case TypeFile:
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
func Match(got *Resolved, signed []Artifact) error {
	g := got.Artifact
	digests := got.digests()
	var ofType, named, versioned []Artifact
	for _, s := range signed {
		if s.Type != g.Type {
			continue
		}
		ofType = append(ofType, s)
		if g.Type != TypeFile && !sameName(g.Type, s.Name, g.Name) {
			continue
		}
		named = append(named, s)
		if s.Version != "" && (g.Type == TypeNPM || g.Type == TypePyPI) && !sameVersion(g.Type, s.Version, g.Version) {
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
		if g.Type == TypeNPM {
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
func list(as []Artifact, digests bool) string {
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
func sameName(typ, a, b string) bool {
	switch typ {
	case TypePyPI:
		return pep503(a) == pep503(b)
	case TypeOCI:
		return canonicalImage(a) == canonicalImage(b)
	}
	return a == b
}

// sameVersion compares versions as the type's ecosystem does.
func sameVersion(typ, a, b string) bool {
	if typ == TypePyPI {
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

// Name and digest syntax.
var (
	npmNameRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(@[A-Za-z0-9~-][A-Za-z0-9._~-]*/)?[A-Za-z0-9~-][A-Za-z0-9._~-]*$`)
	})
	pyNameRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])$`)
	})
	// An image name as the distribution reference grammar has it, without
	// tag or digest: an optional registry host (with port), then path
	// components.
	imageNameRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])(\.([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]))*(:[0-9]+)?/)?` +
			`[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$`)
	})
	tagRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`) })
	sha256RE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256:[0-9a-f]{64}$`) })
	sriRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(sha256|sha384|sha512)-([A-Za-z0-9+/]+={0,2})$`) })
)

// sriSize is the digest size of each SRI algorithm.
var sriSize = map[string]int{"sha256": 32, "sha384": 48, "sha512": 64}

// validSRI reports whether s is one SRI hash of a SHA-2 algorithm with a
// digest of the right size.
func validSRI(s string) bool {
	m := sriRE().FindStringSubmatch(s)
	if m == nil {
		return false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(m[2])
	return err == nil && len(b) == sriSize[m[1]]
}

// sriAlg is the algorithm of an SRI hash, or "".
func sriAlg(s string) string {
	alg, _, ok := strings.Cut(s, "-")
	if !ok {
		return ""
	}
	return alg
}

// Validate checks one artifact as written in a manifest or statement: a
// known type, a name of 1 to 256 bytes of printable UTF-8 with the syntax
// of the type's ecosystem (a base name without '/' for file), a version
// of at most 128 printable bytes without spaces (none for file), and the
// digest syntax of the type: an SRI integrity with one sha512, sha384 or
// sha256 hash for npm, "sha256:" and 64 lowercase hex digits otherwise.
func Validate(a Artifact) error {
	switch a.Type {
	case TypeNPM, TypePyPI, TypeOCI, TypeFile:
	case "":
		return errors.New("artifact: no type (want npm, pypi, oci or file)")
	default:
		return fmt.Errorf("artifact type %q is unknown (want npm, pypi, oci or file)", a.Type)
	}
	if err := validateName(a); err != nil {
		return err
	}
	what := a.Type + " artifact " + fmt.Sprintf("%q", a.Name)
	if err := validateTypedName(a, what); err != nil {
		return err
	}
	if err := validateVersion(a, what); err != nil {
		return err
	}
	return validateDigest(a, what)
}

// validateName checks what every artifact's name must be.
func validateName(a Artifact) error {
	switch {
	case a.Name == "":
		return fmt.Errorf("%s artifact: no name", a.Type)
	case len(a.Name) > maxNameLen:
		return fmt.Errorf("%s artifact: name longer than %d bytes", a.Type, maxNameLen)
	case !printable(a.Name):
		return fmt.Errorf("%s artifact %q: the name holds a control character or invalid UTF-8", a.Type, a.Name)
	}
	return nil
}

// validateTypedName checks the name of a as its type names things (what
// names a in errors).
func validateTypedName(a Artifact, what string) error {
	switch a.Type {
	case TypeNPM:
		if len(a.Name) > 214 || !npmNameRE().MatchString(a.Name) {
			return fmt.Errorf("%s: not an npm package name (name or @scope/name)", what)
		}
	case TypePyPI:
		if !pyNameRE().MatchString(a.Name) {
			return fmt.Errorf("%s: not a Python distribution name", what)
		}
	case TypeOCI:
		if !imageNameRE().MatchString(a.Name) {
			return fmt.Errorf("%s: not an image name (write the tag in version and the digest in digest)", what)
		}
	case TypeFile:
		if strings.ContainsAny(a.Name, `/\`) || a.Name == "." || a.Name == ".." {
			return fmt.Errorf("%s: the name of a file artifact is its base name, without a directory", what)
		}
	}
	return nil
}

// validateVersion checks the version of a (what names a in errors).
func validateVersion(a Artifact, what string) error {
	switch {
	case a.Type == TypeFile && a.Version != "":
		return fmt.Errorf("%s: a file artifact has no version", what)
	case len(a.Version) > maxVersionLen:
		return fmt.Errorf("%s: version longer than %d bytes", what, maxVersionLen)
	case a.Version != "" && (!printable(a.Version) || strings.ContainsRune(a.Version, ' ')):
		return fmt.Errorf("%s: the version holds a space, a control character or invalid UTF-8", what)
	case a.Type == TypeOCI && a.Version != "" && !tagRE().MatchString(a.Version):
		return fmt.Errorf("%s: version %q is not an image tag", what, a.Version)
	}
	return nil
}

// validateDigest checks the digest of a: an SRI integrity string for npm,
// sha256:HEX for the others (what names a in errors).
func validateDigest(a Artifact, what string) error {
	if a.Type == TypeNPM {
		if !validSRI(a.Digest) {
			return fmt.Errorf("%s: digest %q is not an integrity string (sha512-<base64>, as package-lock.json records it)", what, a.Digest)
		}
	} else if !sha256RE().MatchString(a.Digest) {
		return fmt.Errorf("%s: digest %q is not sha256:<64 lowercase hex digits>", what, a.Digest)
	}
	return nil
}

// printable reports whether s is valid UTF-8 without control or format
// characters and without whitespace other than ' '.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
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
	if redact.LooksSecret(s) || !printable(s) || len(s) > 200 {
		return "(an argument not shown)"
	}
	return s
}
