// Package artifactsyntax holds the syntax of what names a server artifact
// (SPEC.md §4.1): package, distribution and image names, image tags and
// digests. It does no I/O; the model (etdi.ValidateArtifact) and the
// resolver of launches (internal/artifact) share it. Its patterns are
// compiled on first use.
package artifactsyntax

import (
	"encoding/base64"
	"regexp"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Bounds of an artifact's name and version.
const (
	MaxNameLen    = 256
	MaxVersionLen = 128
)

type patterns struct {
	npmName, pyName, imageName, tag, sha256, sri *regexp.Regexp
}

var compiled = sync.OnceValue(func() *patterns {
	return &patterns{
		npmName: regexp.MustCompile(`^(@[A-Za-z0-9~-][A-Za-z0-9._~-]*/)?[A-Za-z0-9~-][A-Za-z0-9._~-]*$`),
		pyName:  regexp.MustCompile(`^([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])$`),
		// An image name as the distribution reference grammar has it,
		// without tag or digest: an optional registry host (with port),
		// then path components.
		imageName: regexp.MustCompile(`^(([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])(\.([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]))*(:[0-9]+)?/)?` +
			`[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$`),
		tag:    regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`),
		sha256: regexp.MustCompile(`^sha256:[0-9a-f]{64}$`),
		sri:    regexp.MustCompile(`^(sha256|sha384|sha512)-([A-Za-z0-9+/]+={0,2})$`),
	}
})

// NPMName reports whether s has the syntax of an npm package name (name
// or @scope/name); the 214-byte bound of npm is the caller's.
func NPMName(s string) bool { return compiled().npmName.MatchString(s) }

// PyPIName reports whether s has the syntax of a Python distribution name.
func PyPIName(s string) bool { return compiled().pyName.MatchString(s) }

// ImageName reports whether s is an OCI image name without tag or digest.
func ImageName(s string) bool { return compiled().imageName.MatchString(s) }

// Tag reports whether s is an OCI image tag.
func Tag(s string) bool { return compiled().tag.MatchString(s) }

// SHA256 reports whether s is "sha256:" and 64 lowercase hex digits.
func SHA256(s string) bool { return compiled().sha256.MatchString(s) }

// sriSize is the digest size of each SRI algorithm.
var sriSize = map[string]int{"sha256": 32, "sha384": 48, "sha512": 64}

// SRI reports whether s is one SRI hash of a SHA-2 algorithm with a
// digest of the right size.
func SRI(s string) bool {
	m := compiled().sri.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(m[2])
	return err == nil && len(b) == sriSize[m[1]]
}

// Printable reports whether s is valid UTF-8 without control or format
// characters and without whitespace other than ' '.
func Printable(s string) bool {
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
