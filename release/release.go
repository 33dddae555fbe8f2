package release

import (
	"fmt"
	"slices"
	"strings"

	"github.com/etdi-dev/etdi"
)

// Bump is how much a release raises a tool's version: the component of
// MAJOR.MINOR.PATCH that grows (docs/provider.md#the-bump-a-change-calls-for).
type Bump int

// The bumps, smallest first.
const (
	BumpNone Bump = iota
	BumpPatch
	BumpMinor
	BumpMajor
)

var bumpNames = [...]string{"none", "patch", "minor", "major"}

func (b Bump) String() string {
	if b < BumpNone || b > BumpMajor {
		return fmt.Sprintf("Bump(%d)", int(b))
	}
	return bumpNames[b]
}

// MarshalText writes the bump as its name: "none", "patch", "minor" or
// "major".
func (b Bump) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// BumpOf returns the component of MAJOR.MINOR.PATCH that grows from old to
// cur: [BumpNone] when none does (the same version, a lower one, or one
// that differs only in its pre-release or build).
func BumpOf(old, cur etdi.Version) Bump {
	switch {
	case cur.Major != old.Major:
		if cur.Major > old.Major {
			return BumpMajor
		}
	case cur.Minor != old.Minor:
		if cur.Minor > old.Minor {
			return BumpMinor
		}
	case cur.Patch > old.Patch:
		return BumpPatch
	}
	return BumpNone
}

// bumped returns the least version that raises v by b: the component b
// names plus one, the ones after it 0. After a pre-release any higher
// version will do (SemVer 2.0.0 §9: a pre-release promises no
// compatibility), and the least is v's own release, MAJOR.MINOR.PATCH.
// For BumpNone it returns v.
func bumped(v etdi.Version, b Bump) string {
	switch {
	case b == BumpNone:
		return v.String()
	case len(v.Pre) > 0:
		return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	case b == BumpMajor:
		return fmt.Sprintf("%d.0.0", v.Major+1)
	case b == BumpMinor:
		return fmt.Sprintf("%d.%d.0", v.Major, v.Minor+1)
	}
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch+1)
}

// satisfies reports whether v raises old by at least b: cur is higher
// than old, and either old is a pre-release or BumpOf(old, v) >= b.
func satisfies(v, old etdi.Version, b Bump) bool {
	if v.Compare(old) <= 0 {
		return false
	}
	return len(old.Pre) > 0 || BumpOf(old, v) >= b
}

// ScopeDiff compares two permission lists by scope: the scopes only cur
// declares, the scopes only old declares, and the scopes both declare
// with another description.
func ScopeDiff(old, cur []etdi.Permission) (added, removed, described []string) {
	find := func(ps []etdi.Permission, scope string) (etdi.Permission, bool) {
		for _, p := range ps {
			if p.Scope == scope {
				return p, true
			}
		}
		return etdi.Permission{}, false
	}
	for _, p := range cur {
		if o, ok := find(old, p.Scope); !ok {
			added = append(added, p.Scope)
		} else if o.Description != p.Description {
			described = append(described, p.Scope)
		}
	}
	for _, p := range old {
		if _, ok := find(cur, p.Scope); !ok {
			removed = append(removed, p.Scope)
		}
	}
	return added, removed, described
}

// RequiredBump returns the version bump a change of one tool calls for
// (docs/provider.md#the-bump-a-change-calls-for), from its previous version old: major when the tool
// declares a scope it did not (it may now do more than clients consented
// to), minor when it drops one, patch for any other change (a
// permission's description, the definition, what serves it), [BumpNone]
// when nothing changed. While old's major version is 0 (SemVer 2.0.0 §4,
// initial development) a minor bump does for a major.
func RequiredBump(old etdi.Version, oldPerms, curPerms []etdi.Permission, definitionChanged, servedChanged bool) Bump {
	added, removed, described := ScopeDiff(oldPerms, curPerms)
	b := BumpNone
	switch {
	case len(added) > 0:
		b = BumpMajor
	case len(removed) > 0:
		b = BumpMinor
	case len(described) > 0 || definitionChanged || servedChanged:
		b = BumpPatch
	}
	if b == BumpMajor && old.Major == 0 {
		b = BumpMinor
	}
	return b
}

// Status says how one tool changes from a previous release to the
// next (docs/provider.md#a-release-against-the-previous-one).
type Status string

// The statuses. RugPull, Downgrade and Removed (unless the removal was
// meant) are refused; BumpTooSmall is signed with a warning.
const (
	StatusNew          Status = "new"            // not in the previous release
	StatusUnchanged    Status = "unchanged"      // the same version, definition, permissions and server
	StatusBumped       Status = "bumped"         // a higher version, raised as far as the changes call for
	StatusBumpTooSmall Status = "bump_too_small" // a higher version, raised less than the changes call for
	StatusRugPull      Status = "rug_pull"       // changed under the same version
	StatusDowngrade    Status = "downgrade"      // a lower version
	StatusRemoved      Status = "removed"        // in the previous release only
)

