package mcpclient

import "fmt"

// MapElements returns a copy of the JSON object obj in which each element
// i of the array that is the value of member name is replaced by what
// fn returns for it (nil drops it); every other byte of obj is as it
// was. obj must be valid JSON (as a decoded message's slices are).
func MapElements(obj []byte, name string, fn func(i int, elem []byte) []byte) ([]byte, error) {
	start, off, end := member(obj, name)
	if start < 0 || obj[off] != '[' {
		return nil, fmt.Errorf("member %q is not an array", name)
	}
	arr := obj[off:end]
	out := make([]byte, 0, len(obj))
	out = append(out, obj[:off]...)
	out = append(out, '[')
	n, kept := 0, 0
	i := skipSpace(arr, 1)
	for i < len(arr) && arr[i] != ']' {
		end := valueEnd(arr, i)
		if e := fn(n, arr[i:end]); e != nil {
			if kept > 0 {
				out = append(out, ',')
			}
			out = append(out, e...)
			kept++
		}
		n++
		i = skipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
	out = append(out, ']')
	return append(out, obj[off+len(arr):]...), nil
}

// SetMember returns a copy of the JSON object obj with the value of its
// member name (the first of that name) replaced by value (raw JSON); obj
// itself if it has no such member.
func SetMember(obj []byte, name string, value []byte) []byte {
	start, vstart, end := member(obj, name)
	if start < 0 {
		return obj
	}
	out := make([]byte, 0, len(obj)-(end-vstart)+len(value))
	out = append(out, obj[:vstart]...)
	out = append(out, value...)
	return append(out, obj[end:]...)
}
