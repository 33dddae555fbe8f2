package etdi

import (
	"fmt"
	"slices"
	"strings"
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
// cur: BumpNone when none does (the same version, a lower one, or one
// that differs only in its pre-release or build).
func BumpOf(old, cur Version) Bump {
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

// Bumped returns the least version that raises v by b: the component b
// names plus one, the ones after it 0. After a pre-release any higher
// version will do (SemVer 2.0.0 §9: a pre-release promises no
// compatibility), and the least is v's own release, MAJOR.MINOR.PATCH.
// For BumpNone it returns v.
func (v Version) Bumped(b Bump) string {
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

// Satisfies reports whether v raises old by at least b: cur is higher
// than old, and either old is a pre-release or BumpOf(old, v) >= b.
func (v Version) Satisfies(old Version, b Bump) bool {
	if v.Compare(old) <= 0 {
		return false
	}
	return len(old.Pre) > 0 || BumpOf(old, v) >= b
}

// PermissionDiff returns the permissions in cur but not old, and in old
// but not cur (a changed description counts as removed and added). Order
// does not count. This is how pins compare permissions (docs/check.md#check-against-pins).
func PermissionDiff(old, cur []Permission) (added, removed []Permission) {
	for _, p := range cur {
		if !slices.Contains(old, p) {
			added = append(added, p)
		}
	}
	for _, p := range old {
		if !slices.Contains(cur, p) {
			removed = append(removed, p)
		}
	}
	return added, removed
}

// ScopeDiff compares two permission lists by scope: the scopes only cur
// declares, the scopes only old declares, and the scopes both declare
// with another description.
func ScopeDiff(old, cur []Permission) (added, removed, described []string) {
	find := func(ps []Permission, scope string) (Permission, bool) {
		for _, p := range ps {
			if p.Scope == scope {
				return p, true
			}
		}
		return Permission{}, false
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
// permission's description, the definition, what serves it), BumpNone
// when nothing changed. While old's major version is 0 (SemVer 2.0.0 §4,
// initial development) a minor bump does for a major.
func RequiredBump(old Version, oldPerms, curPerms []Permission, definitionChanged, servedChanged bool) Bump {
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

// ReleaseStatus says how one tool changes from a previous release to the
// next (docs/provider.md#a-release-against-the-previous-one).
type ReleaseStatus string

// The statuses. RugPull, Downgrade and Removed (unless the removal was
// meant) are refused; BumpTooSmall is signed with a warning.
const (
	ReleaseNew          ReleaseStatus = "new"            // not in the previous release
	ReleaseUnchanged    ReleaseStatus = "unchanged"      // the same version, definition, permissions and server
	ReleaseBumped       ReleaseStatus = "bumped"         // a higher version, raised as far as the changes call for
	ReleaseBumpTooSmall ReleaseStatus = "bump_too_small" // a higher version, raised less than the changes call for
	ReleaseRugPull      ReleaseStatus = "rug_pull"       // changed under the same version
	ReleaseDowngrade    ReleaseStatus = "downgrade"      // a lower version
	ReleaseRemoved      ReleaseStatus = "removed"        // in the previous release only
)

// ReleaseTool is one tool of a release compared with the previous one.
type ReleaseTool struct {
	Name            string        `json:"name"`
	Status          ReleaseStatus `json:"status"`
	Refused         bool          `json:"refused"`
	PreviousVersion string        `json:"previousVersion,omitempty"`
	Version         string        `json:"version,omitempty"`
	// Fields are the top-level definition members that changed, then
	// "permissions" and "served" when those did.
	Fields []string `json:"fields,omitempty"`
	// Changes are the definition's changes (as Diff reports them) and,
	// when what serves the tools changed, one change of "/served".
	Changes            []Change     `json:"changes,omitempty"`
	PermissionsAdded   []Permission `json:"permissionsAdded,omitempty"`
	PermissionsRemoved []Permission `json:"permissionsRemoved,omitempty"`
	// Required is the bump the changes call for (RequiredBump), Made the
	// one the release makes (BumpOf), and Suggested the least version
	// that makes Required, when the release's version does not.
	Required  Bump   `json:"requiredBump"`
	Made      Bump   `json:"madeBump"`
	Suggested string `json:"suggestedVersion,omitempty"`
	// Message says what happened and what to do, in one sentence.
	Message string `json:"message"`
}

// Release is a release compared with the previous one of the same server
// (docs/provider.md#a-release-against-the-previous-one).
type Release struct {
	Provider         string `json:"provider"`
	Server           string `json:"server"`
	PreviousSequence uint64 `json:"previousSequence"`
	Sequence         uint64 `json:"sequence"`
	// SequenceRefused says the sequence does not increase; SequenceMessage
	// says so.
	SequenceRefused bool          `json:"sequenceRefused"`
	SequenceMessage string        `json:"sequenceMessage,omitempty"`
	Tools           []ReleaseTool `json:"tools"`
}

// Refused reports whether the release must not be signed: a tool is
// refused, or the sequence does not increase.
func (r *Release) Refused() bool {
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

// CompareRelease compares the statement of a release, next, with the
// previous release's, prev, as a client that pinned prev would see next
// (docs/provider.md#a-release-against-the-previous-one). remove names the tools next leaves out on purpose: their
// removal is reported, not refused. It returns an error when prev and next
// are not releases of one server (provider id and server name), when
// remove names a tool that prev lacks or next keeps, or when a version is
// not a semantic version (never so in a parsed statement).
func CompareRelease(prev, next *Statement, remove []string) (*Release, error) {
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
	r := &Release{Provider: next.Provider.ID, Server: next.Server.Name, PreviousSequence: prev.Sequence, Sequence: next.Sequence, Tools: []ReleaseTool{}}
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
		t := ReleaseTool{Name: p.Name, Status: ReleaseRemoved, PreviousVersion: p.Version}
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

func compareReleaseTool(p, t *Tool, served *Change) (ReleaseTool, error) {
	rt := ReleaseTool{Name: t.Name, Status: ReleaseNew, Version: t.Version}
	if p == nil {
		rt.Message = "new in this release"
		return rt, nil
	}
	rt.PreviousVersion = p.Version
	pv, err := ParseVersion(p.Version)
	if err != nil {
		return rt, fmt.Errorf("the previous release's tool %q: %v", p.Name, err)
	}
	tv, err := ParseVersion(t.Version)
	if err != nil {
		return rt, fmt.Errorf("tool %q: %v", t.Name, err)
	}
	defChanged := p.Digest != t.Digest
	if defChanged {
		rt.Changes = Diff(p.Definition(), t.Definition())
		rt.Fields = ChangedFields(rt.Changes)
	}
	rt.PermissionsAdded, rt.PermissionsRemoved = PermissionDiff(p.Permissions, t.Permissions)
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
		rt.Status, rt.Refused = ReleaseDowngrade, true
		rt.Message = fmt.Sprintf("version %s is lower than the previous release's %s: every client that pinned %s would refuse it as a downgrade", t.Version, p.Version, p.Version)
		if rt.Required != BumpNone {
			rt.Suggested = pv.Bumped(rt.Required)
			rt.Message += fmt.Sprintf("; it %s, which calls for %s", what, bumpAdvice(rt.Required, rt.Suggested))
		}
	case rt.Required == BumpNone:
		rt.Status, rt.Message = ReleaseUnchanged, "unchanged"
		if c > 0 {
			rt.Status, rt.Message = ReleaseBumped, "a higher version without a change"
		}
	case c == 0:
		rt.Status, rt.Refused, rt.Suggested = ReleaseRugPull, true, pv.Bumped(rt.Required)
		rt.Message = fmt.Sprintf("%s under the same version %s: every client that pinned it would see a rug pull; this calls for %s",
			what, p.Version, bumpAdvice(rt.Required, rt.Suggested))
	case tv.Satisfies(pv, rt.Required):
		rt.Status = ReleaseBumped
		rt.Message = fmt.Sprintf("%s: a %s bump (%s called for)", what, rt.Made, rt.Required)
		if len(pv.Pre) > 0 {
			rt.Message = fmt.Sprintf("%s: any higher version may follow the pre-release %s", what, p.Version)
		}
	default:
		rt.Status, rt.Suggested = ReleaseBumpTooSmall, pv.Bumped(rt.Required)
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
func releaseChanges(t *ReleaseTool) string {
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
func servedChange(prev, next *Server) *Change {
	if !prev.Bound() || !next.Bound() {
		return nil
	}
	old, cur := servedBy(prev), servedBy(next)
	for _, s := range cur {
		if !slices.Contains(old, s) {
			return &Change{Path: "/served", Op: "changed", Old: strings.Join(old, ", "), New: strings.Join(cur, ", ")}
		}
	}
	return nil
}

// servedBy lists what a bound server is served by, as pins write it:
// "TYPE NAME@VERSION DIGEST" and "url SCHEME://HOST:PORT/PATH".
func servedBy(s *Server) []string {
	var out []string
	for _, a := range s.Artifacts {
		n := a.Type + " " + a.Name
		if a.Version != "" {
			n += "@" + a.Version
		}
		out = append(out, n+" "+a.Digest)
	}
	for _, e := range s.Endpoints {
		if ep, err := parseEndpoint(e); err == nil {
			out = append(out, fmt.Sprintf("url %s://%s:%s%s", ep.scheme, ep.host, ep.port, strings.TrimSuffix(ep.path, "/")))
		}
	}
	return out
}
