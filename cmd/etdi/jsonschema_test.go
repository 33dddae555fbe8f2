package main

import (
	"encoding"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/finding"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The published JSON Schemas of etdi's JSON outputs, and the Go type each
// describes.
var outputSchemas = []struct {
	file string
	typ  reflect.Type
}{
	{"check.schema.json", reflect.TypeFor[checkOutput]()},
	{"verify.schema.json", reflect.TypeFor[verifyOutput]()},
	{"pin-list.schema.json", reflect.TypeFor[pinListOutput]()},
	{"registry-audit.schema.json", reflect.TypeFor[auditOutput]()},
}

var (
	schemaMu    sync.Mutex
	schemaCache = map[string]*jsonschema.Schema{}
)

// compiledSchema compiles a JSON Schema file (any draft it declares), with
// formats asserted.
func compiledSchema(t *testing.T, path string) *jsonschema.Schema {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	schemaMu.Lock()
	defer schemaMu.Unlock()
	if s, ok := schemaCache[abs]; ok {
		return s
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	s, err := c.Compile(abs)
	if err != nil {
		t.Fatalf("compiling %s: %v", path, err)
	}
	schemaCache[abs] = s
	return s
}

// validateAgainst fails the test unless out is one JSON document valid
// under the schema at path.
func validateAgainst(t *testing.T, path, what, out string) {
	t.Helper()
	if err := validJSON(compiledSchema(t, path), out); err != nil {
		t.Errorf("%s is not valid under %s: %v\n%.3000s", what, filepath.Base(path), err, out)
	}
}

func validJSON(s *jsonschema.Schema, out string) error {
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

func loadSchemaDoc(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "schemas", file))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return doc
}

// TestOutputSchemasDescribeTypes walks each output's Go type beside its
// schema: every member the type can print is a property of the schema (and
// required exactly when it is never omitted), every property is a member,
// every object refuses other members, and types agree. A field added to an
// output struct fails here until the schema describes it.
func TestOutputSchemasDescribeTypes(t *testing.T) {
	for _, o := range outputSchemas {
		doc := loadSchemaDoc(t, o.file)
		if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
			t.Errorf("%s: $schema %v, want draft 2020-12", o.file, doc["$schema"])
		}
		sv, _ := doc["properties"].(map[string]any)["schemaVersion"].(map[string]any)
		if sv["const"] != float64(jsonSchemaVersion) {
			t.Errorf("%s: schemaVersion is not the constant %d: %v", o.file, jsonSchemaVersion, sv)
		}
		for _, p := range schemaProblems(doc, o.typ) {
			t.Errorf("%s: %s", o.file, p)
		}
	}
}

