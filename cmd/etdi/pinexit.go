package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/pin"
)

// exitWith ends a command that has already reported why with code.
func exitWith(code int) error {
	if code == exitOK {
		return nil
	}
	return &exitCodeError{code}
}

// resolveRevokeKey turns the --key of pin revoke into a full key id. A
// full id is taken as given (a key may be revoked before any pin uses it);
// a prefix must name exactly one key among those the pins were signed
// with and those of the trust policy. The policy is read when given with
// --trust, or at its default place when a file is there.
func resolveRevokeKey(s *pin.Store, ref, policy string, explicit bool) (string, error) {
	h := strings.ToLower(strings.TrimPrefix(ref, "sha256:"))
	if len(h) == 64 {
		id := "sha256:" + h
		if _, err := etdi.ParseDigest(id); err != nil {
			return "", fmt.Errorf("key id %q: want sha256: and 64 hex digits, or a prefix of at least %d of them", ref, keys.MinIDPrefix)
		}
		return id, nil
	}
	known, err := s.SignerKeyIDs()
	if err != nil {
		return "", err
	}
	if _, statErr := os.Stat(policy); explicit || statErr == nil {
		p, err := loadPolicy(policy)
		if err != nil {
			return "", err
		}
		for _, prov := range p.Providers {
			for _, k := range prov.Keys {
				known = append(known, k.ID)
			}
		}
	}
	id, err := keys.ResolveID(ref, known)
	if err != nil {
		return "", &hintError{err, "a prefix names a key the pins were signed with or the trust policy (--trust) lists; give the full sha256: id to revoke a key not seen yet"}
	}
	return id, nil
}
