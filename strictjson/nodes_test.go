package strictjson_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/strictjson"
)

// zeros returns n zeros separated by commas: n JSON values in 2n-1 bytes.
func zeros(n int) string { return strings.TrimSuffix(strings.Repeat("0,", n), ",") }

// A document holds at most MaxNodes JSON values, whatever its bytes: the
// parsed values cost about 50 times the bytes of "0,".
func TestMaxNodes(t *testing.T) {
	// The array itself is one value.
	if _, err := strictjson.Parse([]byte("[" + zeros(strictjson.MaxNodes-1) + "]")); err != nil {
		t.Fatalf("%d values refused: %v", strictjson.MaxNodes, err)
	}
	_, err := strictjson.Parse([]byte("[" + zeros(strictjson.MaxNodes) + "]"))
	want := fmt.Sprintf("invalid JSON at byte %d: more than 1000000 JSON values in the document", 2*(strictjson.MaxNodes-1)+1)
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
	// Members count as their values; the object itself is one.
	var b strings.Builder
	b.WriteString(`{"k":0`)
	for i := 1; i < strictjson.MaxNodes; i++ {
		fmt.Fprintf(&b, `,"k%x":0`, i)
	}
	b.WriteString("}")
	if _, err := strictjson.Parse([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "more than 1000000 JSON values in the document") {
		t.Fatalf("object of %d members: %v", strictjson.MaxNodes, err)
	}
}
