package mcpclient

import "testing"

func TestMapElements(t *testing.T) {
	obj := []byte(`{"a":1, "tools" : [ {"x":1} , 2,"three" ] ,"z":[]}`)
	got, err := MapElements(obj, "tools", func(i int, e []byte) []byte {
		switch i {
		case 1:
			return nil
		case 2:
			return []byte(`"3"`)
		}
		return e
	})
	if want := `{"a":1, "tools" : [{"x":1},"3"] ,"z":[]}`; err != nil || string(got) != want {
		t.Errorf("MapElements = %s, %v, want %s", got, err, want)
	}
	if _, err := MapElements(obj, "a", func(int, []byte) []byte { return nil }); err == nil {
		t.Error("MapElements of a number")
	}
	if got := string(SetMember(obj, "z", []byte(`{}`))); got != `{"a":1, "tools" : [ {"x":1} , 2,"three" ] ,"z":{}}` {
		t.Errorf("SetMember = %s", got)
	}
	if got := string(SetMember(obj, "none", []byte(`1`))); got != string(obj) {
		t.Errorf("SetMember of no member = %s", got)
	}
}
