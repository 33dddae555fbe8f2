package etdi

import (
	"errors"
	"fmt"
	"strings"
)

// Registry names: a server's name in MCP registries, NAMESPACE/NAME
// (SPEC.md §4.2), and the namespaces a provider publishes under (§9).

// ValidateRegistryName checks a server's name in MCP registries
// (SPEC.md §4): NAMESPACE/NAME, 3–200 bytes, the namespace of ASCII
// letters, digits, "." and "-", the name of those and "_", as the
// registry itself requires.
func ValidateRegistryName(n string) error {
	if len(n) < 3 || len(n) > 200 {
		return fmt.Errorf("registry name must be 3 to 200 bytes, not %d", len(n))
	}
	ns, name, ok := strings.Cut(n, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("registry name %q is not NAMESPACE/NAME", n)
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '-', c == '/':
		case c == '_' && i > len(ns):
		default:
			return fmt.Errorf("registry name %q: character %q is not allowed (letters, digits, '.', '-'; '_' after the '/')", n, c)
		}
	}
	return nil
}

// GitHubNamespacePrefix begins the MCP registry namespaces of GitHub
// accounts: io.github.OWNER, which the registry grants to OWNER's GitHub
// identity (SPEC.md §4.2).
const GitHubNamespacePrefix = "io.github."

// ValidateRegistryNamespace validates a registry namespace, as a trust
// policy lists one a provider publishes under (SPEC.md §9): 1 to 200 bytes of ASCII letters,
// digits, '.' and '-', with a dot, neither beginning nor ending with '.'
// or '-', and no empty label ("com..acme").
func ValidateRegistryNamespace(ns string) error {
	switch {
	case ns == "":
		return errors.New("empty registry namespace")
	case len(ns) > 200:
		return fmt.Errorf("registry namespace %.32q... is longer than 200 bytes", ns)
	}
	for i := 0; i < len(ns); i++ {
		if c := ns[i]; !isNamespaceByte(c) {
			if c == '/' {
				return fmt.Errorf("registry namespace %q holds '/': give the namespace (io.github.acme), not a server name (io.github.acme/weather)", ns)
			}
			return fmt.Errorf("registry namespace %q holds %q: only ASCII letters, digits, '.' and '-' are allowed", ns, c)
		}
	}
	switch {
	case !strings.Contains(ns, "."):
		return fmt.Errorf("registry namespace %q has no dot: it is a reversed domain name (com.acme) or io.github.OWNER", ns)
	case strings.ContainsAny(ns[:1], ".-") || strings.ContainsAny(ns[len(ns)-1:], ".-"):
		return fmt.Errorf("registry namespace %q begins or ends with '.' or '-'", ns)
	case strings.Contains(ns, ".."):
		return fmt.Errorf("registry namespace %q has an empty label", ns)
	}
	return nil
}

func isNamespaceByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-'
}

// RegistryNamespace returns the namespace of a registry name
// (io.github.acme of io.github.acme/weather), "" when it has none.
func RegistryNamespace(name string) string {
	ns, _, ok := strings.Cut(name, "/")
	if !ok {
		return ""
	}
	return ns
}

// GitHubOwner returns OWNER of a GitHub account's namespace
// io.github.OWNER (the prefix compared without regard to case, as the
// domain name OWNER.github.io it reverses), and whether ns is one.
func GitHubOwner(ns string) (string, bool) {
	if len(ns) <= len(GitHubNamespacePrefix) || !asciiEqualFold(ns[:len(GitHubNamespacePrefix)], GitHubNamespacePrefix) {
		return "", false
	}
	return ns[len(GitHubNamespacePrefix):], true
}

// SameRegistryNamespace reports whether a and b are one namespace: equal
// exactly, or GitHub namespaces of one owner (io.github.Acme is
// io.github.acme: GitHub compares account names without regard to case).
func SameRegistryNamespace(a, b string) bool {
	if a == b {
		return true
	}
	oa, ga := GitHubOwner(a)
	ob, gb := GitHubOwner(b)
	return ga && gb && asciiEqualFold(oa, ob)
}

// SameRegistryName reports whether two registry names name one server:
// the same namespace ([SameRegistryNamespace]) and exactly the same name
// in it.
func SameRegistryName(a, b string) bool {
	nsA, restA, okA := strings.Cut(a, "/")
	nsB, restB, okB := strings.Cut(b, "/")
	if !okA || !okB {
		return a == b
	}
	return restA == restB && SameRegistryNamespace(nsA, nsB)
}

// asciiEqualFold is strings.EqualFold for ASCII letters only: no other
// character folds (the Kelvin sign is not a k).
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// GitHubIdentityOf reports whether a keyless signer's certificate identity
// is a workflow of GitHub account owner: it begins with
// https://github.com/OWNER/, the owner compared without regard to case.
func GitHubIdentityOf(identity, owner string) bool {
	const prefix = "https://github.com/"
	rest, ok := strings.CutPrefix(identity, prefix)
	if !ok {
		return false
	}
	got, _, ok := strings.Cut(rest, "/")
	return ok && got != "" && asciiEqualFold(got, owner)
}
