package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/verify"
)

// stillRefused adds to refused every tool asked about that still has an
// error finding after Approve: a safety net, so that pin approve never
// exits 0 while a tool it was asked about would fail etdi check. Asked
// about are the tools named with --tool or, without --tool, every tool of
// the observation.
func stillRefused(s *pin.Store, o *pin.Observation, named []string, refused []pin.Refusal) ([]pin.Refusal, error) {
	c, err := s.Compare(o)
	if err != nil {
		return refused, err
	}
	asked := map[string]bool{}
	for _, n := range named {
		asked[n] = true
	}
	listed := map[string]bool{}
	for _, r := range refused {
		listed[r.Tool] = true
	}
	for _, f := range c.Findings {
		if f.Severity != verify.Error || f.Tool == "" || listed[f.Tool] || (len(asked) > 0 && !asked[f.Tool]) {
			continue
		}
		listed[f.Tool] = true
		refused = append(refused, pin.Refusal{Tool: f.Tool, Kind: string(f.Kind), Reason: "still needs approval: " + f.Message})
	}
	return refused, nil
}

// serverRefusals returns the error findings about the whole server (a
// replayed older bundle) as refusals: pin approve approves nothing then,
// and exits with their code rather than as an operational error. Changed
// instructions are not among them: pin approve refuses them alone.
func serverRefusals(c *pin.Comparison) []pin.Refusal {
	var out []pin.Refusal
	for _, f := range c.Findings {
		if f.Tool == "" && f.Severity == verify.Error && f.Kind != verify.InstructionsChanged {
			out = append(out, pin.Refusal{Kind: string(f.Kind), Reason: f.Message + "; not approving anything"})
		}
	}
	return out
}

// approveExit is the exit code of pin approve: 0 when nothing asked about
// was refused, else the most severe code of the refused findings (§11
// order); a refusal of a kind without a code is 13, approval required.
func approveExit(refused []pin.Refusal) int {
	code := exitOK
	for _, r := range refused {
		k := verify.Kind(r.Kind)
		c := k.ExitCode()
		if !k.Known() || c == exitOK {
			c = exitApproval
		}
		code = worse(code, c)
	}
	return code
}

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
