package trust

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MaxRegistryNamespaces bounds the registry namespaces a provider lists.
const MaxRegistryNamespaces = 64

// GitHubNamespacePrefix begins the MCP registry namespaces of GitHub
// accounts: io.github.OWNER, which the registry grants to OWNER's GitHub
// identity (SPEC.md §4.2).
const GitHubNamespacePrefix = "io.github."

// CheckRegistryNamespace validates a registry namespace a provider is
// trusted to publish under (SPEC.md §9): 1 to 200 bytes of ASCII letters,
// digits, '.' and '-', with a dot, neither beginning nor ending with '.'
// or '-', and no empty label ("com..acme").
func CheckRegistryNamespace(ns string) error {
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

// RegistryNamespaceOf returns the namespace of a registry name
// (io.github.acme of io.github.acme/weather), "" when it has none.
func RegistryNamespaceOf(name string) string {
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

// CoversRegistryName reports whether the provider may publish the server
// of registry name: it lists no namespaces (the policy says nothing of
// them), or one of them is the name's namespace exactly
// ([SameRegistryNamespace]: com.acme does not cover com.acme.evil/x).
func (p *Provider) CoversRegistryName(name string) bool {
	if len(p.RegistryNamespaces) == 0 {
		return true
	}
	ns := RegistryNamespaceOf(name)
	return ns != "" && slices.ContainsFunc(p.RegistryNamespaces, func(x string) bool { return SameRegistryNamespace(x, ns) })
}

// AddRegistryNamespaces adds registry namespaces to provider id, which
// the policy must already trust by a key, a keyless signer or an
// identity provider (a provider of namespaces alone could sign nothing).
// It returns the namespaces that were not listed yet.
func (p *Policy) AddRegistryNamespaces(id string, namespaces ...string) (added []string, err error) {
	for _, ns := range namespaces {
		if err := CheckRegistryNamespace(ns); err != nil {
			return nil, err
		}
	}
	prov := p.Provider(id)
	if prov == nil {
		return nil, fmt.Errorf("provider %q is not in the policy: trust its key, keyless signer or identity provider in the same command (etdi trust add --provider %s --key FILE --registry-namespace NS)", id, id)
	}
	list := slices.Clone(prov.RegistryNamespaces)
	for _, ns := range namespaces {
		if slices.ContainsFunc(list, func(x string) bool { return SameRegistryNamespace(x, ns) }) {
			continue
		}
		list = append(list, ns)
		added = append(added, ns)
	}
	if len(list) > MaxRegistryNamespaces {
		return nil, fmt.Errorf("provider %q would list %d registry namespaces, more than %d", id, len(list), MaxRegistryNamespaces)
	}
	prov.RegistryNamespaces = list
	return added, nil
}
