// Package idp is the OAuth 2.0 / OpenID Connect side of etdi (SPEC.md
// §13): a provider gets a JWT from its identity provider with the client
// credentials grant, bound to the exact statement it publishes through an
// RFC 9396 authorization_details entry; a client verifies that token with
// the issuer's keys (OIDC discovery and JWKS, or a pinned JWKS), a fixed
// list of asymmetric algorithms, the policy's issuer, audience and
// subjects, the binding and the scopes, and optionally RFC 7662
// introspection and deny-lists.
package idp

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/etdi-dev/etdi"
)

// DetailType is the authorization_details type etdi requests and accepts.
const DetailType = "etdi_manifest"

// Detail is an RFC 9396 authorization_details entry binding a token to one
// statement.
type Detail struct {
	Type string `json:"type"`
	// Digest is "sha256:" and the hex SHA-256 of the exact DSSE payload.
	Digest   string       `json:"digest"`
	Provider string       `json:"provider"`
	Server   string       `json:"server"`
	Tools    []ToolDetail `json:"tools,omitempty"`
}

// ToolDetail names one tool version and the scopes it declares.
type ToolDetail struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	Scopes  []string `json:"scopes"`
}

// PayloadDigest returns the binding digest of a DSSE payload.
func PayloadDigest(payload []byte) string {
	sum := sha256.Sum256(payload)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// DetailFor returns the authorization detail for statement st, whose
// serialized payload is payload.
func DetailFor(st *etdi.Statement, payload []byte) Detail {
	d := Detail{Type: DetailType, Digest: PayloadDigest(payload), Provider: st.Provider.ID, Server: st.Server.Name}
	for _, t := range st.Tools {
		td := ToolDetail{Name: t.Name, Version: t.Version, Scopes: []string{}}
		for _, p := range t.Permissions {
			td.Scopes = append(td.Scopes, p.Scope)
		}
		d.Tools = append(d.Tools, td)
	}
	return d
}

// Scopes returns every permission scope the statement declares, once each.
func Scopes(st *etdi.Statement) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range st.Tools {
		for _, p := range t.Permissions {
			if !seen[p.Scope] {
				seen[p.Scope] = true
				out = append(out, p.Scope)
			}
		}
	}
	return out
}

// bindingFor returns the etdi_manifest entry of an authorization_details
// claim whose digest is want, or nil and the digests of the other
// etdi_manifest entries.
func bindingFor(claim any, want string) (map[string]any, []string) {
	list, _ := claim.([]any)
	var others []string
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok || m["type"] != DetailType {
			continue
		}
		if dg, _ := m["digest"].(string); dg != want {
			others = append(others, dg)
			continue
		}
		return m, nil
	}
	return nil, others
}

// checkBinding finds the etdi_manifest entry of the token's
// authorization_details and checks it against the payload and statement.
func checkBinding(claim any, payload []byte, st *etdi.Statement) error {
	if _, ok := claim.([]any); !ok {
		return fmt.Errorf("the token has no authorization_details binding it to a statement")
	}
	want := PayloadDigest(payload)
	m, others := bindingFor(claim, want)
	if m == nil {
		if len(others) > 0 {
			return fmt.Errorf("the token is bound to another statement (digest %s, not %s)", others[0], want)
		}
		return fmt.Errorf("the token's authorization_details hold no %s entry", DetailType)
	}
	if m["provider"] != st.Provider.ID || m["server"] != st.Server.Name {
		return fmt.Errorf("the token's binding names provider %v, server %v; the statement is %q, %q", m["provider"], m["server"], st.Provider.ID, st.Server.Name)
	}
	if tools, ok := m["tools"].([]any); ok {
		return checkTools(tools, st)
	}
	return nil
}

func checkTools(tools []any, st *etdi.Statement) error {
	if len(tools) != len(st.Tools) {
		return fmt.Errorf("the token's binding lists %d tools; the statement has %d", len(tools), len(st.Tools))
	}
	for _, e := range tools {
		m, _ := e.(map[string]any)
		name, _ := m["name"].(string)
		version, _ := m["version"].(string)
		t := st.Tool(name)
		if t == nil || t.Version != version {
			return fmt.Errorf("the token's binding names %s@%s, which the statement does not", name, version)
		}
	}
	return nil
}

// CheckUnverifiedBinding reads a token's claims WITHOUT verifying its
// signature and checks that it carries the binding for payload. Signing
// uses it to fail early on a token meant for another statement; it proves
// nothing about the token.
func CheckUnverifiedBinding(token string, payload []byte) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return fmt.Errorf("not a JWS compact token")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return fmt.Errorf("token claims: %v", err)
	}
	var claims map[string]any
	if err := json.Unmarshal(b, &claims); err != nil {
		return fmt.Errorf("token claims: %v", err)
	}
	want := PayloadDigest(payload)
	if m, _ := bindingFor(claims["authorization_details"], want); m != nil {
		return nil
	}
	return fmt.Errorf("no %s authorization detail with digest %s", DetailType, want)
}