// Tool is one tool of a release compared with the previous one.
type Tool struct {
	Name            string `json:"name"`
	Status          Status `json:"status"`
	Refused         bool   `json:"refused"`
	PreviousVersion string `json:"previousVersion,omitempty"`
	Version         string `json:"version,omitempty"`
	// Fields are the top-level definition members that changed, then
	// "permissions" and "served" when those did.
	Fields []string `json:"fields,omitempty"`
	// Changes are the definition's changes (as Diff reports them) and,
	// when what serves the tools changed, one change of "/served".
	Changes            []etdi.Change     `json:"changes,omitempty"`
	PermissionsAdded   []etdi.Permission `json:"permissionsAdded,omitempty"`
	PermissionsRemoved []etdi.Permission `json:"permissionsRemoved,omitempty"`
	// Required is the bump the changes call for (RequiredBump), Made the
	// one the release makes (BumpOf), and Suggested the least version
	// that makes Required, when the release's version does not.
	Required  Bump   `json:"requiredBump"`
	Made      Bump   `json:"madeBump"`
	Suggested string `json:"suggestedVersion,omitempty"`
	// Message says what happened and what to do, in one sentence.
	Message string `json:"message"`
}

// Report is a release compared with the previous one of the same server
// (docs/provider.md#a-release-against-the-previous-one).
type Report struct {
	Provider         string `json:"provider"`
	Server           string `json:"server"`
	PreviousSequence uint64 `json:"previousSequence"`
	Sequence         uint64 `json:"sequence"`
	// SequenceRefused says the sequence does not increase; SequenceMessage
	// says so.
	SequenceRefused bool   `json:"sequenceRefused"`
	SequenceMessage string `json:"sequenceMessage,omitempty"`
	Tools           []Tool `json:"tools"`
}

// Refused reports whether the release must not be signed: a tool is
// refused, or the sequence does not increase.
func (r *Report) Refused() bool {
	if r.SequenceRefused {
		return true
	}
	for _, t := range r.Tools {
		if t.Refused {
			return true
		}
	}
	return false
}

// Compare compares the statement of a release, next, with the
// previous release's, prev, as a client that pinned prev would see next
// (docs/provider.md#a-release-against-the-previous-one). remove names the tools next leaves out on purpose: their
// removal is reported, not refused. It returns an error when prev and next
// are not releases of one server (provider id and server name), when
// remove names a tool that prev lacks or next keeps, or when a version is
// not a semantic version (never so in a parsed statement).
func Compare(prev, next *etdi.Statement, remove []string) (*Report, error) {
	if prev.Provider.ID != next.Provider.ID || prev.Server.Name != next.Server.Name {
		return nil, fmt.Errorf("the previous release is of provider %q, server %q, this one of provider %q, server %q: compare releases of one server",
			prev.Provider.ID, prev.Server.Name, next.Provider.ID, next.Server.Name)
	}
	for _, n := range remove {
		switch {
		case prev.Tool(n) == nil:
			return nil, fmt.Errorf("tool %q is to be removed, but the previous release has no such tool", n)
		case next.Tool(n) != nil:
			return nil, fmt.Errorf("tool %q is to be removed, but the release still has it", n)
		}
	}
	r := &Report{Provider: next.Provider.ID, Server: next.Server.Name, PreviousSequence: prev.Sequence, Sequence: next.Sequence, Tools: []Tool{}}
	if next.Sequence <= prev.Sequence {
		r.SequenceRefused = true
		r.SequenceMessage = fmt.Sprintf("sequence %d does not increase on the previous release's %d (it must increase with every bundle of a server, and clients refuse a lower one as a downgrade): give a sequence above %d",
			next.Sequence, prev.Sequence, prev.Sequence)
	}
	served := servedChange(&prev.Server, &next.Server)
	for i := range next.Tools {
		t, err := compareReleaseTool(prev.Tool(next.Tools[i].Name), &next.Tools[i], served)
		if err != nil {
			return nil, err
		}
		r.Tools = append(r.Tools, t)
	}
	for _, p := range prev.Tools {
		if next.Tool(p.Name) != nil {
			continue
		}
		t := Tool{Name: p.Name, Status: StatusRemoved, PreviousVersion: p.Version}
		if slices.Contains(remove, p.Name) {
			t.Message = fmt.Sprintf("removed on purpose: clients that pinned %s@%s will find it gone", p.Name, p.Version)
		} else {
			t.Refused = true
			t.Message = fmt.Sprintf("the previous release has %s@%s and this one does not: name it to be removed if that is meant", p.Name, p.Version)
		}
		r.Tools = append(r.Tools, t)
	}
	return r, nil
}

