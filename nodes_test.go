package etdi_test

import (
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/testgen"
	"github.com/etdi-dev/etdi/strictjson"
)

// zeros returns n zeros separated by commas: n JSON values in 2n-1 bytes.
func zeros(n int) string { return strings.TrimSuffix(strings.Repeat("0,", n), ",") }

// One tool definition holds at most MaxDefinitionNodes values, in a
// tools/list, a manifest or a statement, and the error names the tool.
func TestMaxDefinitionNodes(t *testing.T) {
	// {"name":"d","enum":[...]} is 3 values besides the array's elements.
	tool := func(elems int) string { return `{"name":"d","enum":[` + zeros(elems) + `]}` }
	at := etdi.MaxDefinitionNodes - 3
	small := `{"name":"s"}`
	ok := `{"tools":[` + small + "," + tool(at) + `]}`
	tl, err := etdi.ParseList([]byte(ok), etdi.ListOptions{})
	if err != nil {
		t.Fatalf("a definition of %d values refused: %v", etdi.MaxDefinitionNodes, err)
	}
	if len(tl.Tools) != 2 || tl.Nodes != 2+2+etdi.MaxDefinitionNodes {
		t.Fatalf("%d tools, %d values", len(tl.Tools), tl.Nodes)
	}
	for name, in := range map[string]string{
		"tools/list": `{"tools":[` + small + "," + tool(at+1) + `]}`,
		"bare array": `[` + small + "," + tool(at+1) + `]`,
		"jsonrpc":    `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + small + "," + tool(at+1) + `]}}`,
	} {
		_, err := etdi.ParseList([]byte(in), etdi.ListOptions{})
		if err == nil || !strings.Contains(err.Error(), "more than 50000 JSON values in the tool definition at index 1") {
			t.Fatalf("%s: %v", name, err)
		}
	}
	manifest := func(def string) string {
		return `{"provider":{"id":"p"},"server":{"name":"s"},"tools":[{"version":"1.0.0","permissions":[],"definition":` + def + `}]}`
	}
	// In a manifest the tool entry holds the definition: 3 values more.
	if _, err := etdi.ParseManifest([]byte(manifest(tool(at - 3)))); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if _, err := etdi.ParseManifest([]byte(manifest(tool(at - 2)))); err == nil || !strings.Contains(err.Error(), "more than 50000 JSON values in the tool definition at index 0") {
		t.Fatalf("manifest: %v", err)
	}
	// Values outside the tools array count only for the document.
	if _, err := etdi.ParseList([]byte(`{"tools":[],"_meta":{"x":[`+zeros(2*etdi.MaxDefinitionNodes)+`]}}`), etdi.ListOptions{}); err != nil {
		t.Fatal(err)
	}
}

// The pages of one listing share one bound, which holds while a page is
// parsed.
func TestToolsListPageBound(t *testing.T) {
	page := []byte(`{"tools":[{"name":"a","enum":[` + zeros(96) + `]}]}`) // 2 + 3 + 96 = 101 values
	tl, err := etdi.ParseList(page, etdi.ListOptions{Limit: 1000})
	if err != nil || tl.Nodes != 101 {
		t.Fatalf("%v, %d values", err, tl.Nodes)
	}
	if _, err := etdi.ParseList(page, etdi.ListOptions{Before: 899, Limit: 1000}); err != nil {
		t.Fatalf("1,000 values in all refused: %v", err)
	}
	_, err = etdi.ParseList(page, etdi.ListOptions{Before: 900, Limit: 1000})
	if err == nil || !strings.Contains(err.Error(), "more than 1000 JSON values in the listing (all pages together)") {
		t.Fatalf("1,001 values in all: %v", err)
	}
	// A limit above MaxNodes is MaxNodes, for one document.
	if _, err := etdi.ParseList([]byte("["+zeros(strictjson.MaxNodes)+"]"), etdi.ListOptions{Limit: 2 * strictjson.MaxNodes}); err == nil {
		t.Fatal("a page over MaxNodes accepted")
	}
}

// Realistic definitions are far under the bounds: MaxTools of them fit one
// document, as a tools/list and as a manifest.
func TestNodeBoundsHarmless(t *testing.T) {
	tl, err := etdi.ParseList(testgen.ToolsList(etdi.MaxTools), etdi.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Tools) != etdi.MaxTools {
		t.Fatalf("%d tools", len(tl.Tools))
	}
	if _, err := etdi.ParseManifest(testgen.Manifest(etdi.MaxTools)); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d realistic tools: %d JSON values (%d per tool)", etdi.MaxTools, tl.Nodes, tl.Nodes/etdi.MaxTools)
}
