package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/strictjson"
)

// say is fmt.Fprintf for text a person reads: every string, error and
// Stringer argument passes through termtext.Escape (docs/output.md#escaping-untrusted-text), so a
// server's text never reaches the terminal raw. The format itself is
// etdi's own. JSON output never goes through say.
func say(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, format, escapeArgs(args)...)
}

func escapeArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = termtext.Escape(v)
		case error:
			out[i] = termtext.Escape(v.Error())
		case fmt.Stringer:
			out[i] = termtext.Escape(v.String())
		case []byte:
			out[i] = termtext.Escape(string(v))
		case []string:
			s := make([]string, len(v))
			for j := range v {
				s[j] = termtext.Escape(v[j])
			}
			out[i] = s
		default:
			out[i] = a
		}
	}
	return out
}

// sayBlock writes text that may span lines (a description, instructions):
// each line escaped and behind indent and a "| " gutter, so the text
// cannot start a line of etdi's own output.
func sayBlock(w io.Writer, indent, text string) {
	for _, line := range strings.Split(text, "\n") {
		say(w, "%s| %s\n", indent, line)
	}
}

// sayJSON writes a JSON value indented for a person, with every hidden
// code point as a JSON \u escape: the same value, nothing hidden.
func sayJSON(w io.Writer, indent string, canonical []byte) {
	var b bytes.Buffer
	if err := json.Indent(&b, canonical, indent, "  "); err != nil {
		say(w, "%s%s\n", indent, canonical)
		return
	}
	w.Write([]byte(indent))
	w.Write(termtext.EscapeJSON(b.Bytes()))
	w.Write([]byte("\n"))
}

// sayChanges writes the changes of a definition (etdi.Diff), then the
// permissions added and removed, one a line behind indent.
func sayChanges(w io.Writer, indent string, changes []etdi.Change, added, removed []etdi.Permission) {
	for _, c := range changes {
		say(w, "%s%s\n", indent, c)
	}
	for _, p := range added {
		say(w, "%s+ permission %s\n", indent, permList([]etdi.Permission{p}))
	}
	for _, p := range removed {
		say(w, "%s- permission %s\n", indent, permList([]etdi.Permission{p}))
	}
}

// describeTool writes everything a person approves when approving a tool:
// title, the full description, every input and output schema property
// with its type and description, the annotations, the other fields, and
// the permissions approval grants.
func describeTool(w io.Writer, canonical []byte, perms []etdi.Permission) {
	def, err := strictjson.Parse(canonical)
	if err != nil || def.Kind != strictjson.Object {
		say(w, "    definition unreadable: %v\n", err)
		return
	}
	const ind = "      "
	if v := def.Get("title"); v != nil {
		say(w, "    title        %s\n", jsonText(v))
	}
	if v := def.Get("description"); v != nil && v.Kind == strictjson.String {
		say(w, "    description\n")
		sayBlock(w, ind, v.Str)
	} else if v != nil {
		say(w, "    description  %s\n", jsonText(v))
	} else {
		say(w, "    description  (none)\n")
	}
	for _, s := range []struct{ field, label string }{{"inputSchema", "input"}, {"outputSchema", "output"}} {
		v := def.Get(s.field)
		if v == nil {
			continue
		}
		props := schemaProps(nil, "", v)
		left := 0
		if len(props) > maxShownProps {
			left = countProps(v) - maxShownProps
			props = props[:maxShownProps]
		}
		if len(props) == 0 {
			say(w, "    %-12s %s\n", s.label, "no properties")
		} else {
			say(w, "    %s\n", s.label)
		}
		for _, p := range props {
			say(w, "%s%s\n", ind, p.head)
			if p.desc != "" {
				sayBlock(w, ind+"    ", p.desc)
			}
		}
		if left > 0 {
			say(w, "%s[%d more %s properties not shown, after the first %d; %s]\n", ind, left, s.label, maxShownProps, seeFull)
		}
		if extra := schemaExtra(v); extra != "" {
			say(w, "%sschema also: %s\n", ind, extra)
		}
	}
	if v := def.Get("annotations"); v != nil && v.Kind == strictjson.Object {
		var parts []string
		for _, m := range v.Members {
			parts = append(parts, m.Name+": "+jsonText(m.Value))
		}
		say(w, "    annotations  %s\n", strings.Join(parts, ", "))
	}
	for _, m := range def.Members {
		switch m.Name {
		case "name", "title", "description", "inputSchema", "outputSchema":
			continue
		case "annotations":
			if m.Value.Kind == strictjson.Object {
				continue
			}
		}
		say(w, "    %-12s %s\n", m.Name, jsonText(m.Value))
	}
	say(w, "    permissions  %s\n", permList(perms))
}

// What describeTool shows whole: every value up to maxShownValue bytes
// (of its text, or of its canonical JSON) and maxShownProps properties
// of each schema. Past that it says exactly what it left out and where
// to see everything: nothing a person approves is dropped unsaid.
const (
	maxShownValue = 64 << 10
	maxShownProps = 1000
	seeFull       = "the full definition: j at the approval prompt, or --json"
)