// The walk catches what it is for: a member the schema lacks, a property
// the type lacks, a required member that may be omitted, an open object.
func TestOutputSchemaWalkCatchesDrift(t *testing.T) {
	type inner struct {
		A string `json:"a"`
		B int    `json:"b,omitempty"`
	}
	type outer struct {
		SchemaVersion int     `json:"schemaVersion"`
		In            []inner `json:"in"`
		When          time.Time
		Hidden        string `json:"-"`
	}
	good := func() map[string]any {
		return map[string]any{"type": "object", "additionalProperties": false, "required": []any{"schemaVersion", "in", "When"},
			"properties": map[string]any{
				"schemaVersion": map[string]any{"const": float64(1)},
				"When":          map[string]any{"type": "string", "format": "date-time"},
				"in":            map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/inner"}}},
			"$defs": map[string]any{"inner": map[string]any{"type": "object", "additionalProperties": false, "required": []any{"a"},
				"properties": map[string]any{"a": map[string]any{"type": "string"}, "b": map[string]any{"type": "integer"}}}}}
	}
	typ := reflect.TypeFor[outer]()
	if p := schemaProblems(good(), typ); len(p) != 0 {
		t.Fatalf("a schema that describes the type: %v", p)
	}
	inner0 := func(d map[string]any) map[string]any { return d["$defs"].(map[string]any)["inner"].(map[string]any) }
	for name, spoil := range map[string]func(map[string]any){
		"member missing":       func(d map[string]any) { delete(inner0(d)["properties"].(map[string]any), "b") },
		"stale property":       func(d map[string]any) { d["properties"].(map[string]any)["gone"] = map[string]any{"type": "string"} },
		"omitted but required": func(d map[string]any) { inner0(d)["required"] = []any{"a", "b"} },
		"never omitted, not required": func(d map[string]any) {
			d["required"] = []any{"schemaVersion", "in"}
		},
		"open object": func(d map[string]any) { delete(inner0(d), "additionalProperties") },
		"wrong type": func(d map[string]any) {
			inner0(d)["properties"].(map[string]any)["b"] = map[string]any{"type": "string"}
		},
		"not an array": func(d map[string]any) { d["properties"].(map[string]any)["in"].(map[string]any)["type"] = "object" },
	} {
		d := good()
		spoil(d)
		if p := schemaProblems(d, typ); len(p) == 0 {
			t.Errorf("%s: not caught", name)
		}
	}
}

// schemaProblems compares the JSON a Go type prints with a schema.
func schemaProblems(doc map[string]any, typ reflect.Type) []string {
	w := &schemaWalk{doc: doc}
	w.walk(typ, doc, "")
	return w.problems
}

type schemaWalk struct {
	doc      map[string]any
	problems []string
}

func (w *schemaWalk) errorf(format string, args ...any) {
	w.problems = append(w.problems, fmt.Sprintf(format, args...))
}

func (w *schemaWalk) resolve(n map[string]any) map[string]any {
	for i := 0; i < 10; i++ {
		ref, ok := n["$ref"].(string)
		if !ok {
			return n
		}
		defs, _ := w.doc["$defs"].(map[string]any)
		next, ok := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		if !ok {
			w.errorf("unresolved $ref %s", ref)
			return map[string]any{}
		}
		n = next
	}
	return n
}

func hasType(n map[string]any, want string) bool {
	switch t := n["type"].(type) {
	case string:
		return t == want
	case []any:
		return slices.Contains(t, any(want))
	}
	return false
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

func (w *schemaWalk) walk(typ reflect.Type, node map[string]any, path string) {
	node = w.resolve(node)
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch {
	case typ == reflect.TypeFor[json.RawMessage]():
		return // any JSON
	case typ == reflect.TypeFor[time.Time]():
		if !hasType(node, "string") || node["format"] != "date-time" {
			w.errorf("%s: a time, want a date-time string: %v", path, node)
		}
		return
	case typ.Implements(jsonMarshaler) || reflect.PointerTo(typ).Implements(jsonMarshaler):
		w.errorf("%s: %s marshals itself; describe it in the walk", path, typ)
		return
	case typ.Implements(textMarshaler) || reflect.PointerTo(typ).Implements(textMarshaler):
		if !hasType(node, "string") && node["enum"] == nil {
			w.errorf("%s: %s prints as a string: %v", path, typ, node)
		}
		return
	}
	switch typ.Kind() {
	case reflect.Struct:
		w.object(typ, node, path)
	case reflect.Slice, reflect.Array:
		items, ok := node["items"].(map[string]any)
		if !hasType(node, "array") || !ok {
			w.errorf("%s: a list, want an array with items: %v", path, node)
			return
		}
		w.walk(typ.Elem(), items, path+"[]")
	case reflect.Map:
		ap, ok := node["additionalProperties"].(map[string]any)
		if !hasType(node, "object") || !ok {
			w.errorf("%s: a map, want an object with additionalProperties: %v", path, node)
			return
		}
		w.walk(typ.Elem(), ap, path+"{}")
	case reflect.String:
		if !hasType(node, "string") && node["enum"] == nil && node["const"] == nil {
			w.errorf("%s: a string: %v", path, node)
		}
	case reflect.Bool:
		if !hasType(node, "boolean") {
			w.errorf("%s: a boolean: %v", path, node)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if !hasType(node, "integer") && node["const"] == nil {
			w.errorf("%s: an integer: %v", path, node)
		}
	default:
		w.errorf("%s: %s not described by the walk", path, typ)
	}
}

type jsonField struct {
	name      string
	omitempty bool
	typ       reflect.Type
}

// jsonFields are the members encoding/json prints for a struct, embedded
// structs flattened.
func jsonFields(typ reflect.Type) []jsonField {
	var out []jsonField
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			out = append(out, jsonFields(ft)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name, strings.Contains(opts, "omitempty"), f.Type})
	}
	return out
}

func (w *schemaWalk) object(typ reflect.Type, node map[string]any, path string) {
	if !hasType(node, "object") || node["additionalProperties"] != false {
		w.errorf("%s: %s is an object: want type object and additionalProperties false: %v", path, typ, node)
	}
	props, _ := node["properties"].(map[string]any)
	required := map[string]bool{}
	if r, ok := node["required"].([]any); ok {
		for _, n := range r {
			required[n.(string)] = true
		}
	}
	seen := map[string]bool{}
	for _, f := range jsonFields(typ) {
		seen[f.name] = true
		p, ok := props[f.name].(map[string]any)
		if !ok {
			w.errorf("%s: member %q of %s is not in the schema", path, f.name, typ)
			continue
		}
		if required[f.name] == f.omitempty {
			w.errorf("%s: member %q: omitempty %v but required %v", path, f.name, f.omitempty, required[f.name])
		}
		w.walk(f.typ, p, path+"/"+f.name)
	}
	var stale []string
	for name := range props {
		if !seen[name] {
			stale = append(stale, name)
		}
	}
	sort.Strings(stale)
	for _, name := range stale {
		w.errorf("%s: the schema's property %q is no member of %s", path, name, typ)
	}
}

// The finding kinds of the schemas are etdi's kinds, no more, no fewer.
func TestOutputSchemaFindingKinds(t *testing.T) {
	var want []string
	for _, k := range finding.Kinds() {
		want = append(want, string(k))
	}
	sort.Strings(want)
	for _, file := range []string{"check.schema.json", "verify.schema.json", "registry-audit.schema.json"} {
		doc := loadSchemaDoc(t, file)
		kind := doc["$defs"].(map[string]any)["finding"].(map[string]any)["properties"].(map[string]any)["kind"].(map[string]any)
		var got []string
		for _, k := range kind["enum"].([]any) {
			got = append(got, k.(string))
		}
		sort.Strings(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: finding kinds %v, want %v", file, got, want)
		}
	}
}

// The definitions both schemas carry are the same.
func TestOutputSchemasShareDefinitions(t *testing.T) {
	c, v := loadSchemaDoc(t, "check.schema.json")["$defs"].(map[string]any), loadSchemaDoc(t, "verify.schema.json")["$defs"].(map[string]any)
	for name, d := range v {
		if !reflect.DeepEqual(c[name], d) {
			t.Errorf("$defs/%s differs between check.schema.json and verify.schema.json", name)
		}
	}
	cv := c["verification"].(map[string]any)["properties"].(map[string]any)
	vp := loadSchemaDoc(t, "verify.schema.json")["properties"].(map[string]any)
	for name, p := range cv {
		if !reflect.DeepEqual(vp[name], p) {
			t.Errorf("verification member %q differs between the schemas", name)
		}
	}
}
