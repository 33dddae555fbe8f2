package release

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/etdi-dev/etdi"
)

// ServedStatus says how a tool a server serves compares with the
// manifest's definition of it (docs/provider.md#a-server-against-its-manifest).
type ServedStatus string

// The statuses; every one but ServedMatch is drift.
const (
	ServedMatch     ServedStatus = "match"     // served exactly as the manifest defines it
	ServedChanged   ServedStatus = "changed"   // served with another definition
	ServedMissing   ServedStatus = "missing"   // in the manifest, not served
	ServedExtra     ServedStatus = "extra"     // served, not in the manifest
	ServedDuplicate ServedStatus = "duplicate" // served more than once
)

// ServedTool is one tool of a manifest or a server, compared.
type ServedTool struct {
	Name   string       `json:"name"`
	Status ServedStatus `json:"status"`
	// Version is the manifest's version of the tool.
	Version        string `json:"version,omitempty"`
	ManifestDigest string `json:"manifestDigest,omitempty"`
	ServedDigest   string `json:"servedDigest,omitempty"`
	// Fields and Changes are the differences of a changed definition, the
	// manifest's first (as Diff and ChangedFields report them).
	Fields  []string      `json:"fields,omitempty"`
	Changes []etdi.Change `json:"changes,omitempty"`
	// Definition is the whole definition of a missing tool (the
	// manifest's) or an extra one (as served), canonical.
	Definition json.RawMessage `json:"definition,omitempty"`
}

// Summary says in one line how the tool compares: "get_weather@1.0.0:
// served with another definition (description)".
func (t *ServedTool) Summary() string {
	ref := t.Name
	if t.Version != "" {
		ref = etdi.SubjectName(t.Name, t.Version)
	}
	switch t.Status {
	case ServedMatch:
		return ref + ": served as the manifest defines it"
	case ServedChanged:
		return fmt.Sprintf("%s: served with another definition (%s)", ref, strings.Join(t.Fields, ", "))
	case ServedMissing:
		return ref + ": in the manifest, not served"
	case ServedExtra:
		return ref + ": served, not in the manifest"
	case ServedDuplicate:
		return ref + ": served more than once (clients cannot tell which they call)"
	}
	return ref + ": " + string(t.Status)
}

// CompareServed compares the tools a server serves (its tools/list) with
// the definitions of manifest m (docs/provider.md#a-server-against-its-manifest): each tool of m in order,
// then each served tool m lacks. Definitions are compared by digest (§3),
// so key order, whitespace and escapes never count, nor does etdi's own
// _meta material (an in-band bundle).
func CompareServed(m *etdi.Manifest, served []etdi.LiveTool) []ServedTool {
	count := map[string]int{}
	first := map[string]*etdi.LiveTool{}
	for i := range served {
		if count[served[i].Name]++; count[served[i].Name] == 1 {
			first[served[i].Name] = &served[i]
		}
	}
	out := make([]ServedTool, 0, len(m.Tools))
	for i := range m.Tools {
		t := &m.Tools[i]
		st := ServedTool{Name: t.Name, Version: t.Version, ManifestDigest: t.Digest.String()}
		lt := first[t.Name]
		switch {
		case lt == nil:
			st.Status, st.Definition = ServedMissing, json.RawMessage(t.Canonical)
		case count[t.Name] > 1:
			st.Status = ServedDuplicate
		case lt.Digest == t.Digest:
			st.Status, st.ServedDigest = ServedMatch, lt.Digest.String()
		default:
			st.Status, st.ServedDigest = ServedChanged, lt.Digest.String()
			st.Changes = etdi.Diff(t.Definition(), lt.Definition())
			st.Fields = etdi.ChangedFields(st.Changes)
		}
		out = append(out, st)
	}
	for i := range served {
		lt := &served[i]
		if m.Tool(lt.Name) != nil || first[lt.Name] != lt {
			continue
		}
		st := ServedTool{Name: lt.Name, Status: ServedExtra, ServedDigest: lt.Digest.String(), Definition: json.RawMessage(lt.Canonical)}
		if count[lt.Name] > 1 {
			st.Status, st.Definition = ServedDuplicate, nil
		}
		out = append(out, st)
	}
	return out
}

// DriftError reports a server that does not serve a manifest's
// definitions: Tools holds the tools that drift (no [ServedMatch]).
type DriftError struct {
	Tools []ServedTool
}

// Error lists every tool that drifts, one line each, with the changes of
// each changed definition and the whole definition of a missing or extra
// tool under it.
func (e *DriftError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the server does not serve the manifest's definitions (%s):", DriftSummary(e.Tools))
	for i := range e.Tools {
		t := &e.Tools[i]
		b.WriteString("\n  " + t.Summary())
		for _, c := range t.Changes {
			b.WriteString("\n    " + c.String())
		}
		if t.Definition != nil {
			b.WriteString("\n    " + truncate(string(t.Definition), etdi.MaxChangeText))
		}
	}
	return b.String()
}

// DriftSummary counts the tools that drift by status: "1 changed, 1
// extra"; "no drift" when none does.
func DriftSummary(ts []ServedTool) string {
	var parts []string
	for _, s := range []ServedStatus{ServedChanged, ServedMissing, ServedExtra, ServedDuplicate} {
		n := 0
		for _, t := range ts {
			if t.Status == s {
				n++
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(parts) == 0 {
		return "no drift"
	}
	return strings.Join(parts, ", ")
}

// CheckServed returns nil when a server serves exactly the definitions of
// manifest m, and otherwise a [*DriftError] naming every tool that drifts
// (docs/provider.md#a-server-against-its-manifest).
func CheckServed(m *etdi.Manifest, served []etdi.LiveTool) error {
	var drift []ServedTool
	for _, t := range CompareServed(m, served) {
		if t.Status != ServedMatch {
			drift = append(drift, t)
		}
	}
	if len(drift) == 0 {
		return nil
	}
	return &DriftError{Tools: drift}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
