package trust

import (
	"fmt"
	"slices"

	"github.com/etdi-dev/etdi"
)

// MaxRegistryNamespaces bounds the registry namespaces a provider lists.
const MaxRegistryNamespaces = 64

// CoversRegistryName reports whether the provider may publish the server
// of registry name: it lists no namespaces (the policy says nothing of
// them), or one of them is the name's namespace exactly
// ([etdi.SameRegistryNamespace]: com.acme does not cover com.acme.evil/x).
func (p *Provider) CoversRegistryName(name string) bool {
	if len(p.RegistryNamespaces) == 0 {
		return true
	}
	ns := etdi.RegistryNamespace(name)
	return ns != "" && slices.ContainsFunc(p.RegistryNamespaces, func(x string) bool { return etdi.SameRegistryNamespace(x, ns) })
}

// AddRegistryNamespaces adds registry namespaces to provider id, which
// the policy must already trust by a key, a keyless signer or an
// identity provider (a provider of namespaces alone could sign nothing).
// It returns the namespaces that were not listed yet.
func (p *Policy) AddRegistryNamespaces(id string, namespaces ...string) (added []string, err error) {
	for _, ns := range namespaces {
		if err := etdi.ValidateRegistryNamespace(ns); err != nil {
			return nil, err
		}
	}
	prov := p.Provider(id)
	if prov == nil {
		return nil, fmt.Errorf("provider %q is not in the policy: trust its key, keyless signer or identity provider in the same command (etdi trust add --provider %s --key FILE --registry-namespace NS)", id, id)
	}
	list := slices.Clone(prov.RegistryNamespaces)
	for _, ns := range namespaces {
		if slices.ContainsFunc(list, func(x string) bool { return etdi.SameRegistryNamespace(x, ns) }) {
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
