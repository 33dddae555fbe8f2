package etdi

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a parsed Semantic Versioning 2.0.0 version (no "v" prefix).
type Version struct {
	Major, Minor, Patch uint64
	Pre                 []string // dot-separated pre-release identifiers
	Build               string
	raw                 string
}

func (v Version) String() string { return v.raw }

// ParseVersion parses s strictly as SemVer 2.0.0: MAJOR.MINOR.PATCH with
// optional -PRERELEASE and +BUILD, no leading zeros, no "v" prefix.
func ParseVersion(s string) (Version, error) {
	v := Version{raw: s}
	if s == "" {
		return v, fmt.Errorf("empty version")
	}
	if len(s) > 128 {
		return v, fmt.Errorf("version longer than 128 bytes")
	}
	rest := s
	if i := strings.IndexByte(rest, '+'); i >= 0 {
		v.Build = rest[i+1:]
		rest = rest[:i]
		if err := checkIdents(v.Build, false); err != nil {
			return v, fmt.Errorf("%q is not a semantic version: build metadata: %v", s, err)
		}
	}
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		pre := rest[i+1:]
		rest = rest[:i]
		if err := checkIdents(pre, true); err != nil {
			return v, fmt.Errorf("%q is not a semantic version: pre-release: %v", s, err)
		}
		v.Pre = strings.Split(pre, ".")
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return v, fmt.Errorf("%q is not a semantic version (want MAJOR.MINOR.PATCH)", s)
	}
	nums := [3]*uint64{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts {
		if !isNumeric(p) || (len(p) > 1 && p[0] == '0') {
			return v, fmt.Errorf("%q is not a semantic version: %q is not a number without leading zeros", s, p)
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return v, fmt.Errorf("%q is not a semantic version: %v", s, err)
		}
		*nums[i] = n
	}
	return v, nil
}

func checkIdents(s string, pre bool) error {
	if s == "" {
		return fmt.Errorf("empty")
	}
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return fmt.Errorf("empty identifier")
		}
		for _, c := range id {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
				return fmt.Errorf("invalid character %q", c)
			}
		}
		if pre && isNumeric(id) && len(id) > 1 && id[0] == '0' {
			return fmt.Errorf("numeric identifier %q has a leading zero", id)
		}
	}
	return nil
}

func isNumeric(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Compare returns -1, 0 or +1 as v has lower, equal or higher precedence
// than w (SemVer 2.0.0 §11; build metadata is ignored).
func (v Version) Compare(w Version) int {
	for _, d := range [][2]uint64{{v.Major, w.Major}, {v.Minor, w.Minor}, {v.Patch, w.Patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(v.Pre) == 0 && len(w.Pre) == 0:
		return 0
	case len(v.Pre) == 0:
		return 1
	case len(w.Pre) == 0:
		return -1
	}
	for i := 0; i < len(v.Pre) && i < len(w.Pre); i++ {
		a, b := v.Pre[i], w.Pre[i]
		an, bn := isNumeric(a), isNumeric(b)
		switch {
		case an && bn:
			if c := compareNumeric(a, b); c != 0 {
				return c
			}
		case an:
			return -1
		case bn:
			return 1
		default:
			if c := strings.Compare(a, b); c != 0 {
				return c
			}
		}
	}
	switch {
	case len(v.Pre) < len(w.Pre):
		return -1
	case len(v.Pre) > len(w.Pre):
		return 1
	}
	return 0
}

func compareNumeric(a, b string) int {
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// CompareVersions parses both versions and compares them.
func CompareVersions(a, b string) (int, error) {
	va, err := ParseVersion(a)
	if err != nil {
		return 0, err
	}
	vb, err := ParseVersion(b)
	if err != nil {
		return 0, err
	}
	return va.Compare(vb), nil
}