// jsonText is v as a person reads it: a string as is, anything else as
// canonical JSON; past maxShownValue bytes, cut with a note of how many
// bytes were not shown.
func jsonText(v *strictjson.Value) string {
	var b []byte
	if v.Kind == strictjson.String {
		b = []byte(v.Str)
	} else {
		b = strictjson.AppendCanonical(nil, v)
	}
	if len(b) <= maxShownValue {
		return string(b)
	}
	cut := maxShownValue
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return fmt.Sprintf("%s [%d more bytes not shown; %s]", b[:cut], len(b)-cut, seeFull)
}

// countProps counts what schemaProps lists, without a limit.
func countProps(schema *strictjson.Value) int {
	if schema == nil || schema.Kind != strictjson.Object {
		return 0
	}
	n := 0
	if props := schema.Get("properties"); props != nil && props.Kind == strictjson.Object {
		for _, m := range props.Members {
			n += 1 + countProps(m.Value)
		}
	}
	if items := schema.Get("items"); items != nil && items.Kind == strictjson.Object {
		n += countProps(items)
		if itemsExtra(items) {
			n++
		}
	}
	return n
}

type schemaProp struct{ head, desc string }

// schemaProps lists the properties of a JSON Schema, nested ones as
// parent.child and array items as parent[].
func schemaProps(out []schemaProp, prefix string, schema *strictjson.Value) []schemaProp {
	if schema == nil || schema.Kind != strictjson.Object || len(out) > maxShownProps {
		return out
	}
	required := map[string]bool{}
	if r := schema.Get("required"); r != nil && r.Kind == strictjson.Array {
		for _, e := range r.Elems {
			if e.Kind == strictjson.String {
				required[e.Str] = true
			}
		}
	}
	if props := schema.Get("properties"); props != nil && props.Kind == strictjson.Object {
		for _, m := range props.Members {
			name := prefix + m.Name
			head := name + ": " + schemaType(m.Value)
			if required[m.Name] {
				head += " (required)"
			}
			desc := ""
			if d := m.Value.Get("description"); d != nil {
				desc = jsonText(d)
			}
			out = append(out, schemaProp{head, desc})
			out = schemaProps(out, name+".", m.Value)
		}
	}
	if items := schema.Get("items"); items != nil && items.Kind == strictjson.Object {
		// The members of items beside its properties (schemaType leaves
		// items out of its parent's line) get a line of their own.
		if itemsExtra(items) {
			desc := ""
			if d := items.Get("description"); d != nil {
				desc = jsonText(d)
			}
			out = append(out, schemaProp{strings.TrimSuffix(prefix, ".") + "[]: " + schemaType(items), desc})
		}
		out = schemaProps(out, strings.TrimSuffix(prefix, ".")+"[].", items)
	}
	return out
}

// itemsExtra reports whether an items schema listed through its
// properties has members of its own to show.
func itemsExtra(items *strictjson.Value) bool {
	if items.Get("properties") == nil {
		return false // shown whole on its parent's line
	}
	for _, m := range items.Members {
		switch m.Name {
		case "type", "properties":
		case "required":
			if requiredExtra(items) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// requiredExtra reports whether a schema's required holds anything other
// than names of its properties, which the "(required)" marks do not show.
func requiredExtra(schema *strictjson.Value) bool {
	r := schema.Get("required")
	if r == nil {
		return false
	}
	if r.Kind != strictjson.Array {
		return true
	}
	props := schema.Get("properties")
	for _, e := range r.Elems {
		if e.Kind != strictjson.String || props == nil || props.Kind != strictjson.Object || props.Get(e.Str) == nil {
			return true
		}
	}
	return false
}

// schemaType describes a property's type: its type, enum, const, format,
// default and bounds, as written.
func schemaType(s *strictjson.Value) string {
	if s.Kind != strictjson.Object {
		return jsonText(s)
	}
	var parts []string
	if t := s.Get("type"); t != nil {
		parts = append(parts, jsonText(t))
	} else {
		parts = append(parts, "any")
	}
	var keys []string
	for _, m := range s.Members {
		switch m.Name {
		case "type", "description", "title":
			continue
		case "properties":
			if m.Value.Kind == strictjson.Object {
				continue
			}
		case "required":
			if !requiredExtra(s) {
				continue
			}
		case "items":
			if m.Value.Kind == strictjson.Object && m.Value.Get("properties") != nil {
				continue
			}
		}
		keys = append(keys, m.Name)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+jsonText(s.Get(k)))
	}
	if t := s.Get("title"); t != nil {
		parts = append(parts, "title="+jsonText(t))
	}
	return strings.Join(parts, " ")
}

// schemaExtra shows the top-level schema members other than type,
// properties and required (e.g. additionalProperties, $defs).
func schemaExtra(s *strictjson.Value) string {
	if s.Kind != strictjson.Object {
		return jsonText(s)
	}
	var parts []string
	for _, m := range s.Members {
		switch m.Name {
		case "type":
			if m.Value.Kind == strictjson.String && m.Value.Str == "object" {
				continue
			}
		case "properties":
			if m.Value.Kind == strictjson.Object {
				continue
			}
		case "required":
			if !requiredExtra(s) {
				continue
			}
		}
		parts = append(parts, m.Name+"="+jsonText(m.Value))
	}
	return strings.Join(parts, " ")
}