func compareReleaseTool(p, t *etdi.Tool, served *etdi.Change) (Tool, error) {
	rt := Tool{Name: t.Name, Status: StatusNew, Version: t.Version}
	if p == nil {
		rt.Message = "new in this release"
		return rt, nil
	}
	rt.PreviousVersion = p.Version
	pv, err := etdi.ParseVersion(p.Version)
	if err != nil {
		return rt, fmt.Errorf("the previous release's tool %q: %v", p.Name, err)
	}
	tv, err := etdi.ParseVersion(t.Version)
	if err != nil {
		return rt, fmt.Errorf("tool %q: %v", t.Name, err)
	}
	defChanged := p.Digest != t.Digest
	if defChanged {
		rt.Changes = etdi.Diff(p.Definition(), t.Definition())
		rt.Fields = etdi.ChangedFields(rt.Changes)
	}
	rt.PermissionsAdded, rt.PermissionsRemoved = etdi.PermissionDiff(p.Permissions, t.Permissions)
	if len(rt.PermissionsAdded)+len(rt.PermissionsRemoved) > 0 {
		rt.Fields = append(rt.Fields, "permissions")
	}
	if served != nil {
		rt.Fields = append(rt.Fields, "served")
		rt.Changes = append(rt.Changes, *served)
	}
	rt.Required = RequiredBump(pv, p.Permissions, t.Permissions, defChanged, served != nil)
	rt.Made = BumpOf(pv, tv)
	what := releaseChanges(&rt)
	switch c := tv.Compare(pv); {
	case c < 0:
		rt.Status, rt.Refused = StatusDowngrade, true
		rt.Message = fmt.Sprintf("version %s is lower than the previous release's %s: every client that pinned %s would refuse it as a downgrade", t.Version, p.Version, p.Version)
		if rt.Required != BumpNone {
			rt.Suggested = bumped(pv, rt.Required)
			rt.Message += fmt.Sprintf("; it %s, which calls for %s", what, bumpAdvice(rt.Required, rt.Suggested))
		}
	case rt.Required == BumpNone:
		rt.Status, rt.Message = StatusUnchanged, "unchanged"
		if c > 0 {
			rt.Status, rt.Message = StatusBumped, "a higher version without a change"
		}
	case c == 0:
		rt.Status, rt.Refused, rt.Suggested = StatusRugPull, true, bumped(pv, rt.Required)
		rt.Message = fmt.Sprintf("%s under the same version %s: every client that pinned it would see a rug pull; this calls for %s",
			what, p.Version, bumpAdvice(rt.Required, rt.Suggested))
	case satisfies(tv, pv, rt.Required):
		rt.Status = StatusBumped
		rt.Message = fmt.Sprintf("%s: a %s bump (%s called for)", what, rt.Made, rt.Required)
		if len(pv.Pre) > 0 {
			rt.Message = fmt.Sprintf("%s: any higher version may follow the pre-release %s", what, p.Version)
		}
	default:
		rt.Status, rt.Suggested = StatusBumpTooSmall, bumped(pv, rt.Required)
		rt.Message = fmt.Sprintf("%s: that calls for %s, not a %s bump (clients still see a new version and ask for approval)", what, bumpAdvice(rt.Required, rt.Suggested), rt.Made)
	}
	return rt, nil
}

// bumpAdvice is "a major bump (2.0.0)".
func bumpAdvice(b Bump, version string) string {
	return fmt.Sprintf("a %s bump (%s)", b, version)
}

// releaseChanges says in a few words what changed: "the definition
// (description), permissions (+net:write) and what serves it".
func releaseChanges(t *Tool) string {
	var parts []string
	var defFields []string
	for _, f := range t.Fields {
		if f != "permissions" && f != "served" {
			defFields = append(defFields, f)
		}
	}
	if len(defFields) > 0 {
		parts = append(parts, "the definition ("+strings.Join(defFields, ", ")+")")
	}
	if len(t.PermissionsAdded)+len(t.PermissionsRemoved) > 0 {
		added, removed, described := ScopeDiff(t.PermissionsRemoved, t.PermissionsAdded)
		var ps []string
		for _, s := range added {
			ps = append(ps, "+"+s)
		}
		for _, s := range removed {
			ps = append(ps, "-"+s)
		}
		for _, s := range described {
			ps = append(ps, "~"+s)
		}
		parts = append(parts, "permissions ("+strings.Join(ps, ", ")+")")
	}
	if slices.Contains(t.Fields, "served") {
		parts = append(parts, "what serves it")
	}
	switch len(parts) {
	case 0:
		return "nothing"
	case 1:
		return "changed " + parts[0]
	}
	return "changed " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// servedChange is the change of what serves a server's tools from prev to
// next (docs/provider.md#a-release-against-the-previous-one), or nil: when both name artifacts or endpoints
// (§4.1) and next names one that prev does not. A client's pin records
// what served each tool (docs/check.md#check-against-pins): a tool of the same version served by
// something else is a rug pull to it.
func servedChange(prev, next *etdi.Server) *etdi.Change {
	if !prev.Bound() || !next.Bound() {
		return nil
	}
	old, cur := prev.ServedBy(), next.ServedBy()
	for _, s := range cur {
		if !slices.Contains(old, s) {
			return &etdi.Change{Path: "/served", Op: "changed", Old: strings.Join(old, ", "), New: strings.Join(cur, ", ")}
		}
	}
	return nil
}
