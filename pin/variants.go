package pin

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/termtext"
)

// Approved variants (docs/storage.md#approved-variants). An item may have several approved
// definitions at once: the same server configured with other arguments,
// in another host or time zone, describes the same tool another way. A
// definition that equals none of them is a finding, as a change of the
// approved definition always was; approving it adds it beside the others
// (a record with Variant set) instead of replacing them. Any approval
// that is not of a changed definition under the same version and signer
// (a new tool, a new version, a downgrade, a new signer) replaces every
// variant: variants never span versions or signers.
//
// The history decides which variants are approved: replaying the
// approval records of an item in order, an approval without Variant
// leaves only itself, one with Variant adds itself and drops an earlier
// one of the same digest, and a revocation with a digest drops the
// variant of that digest. The pin holds exactly the records left, in
// that order, the latest as the pin itself and the others as its
// Variants; any other set is refused like any pin the history does not
// justify.

// liveApproval is an approval record that still approves a definition.
type liveApproval struct {
	index  int64
	digest string
}

// approved applies an approval record to the live approvals of its item.
func approved(live []liveApproval, index int64, digest string, variant bool) []liveApproval {
	if !variant {
		return []liveApproval{{index, digest}}
	}
	out := dropped(live, digest)
	return append(out, liveApproval{index, digest})
}

// dropped returns live without the approval of digest.
func dropped(live []liveApproval, digest string) []liveApproval {
	out := make([]liveApproval, 0, len(live)+1)
	for _, l := range live {
		if l.digest != digest {
			out = append(out, l)
		}
	}
	return out
}

// variantsDisagree says how the records that approve the variants of p
// (All, in order) differ from the live approvals the history leaves, or
// "".
func variantsDisagree(p *Pin, live []liveApproval) string {
	all := p.All()
	if len(live) == 0 {
		return "the history holds no record of it"
	}
	if all[len(all)-1].Record != live[len(live)-1].index {
		return fmt.Sprintf("history record %d replaced it (rolled back)", live[len(live)-1].index)
	}
	if len(all) != len(live) {
		return fmt.Sprintf("it holds %d approved definitions, the history %d", len(all), len(live))
	}
	for i := range all {
		if all[i].Record != live[i].index {
			return fmt.Sprintf("its variant bound to record %d is not approved by the history (it approves record %d)", all[i].Record, live[i].index)
		}
	}
	return ""
}

// variantShape says how the variants of p are malformed, or "": each is
// a pin of the same item without variants of its own.
func variantShape(p *Pin) string {
	if len(p.Variants) >= MaxVariants {
		return fmt.Sprintf("it holds %d approved definitions, more than %d", len(p.Variants)+1, MaxVariants)
	}
	for i := range p.Variants {
		v := p.Variants[i].pin()
		if v.Server != p.Server || v.Item != p.Item || v.Tool != p.Tool {
			return "a variant is the pin of " + v.Ref()
		}
	}
	return ""
}

// matches reports whether t under o is exactly the approved definition
// p: the same digest, signer and permissions, a version of the same
// precedence, and the same server artifact or endpoint when p recorded
// one.
func matches(p *Pin, o *Observation, t *Observed) bool {
	if p.Digest != t.Digest.String() || p.Signer != t.Signer {
		return false
	}
	if p.Version != t.Version {
		if p.Version == "" || t.Version == "" {
			return false
		}
		c, err := etdi.CompareVersions(t.Version, p.Version)
		if err != nil || c != 0 {
			return false
		}
	}
	if added, removed := PermissionDiff(p.Permissions, t.Permissions); len(added)+len(removed) > 0 {
		return false
	}
	return !servedChanged(p, o)
}

// matchingVariant returns the approved definition of p that t matches
// exactly, or nil.
func matchingVariant(p *Pin, o *Observation, t *Observed) *Pin {
	for _, v := range p.All() {
		if matches(&v, o, t) {
			return &v
		}
	}
	return nil
}

// closestVariant is the approved definition of p that t is compared with
// when it matches none: the one of the same digest (its permissions or
// what serves it changed), else the latest.
func closestVariant(p *Pin, t *Observed) *Pin {
	all := p.All()
	for i := range all {
		if all[i].Digest == t.Digest.String() {
			return &all[i]
		}
	}
	return &all[len(all)-1]
}

// variantHint is what a finding of a changed definition adds: the
// command that approves it as one more variant, and how many there are.
func variantHint(p *Pin, item, name string) string {
	ref := termtext.ShellQuote(ItemRef(item, name))
	n := len(p.Variants) + 1
	if n >= MaxVariants {
		return fmt.Sprintf("; %d definitions are approved already, the most etdi keeps: revoke one first (etdi pin revoke %s --digest DIGEST; etdi pin list shows them)",
			n, termtext.ShellQuote(p.Server+"/"+ItemRef(item, name)))
	}
	what := "the approved definition"
	if n > 1 {
		what = fmt.Sprintf("the %d approved definitions", n)
	}
	return fmt.Sprintf("; if it is the same server configured another way, approve it as another variant beside %s: etdi pin approve --tool %s (with the inputs of this check)", what, ref)
}

