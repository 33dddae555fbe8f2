package verify

import (
	"fmt"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/trust"
)

// checkRegistry adds the findings of RegistryFindings and reports whether
// verification goes on (none).
func checkRegistry(r *Result, st *etdi.Statement, p *trust.Policy, name string, signer *SignerIdentity, claims string) bool {
	fs := RegistryFindings(st, p, name, signer, claims)
	for _, f := range fs {
		r.add(f)
	}
	return len(fs) == 0
}

// RegistryFindings holds a statement to the MCP registry name it is
// checked for (SPEC.md §4.2): name, the registry entry's, or when it is
// "" the statement's own server.registryName. The statement's registry
// name must be name; the claimed provider's registry namespaces, when
// the trust policy lists them, must cover it; and a keyless signer
// (signer, as verification established it) of a bundle for a GitHub
// namespace io.github.OWNER must be a workflow of OWNER. Each failure is
// an impersonation. None applies when there is no name at all. claims
// names the tools, for messages ("" for the statement's own).
func RegistryFindings(st *etdi.Statement, p *trust.Policy, name string, signer *SignerIdentity, claims string) []finding.Finding {
	own := st.Server.RegistryName
	if name == "" {
		name = own
	}
	if name == "" {
		return nil
	}
	if claims == "" {
		claims = claimedTools(st)
	}
	imp := func(format string, a ...any) []finding.Finding {
		return []finding.Finding{{Kind: finding.Impersonation, Severity: finding.Error,
			Message: fmt.Sprintf("bundle of %s/%s (%s): ", st.Provider.ID, st.Server.Name, claims) + fmt.Sprintf(format, a...)}}
	}
	if err := etdi.ValidateRegistryName(name); err != nil {
		return imp("it is checked for a registry name that covers nothing: %v", err)
	}
	if own != "" && !etdi.SameRegistryName(own, name) {
		return imp("it was made for registry entry %q and is checked for registry entry %q", own, name)
	}
	ns := etdi.RegistryNamespace(name)
	if prov := p.Provider(st.Provider.ID); prov != nil && !prov.CoversRegistryName(name) {
		return imp("registry name %q is in namespace %q, and provider %q publishes only under %s",
			name, ns, st.Provider.ID, strings.Join(prov.RegistryNamespaces, ", "))
	}
	owner, github := etdi.GitHubOwner(ns)
	if !github || signer == nil || signer.Sigstore == nil {
		return nil
	}
	ks := signer.Sigstore
	switch {
	case ks.Issuer != trust.GitHubIssuer && !strings.HasPrefix(ks.Issuer, trust.GitHubIssuer+"/"):
		return imp("registry name %q is in GitHub namespace %q, and its keyless signer's issuer %q is not GitHub Actions'", name, ns, ks.Issuer)
	case !etdi.GitHubIdentityOf(ks.Identity, owner):
		return imp("registry name %q is in GitHub namespace %q, and it is signed by %q, which is not a workflow of https://github.com/%s/", name, ns, ks.Identity, owner)
	case ks.Repository != "" && !etdi.GitHubIdentityOf(ks.Repository+"/", owner):
		return imp("registry name %q is in GitHub namespace %q, and its keyless signature was made for repository %q, which is not https://github.com/%s/'s", name, ns, ks.Repository, owner)
	}
	return nil
}
