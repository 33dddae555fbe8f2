package pin

// Scope says what a revocation withdraws: "key" (every tool the key
// signed), "version" (one version of a tool), "definition" (one approved
// definition of an item) or "tool" (every version).
func (r *Revocation) Scope() string {
	switch {
	case r.KeyID != "":
		return "key"
	case r.Digest != "":
		return "definition"
	case r.Version != "":
		return "version"
	}
	return "tool"
}

// Target names what r withdraws: "key <id>", "SERVER/TOOL@VERSION" or
// "SERVER/TOOL".
func (r *Revocation) Target() string {
	if r.KeyID != "" {
		return "key " + r.KeyID
	}
	if r.Digest != "" {
		return r.Server + "/" + ItemRef(r.Item, r.Tool) + " " + r.Digest
	}
	t := r.Server + "/" + r.Tool
	if r.Version != "" {
		t += "@" + r.Version
	}
	return t
}

// About reports whether r concerns the tool of p: its server and name (in
// any version), or the provider key that signed it.
func (r *Revocation) About(p *Pin) bool {
	if r.KeyID != "" {
		return r.KeyID == SignerKeyID(p.Signer)
	}
	return r.Server == p.Server && r.Tool == p.Tool && r.Item == p.Item
}

// Revokes reports whether r withdraws p as pinned: the whole tool, the
// pinned version, or the key that signed it. A revocation of another
// version of the tool is About p but does not revoke it.
func (r *Revocation) Revokes(p *Pin) bool {
	if r.Digest != "" {
		return r.About(p) && r.Digest == p.Digest // a revoked variant leaves its pin
	}
	return r.About(p) && (r.KeyID != "" || r.Version == "" || r.Version == p.Version)
}

// SignerKeyIDs returns the provider key ids the pins were signed with
// (the key of "key" and "key+idp" signers), each once, in the order of
// [Store.List].
func (s *Store) SignerKeyIDs() ([]string, error) {
	pins, err := s.List()
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for i := range pins {
		if id := SignerKeyID(pins[i].Signer); id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}