// digestsOf lists the digests of p's approved definitions.
func digestsOf(p *Pin) string {
	var ds []string
	for _, v := range p.All() {
		ds = append(ds, v.Digest)
	}
	return strings.Join(ds, ", ")
}

// ArtifactIdentity returns the artifact an observation's Served names
// when it identifies one exactly enough for approvals to be shared
// across configuration names (docs/storage.md#one-artifact-under-several-configuration-names), and whether it does: "npm
// NAME@VERSION INTEGRITY", "pypi NAME@VERSION SHA256", "oci
// NAME[@TAG] MANIFEST-DIGEST", "mcpb NAME@VERSION SHA256" or "file
// BASENAME SHA256", with a digest
// always. An endpoint (a URL), an unresolved launch and anything else
// identify nothing: a bare command name never does.
func ArtifactIdentity(served string) (string, bool) {
	typ, rest, ok := strings.Cut(served, " ")
	if !ok {
		return "", false
	}
	name, digest, ok := strings.Cut(rest, " ")
	if !ok || name == "" || digest == "" || strings.ContainsAny(digest, " \t") {
		return "", false
	}
	i := strings.LastIndexByte(name, '@') // @scope/name@version
	hasVersion := i > 0 && i < len(name)-1
	switch typ {
	case "npm", "pypi", "mcpb":
		if !hasVersion {
			return "", false
		}
	case "oci", "file":
	default:
		return "", false
	}
	for _, r := range served {
		if !unicode.IsPrint(r) { // controls (C0, DEL, C1), bidi and other format characters
			return "", false
		}
	}
	return served, true
}

// shareCache remembers, for one comparison, which other servers' pins
// were checked against the history.
type shareCache struct {
	checked map[string]error
	servers []string // unsigned server keys, read once
	read    bool
}

// sharedApproval returns the other unsigned server whose approval covers
// t (docs/storage.md#one-artifact-under-several-configuration-names), or "": o is an unsigned server whose launch resolved
// to an artifact (ArtifactIdentity), and the other server holds an
// approved definition of the same item that t matches exactly and that
// was approved served by that very artifact; the other server's pin is
// checked against the history and must not be revoked there. Signed
// servers are keyed by provider and never share; nothing is shared when
// the artifact is unknown, or known only from what a project's lockfile
// claims (Observation.ServedVerified): a repository can name any package
// and integrity there, whatever its node_modules holds.
func sharedApproval(tx *kvTx, o *Observation, t *Observed, sc *shareCache) (string, error) {
	if !strings.HasPrefix(o.Server, "unsigned:") || t.Signer != Unsigned || !o.ServedVerified {
		return "", nil
	}
	id, ok := ArtifactIdentity(o.Served)
	if !ok {
		return "", nil
	}
	if !sc.read {
		sc.read = true
		prefix := []byte("unsigned:")
		c := tx.Bucket(bServers).Cursor()
		for k, _ := c.Seek(prefix); k != nil && strings.HasPrefix(string(k), "unsigned:"); k, _ = c.Next() {
			if string(k) != o.Server {
				sc.servers = append(sc.servers, string(k))
			}
		}
	}
	for _, srv := range sc.servers {
		p, err := readItem(tx, srv, t.Item, t.Name)
		if err != nil {
			return "", err
		}
		if p == nil {
			continue
		}
		v := matchingVariant(p, o, t)
		if v == nil || !sameServed(v, o, id) || v.Signer != Unsigned {
			continue
		}
		if sc.checked == nil {
			sc.checked = map[string]error{}
		}
		err, done := sc.checked[srv]
		if !done {
			err = checkLatest(tx, srv)
			sc.checked[srv] = err
		}
		if err != nil {
			return "", err
		}
		r, err := revokedBy(tx, srv, t)
		if err != nil {
			return "", err
		}
		if r != nil {
			continue
		}
		return srv, nil
	}
	return "", nil
}

// sameServed reports whether the approved definition v was served by
// the artifact id that serves o now: the same identity, and for a file
// artifact (named by its base name) the same file, found at the same path
// (Pin.ServedAt): a copy of a file elsewhere (a launcher script that runs
// what sits beside it) is not the file approved.
func sameServed(v *Pin, o *Observation, id string) bool {
	if v.Served != id {
		return false
	}
	return !strings.HasPrefix(id, "file ") || (v.ServedAt != "" && v.ServedAt == o.ServedAt)
}

// ServedAccepts reports whether what serves a server now ([Observation]
// Served, "" when unknown) is what served one of p's approved definitions
// at approval, or one of them was approved without recording it: a
// launch is refused before it starts only when none was approved served
// by it.
func (p *Pin) ServedAccepts(now string) bool {
	for _, v := range p.All() {
		if v.Served == "" || v.Served == now {
			return true
		}
	}
	return false
}

// Closest is the approved definition a definition of digest is shown
// against: the one of that digest when it is approved, else the latest.
func (p *Pin) Closest(digest string) Pin {
	all := p.All()
	for i := range all {
		if all[i].Digest == digest {
			return all[i]
		}
	}
	return all[len(all)-1]
}
