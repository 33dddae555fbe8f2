package etdi

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/etdi-dev/etdi/strictjson"
)

// Change is one difference between two JSON values.
type Change struct {
	// Path is an RFC 6901 JSON Pointer into the definition, e.g.
	// "/inputSchema/properties/city/description".
	Path string `json:"path"`
	// Op is "added", "removed" or "changed".
	Op string `json:"op"`
	// Old and New are the canonical JSON of the values (absent for
	// added and removed respectively), truncated to MaxChangeText bytes.
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
	// Text, for a changed string, marks what changed inside it:
	// "...context[-removed-]{+added+}context...".
	Text string `json:"text,omitempty"`
}

// maxChanges bounds the changes [Diff] reports; MaxChangeText bounds the
// text of each value.
const (
	maxChanges    = 200
	MaxChangeText = 4096
)

func (c Change) String() string {
	switch c.Op {
	case "added":
		return fmt.Sprintf("%s added: %s", c.Path, c.New)
	case "removed":
		return fmt.Sprintf("%s removed (was %s)", c.Path, c.Old)
	}
	if c.Text != "" {
		return fmt.Sprintf("%s changed: %s", c.Path, c.Text)
	}
	return fmt.Sprintf("%s changed: %s -> %s", c.Path, c.Old, c.New)
}

// Diff returns the differences between two JSON values in document order
// of a, then members only in b. Arrays are compared element by element.
// Values that are equal under RFC 8785 produce no change: key order and
// whitespace never show up.
func Diff(a, b *strictjson.Value) []Change {
	var out []Change
	diff(&out, "", a, b)
	return out
}

// ChangedFields returns the distinct top-level member names touched by
// changes, in order of first appearance.
func ChangedFields(changes []Change) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range changes {
		f := c.Path
		if f == "" {
			f = "/"
		} else {
			f = strings.TrimPrefix(f, "/")
			if i := strings.IndexByte(f, '/'); i >= 0 {
				f = f[:i]
			}
			f = unescapePointer(f)
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

func canonicalText(v *strictjson.Value) string {
	b := strictjson.AppendCanonical(nil, v)
	if len(b) > MaxChangeText {
		return string(b[:MaxChangeText]) + "..."
	}
	return string(b)
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

func diff(out *[]Change, path string, a, b *strictjson.Value) {
	if len(*out) >= maxChanges {
		return
	}
	if a.Kind == strictjson.Object && b.Kind == strictjson.Object {
		for _, m := range a.Members {
			p := path + "/" + escapePointer(m.Name)
			if o := b.Get(m.Name); o == nil {
				add(out, Change{Path: p, Op: "removed", Old: canonicalText(m.Value)})
			} else {
				diff(out, p, m.Value, o)
			}
		}
		for _, m := range b.Members {
			if a.Get(m.Name) == nil {
				add(out, Change{Path: path + "/" + escapePointer(m.Name), Op: "added", New: canonicalText(m.Value)})
			}
		}
		return
	}
	if a.Kind == strictjson.Array && b.Kind == strictjson.Array {
		n := min(len(a.Elems), len(b.Elems))
		for i := 0; i < n; i++ {
			diff(out, path+"/"+strconv.Itoa(i), a.Elems[i], b.Elems[i])
		}
		for i := n; i < len(a.Elems); i++ {
			add(out, Change{Path: path + "/" + strconv.Itoa(i), Op: "removed", Old: canonicalText(a.Elems[i])})
		}
		for i := n; i < len(b.Elems); i++ {
			add(out, Change{Path: path + "/" + strconv.Itoa(i), Op: "added", New: canonicalText(b.Elems[i])})
		}
		return
	}
	if !strictjson.Equal(a, b) {
		c := Change{Path: path, Op: "changed", Old: canonicalText(a), New: canonicalText(b)}
		if a.Kind == strictjson.String && b.Kind == strictjson.String {
			c.Text = TextDiff(a.Str, b.Str)
		}
		add(out, c)
	}
}

func add(out *[]Change, c Change) {
	if len(*out) < maxChanges {
		*out = append(*out, c)
	}
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
