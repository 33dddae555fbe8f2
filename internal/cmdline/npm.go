package cmdline

import (
	"regexp"
	"strings"
	"sync"
)

// npmVersionRE is what may follow a package name's '@': a version, a
// range or a dist-tag.
var npmVersionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._^~<>=*+|-]*$`) })

// npmShorthandRE is a GitHub shorthand spec, user/repo[#ref].
var npmShorthandRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+(#\S*)?$`) })

// SplitNPM splits an npm package spec, name[@version] or
// @scope/name[@version], at the '@' of its version: "@scope/name@1.2.3"
// gives "@scope/name" and "1.2.3", "@scope/name" gives it and "". Whether
// name is a valid package name is left to the caller.
func SplitNPM(spec string) (name, version string) {
	if i := strings.LastIndexByte(spec, '@'); i > 0 {
		return spec[:i], spec[i+1:]
	}
	return spec, ""
}

// NPMVersion reports whether v can follow a package name's '@': a
// version, a range or a dist-tag, or nothing.
func NPMVersion(v string) bool {
	return npmVersionRE().MatchString(v)
}

// NPMShorthand reports whether spec is a GitHub shorthand spec,
// user/repo[#ref], which npm fetches from GitHub.
func NPMShorthand(spec string) bool {
	return npmShorthandRE().MatchString(spec)
}
