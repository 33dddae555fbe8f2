package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/termtext"
)

// say is fmt.Fprintf for text a person reads: every string, error and
// Stringer argument passes through termtext.Escape (SPEC.md §22), so a
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

// describeTool writes everything a person approves when approving a tool:
// title, the full description, every input and output schema property
// with its type and description, the annotations, the other fields, and
// the permissions approval grants.
func describeTool(w io.Writer, canonical []byte, perms []etdi.Permission) {
	def, err := etdi.ParseJSON(canonical)
	if err != nil || def.Kind != etdi.Object {
		say(w, "    definition unreadable: %v\n", err)
		return
	}
	const ind = "      "
	if v := def.Get("title"); v != nil {
		say(w, "    title        %s\n", jsonText(v))
	}
	if v := def.Get("description"); v != nil && v.Kind == etdi.String {
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
		if extra := schemaExtra(v); extra != "" {
			say(w, "%sschema also: %s\n", ind, extra)
		}
	}
	if v := def.Get("annotations"); v != nil && v.Kind == etdi.Object {
		var parts []string
		for _, m := range v.Members {
			parts = append(parts, m.Name+": "+jsonText(m.Value))
		}
		say(w, "    annotations  %s\n", strings.Join(parts, ", "))
	}
	for _, m := range def.Members {
		switch m.Name {
		case "name", "title", "description", "inputSchema", "outputSchema", "annotations":
			continue
		}
		say(w, "    %-12s %s\n", m.Name, jsonText(m.Value))
	}
	say(w, "    permissions  %s\n", permList(perms))
}

// jsonText is the canonical JSON of v, shortened for one line.
func jsonText(v *etdi.Value) string {
	if v.Kind == etdi.String {
		return v.Str
	}
	b := etdi.AppendCanonical(nil, v)
	if len(b) > 2048 {
		return string(b[:2048]) + "..."
	}
	return string(b)
}

type schemaProp struct{ head, desc string }

// schemaProps lists the properties of a JSON Schema, nested ones as
// parent.child and array items as parent[].
func schemaProps(out []schemaProp, prefix string, schema *etdi.Value) []schemaProp {
	if schema == nil || schema.Kind != etdi.Object || len(out) > 1000 {
		return out
	}
	required := map[string]bool{}
	if r := schema.Get("required"); r != nil && r.Kind == etdi.Array {
		for _, e := range r.Elems {
			if e.Kind == etdi.String {
				required[e.Str] = true
			}
		}
	}
	if props := schema.Get("properties"); props != nil && props.Kind == etdi.Object {
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
	if items := schema.Get("items"); items != nil {
		out = schemaProps(out, strings.TrimSuffix(prefix, ".")+"[].", items)
	}
	return out
}

// schemaType describes a property's type: its type, enum, const, format,
// default and bounds, as written.
func schemaType(s *etdi.Value) string {
	if s.Kind != etdi.Object {
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
		case "type", "description", "properties", "required", "title":
			continue
		case "items":
			if m.Value.Get("properties") != nil {
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
func schemaExtra(s *etdi.Value) string {
	if s.Kind != etdi.Object {
		return jsonText(s)
	}
	var parts []string
	for _, m := range s.Members {
		switch m.Name {
		case "type", "properties", "required":
			continue
		}
		parts = append(parts, m.Name+"="+jsonText(m.Value))
	}
	return strings.Join(parts, " ")
}
