package strictjson_test

import (
	"fmt"

	"github.com/etdi-dev/etdi/strictjson"
)

// Canonical form (RFC 8785): members sorted by name, no whitespace, numbers
// and strings in one fixed spelling.
func ExampleCanonicalize() {
	c, err := strictjson.Canonicalize([]byte(`{"b": 1.0, "a": ["\u0041", 1e2]}`))
	fmt.Println(string(c), err)
	// Output: {"a":["A",100],"b":1} <nil>
}

// What other parsers would read differently is refused, not normalized.
func ExampleParse() {
	for _, in := range []string{`{"a":1,"a":2}`, `9007199254740993`, `"\ud800"`} {
		_, err := strictjson.Parse([]byte(in))
		fmt.Println(err)
	}
	// Output:
	// invalid JSON at byte 7: duplicate member name "a"
	// invalid JSON at byte 0: number 9007199254740993 is beyond ±2^53-1
	// invalid JSON at byte 7: lone high surrogate \ud800
}

// Typed members, with the path named in every error.
func ExampleField() {
	v, err := strictjson.Parse([]byte(`{"tools": [{"name": 7}]}`))
	if err != nil {
		panic(err)
	}
	o, _ := strictjson.Root(v).Object()
	tools, _ := o.Field("tools").Array()
	tool, _ := tools.Elem(0).Object()
	_, err = tool.Field("name").Str()
	fmt.Println(err)
	// Output: tools[0].name: must be a string, not a number
}

// A streamed array keeps no elements: each reaches Each as it is parsed.
func ExampleParseStream() {
	s := &strictjson.Stream{
		Paths: [][]string{{"tools"}},
		Each: func(_, i int, v *strictjson.Value) error {
			fmt.Println(i, string(strictjson.AppendCanonical(nil, v)))
			return nil
		},
	}
	v, err := strictjson.ParseStream([]byte(`{"tools": [{"name": "a"}, {"name": "b"}]}`), s)
	fmt.Println(len(v.Get("tools").Elems), s.Nodes, err)
	// Output:
	// 0 {"name":"a"}
	// 1 {"name":"b"}
	// 0 6 <nil>
}
