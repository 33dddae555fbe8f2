package strictjson_test

import (
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/strictjson"
)

// A streamed element over MaxElemNodes is refused, named by ElemName and
// its index; one at the bound, and values outside streamed arrays, are not.
func TestStreamElemBound(t *testing.T) {
	each := func(int, int, *strictjson.Value) error { return nil }
	s := func() *strictjson.Stream {
		return &strictjson.Stream{Paths: [][]string{{"l"}}, Each: each, MaxElemNodes: 4, ElemName: "the entry"}
	}
	if _, err := strictjson.ParseStream([]byte(`{"l":[[0,0,0],[1]],"x":[0,0,0,0,0,0]}`), s()); err != nil {
		t.Fatalf("elements at the bound refused: %v", err)
	}
	_, err := strictjson.ParseStream([]byte(`{"l":[[1],[0,0,0,0]]}`), s())
	if err == nil || !strings.HasSuffix(err.Error(), "more than 4 JSON values in the entry at index 1") {
		t.Fatalf("element over the bound: %v", err)
	}
}

// Before and Limit bound a document as part of a larger whole, while it
// is parsed; Nodes counts the document alone.
func TestStreamWholeBound(t *testing.T) {
	doc := []byte(`[0,0,0]`) // 4 values
	s := &strictjson.Stream{Before: 6, Limit: 10, Whole: "the whole"}
	if _, err := strictjson.ParseStream(doc, s); err != nil || s.Nodes != 4 {
		t.Fatalf("at the bound: nodes %d, %v", s.Nodes, err)
	}
	_, err := strictjson.ParseStream(doc, &strictjson.Stream{Before: 7, Limit: 10, Whole: "the whole"})
	if err == nil || !strings.HasSuffix(err.Error(), "more than 10 JSON values in the whole") {
		t.Fatalf("over the bound: %v", err)
	}
}

// A callback's error stops the parse and is returned as it is.
func TestStreamEachError(t *testing.T) {
	stop := &strictjson.FieldError{Path: "l[1]", Msg: "stop"}
	n := 0
	_, err := strictjson.ParseStream([]byte(`{"l":[1,2,3]}`), &strictjson.Stream{Paths: [][]string{{"l"}}, Each: func(_, i int, _ *strictjson.Value) error {
		n++
		if i == 1 {
			return stop
		}
		return nil
	}})
	if err != stop || n != 2 {
		t.Fatalf("got %v after %d elements", err, n)
	}
}
