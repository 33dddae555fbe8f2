package main

import (
	"time"

	"github.com/etdi-dev/etdi/pin"
)

// revocationView is one revocation as pin list and pin show print it.
type revocationView struct {
	// Scope is "tool", "version", "definition" (one approved definition,
	// by its digest) or "key".
	Scope   string    `json:"scope"`
	Server  string    `json:"server,omitempty"`
	Item    string    `json:"item,omitempty"`
	Tool    string    `json:"tool,omitempty"`
	Version string    `json:"version,omitempty"`
	Digest  string    `json:"digest,omitempty"`
	KeyID   string    `json:"keyId,omitempty"`
	By      string    `json:"by"`
	At      time.Time `json:"at"`
	Reason  string    `json:"reason,omitempty"`
	// RevokesPin is true when the revocation withdraws the pin as pinned;
	// false for a revocation of another version of the tool.
	RevokesPin bool `json:"revokesPin"`
}

func viewRevocation(r *pin.Revocation, p *pin.Pin) revocationView {
	return revocationView{Scope: r.Scope(), Server: r.Server, Item: r.Item, Tool: r.Tool, Version: r.Version, Digest: r.Digest, KeyID: r.KeyID,
		By: r.By, At: r.At, Reason: r.Reason, RevokesPin: p != nil && r.Revokes(p)}
}

// line is the text of a revocation for a person; say escapes it.
func (v revocationView) line() string {
	target := "key " + v.KeyID
	switch v.Scope {
	case "tool":
		target = v.Server + "/" + v.Tool + " (every version)"
	case "version":
		target = v.Server + "/" + v.Tool + "@" + v.Version
	case "definition":
		target = v.Server + "/" + pin.ItemRef(v.Item, v.Tool) + " definition " + v.Digest
	}
	s := "revoked " + target + " by " + v.By + " at " + v.At.Format(time.RFC3339)
	if v.Reason != "" {
		s += ": " + v.Reason
	} else {
		s += " (no reason given)"
	}
	return s
}

// revocationsAbout returns the revocations about p, and whether one of
// them revokes p as pinned; it marks those it returns in used (if not
// nil).
func revocationsAbout(revs []pin.Revocation, p *pin.Pin, used []bool) ([]revocationView, bool) {
	out := []revocationView{}
	revoked := false
	for i := range revs {
		if !revs[i].About(p) {
			continue
		}
		if used != nil {
			used[i] = true
		}
		v := viewRevocation(&revs[i], p)
		revoked = revoked || v.RevokesPin
		out = append(out, v)
	}
	return out, revoked
}
