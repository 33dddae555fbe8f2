package gate

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/etdi-dev/etdi"
)

// withoutEtdiMetaDeep returns the JSON value v (valid JSON, as a decoded
// message's slices are) without any member of an object named _meta (in
// any case) whose name begins with etdi.MetaPrefix (in any case), at any
// depth, and without a _meta that leaves empty; v itself, and false,
// when it has none. A call result, a resource's contents or a server's
// request carries no etdi material: a server that sends some imitates
// etdi's voice (docs/gate.md#runtime-gate).
func withoutEtdiMetaDeep(v []byte) ([]byte, bool) {
	// Without the prefix, written plainly (or with "\/") or with a \u
	// escape, there is nothing to remove.
	if !bytes.Contains(v, []byte(`\u`)) && !bytes.Contains(bytes.ToLower(v), []byte(strings.ToLower(strings.TrimSuffix(etdi.MetaPrefix, "/")))) {
		return v, false
	}
	s := &metaStripper{in: v}
	s.value(s.space(0), false)
	if !s.removed {
		return v, false
	}
	return s.out, true
}

// metaStripper copies its input, leaving out etdi's _meta members.
type metaStripper struct {
	in      []byte
	out     []byte
	removed bool
}

func (s *metaStripper) space(i int) int {
	for i < len(s.in) && (s.in[i] == ' ' || s.in[i] == '\t' || s.in[i] == '\r' || s.in[i] == '\n') {
		i++
	}
	return i
}

// str returns the end of the string that begins at i.
func (s *metaStripper) str(i int) int {
	for i++; i < len(s.in); i++ {
		switch s.in[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// value copies the value at i to out (meta: it is the value of a _meta
// member) and returns where it ends, and whether it is an object that
// held only etdi's members.
func (s *metaStripper) value(i int, meta bool) (int, bool) {
	switch s.in[i] {
	case '{':
		s.out = append(s.out, '{')
		kept, dropped := 0, 0
		i = s.space(i + 1)
		for s.in[i] != '}' {
			if s.in[i] == ',' {
				i = s.space(i + 1)
			}
			kend := s.str(i)
			var name string
			json.Unmarshal(s.in[i:kend], &name)
			at := len(s.out)
			if kept > 0 {
				s.out = append(s.out, ',')
			}
			s.out = append(s.out, s.in[i:kend]...)
			s.out = append(s.out, ':')
			i = s.space(s.space(kend) + 1) // the colon
			var emptied bool
			i, emptied = s.value(i, strings.EqualFold(name, "_meta"))
			i = s.space(i)
			if meta && len(name) >= len(etdi.MetaPrefix) && strings.EqualFold(name[:len(etdi.MetaPrefix)], etdi.MetaPrefix) || emptied && strings.EqualFold(name, "_meta") {
				s.out, s.removed = s.out[:at], true
				dropped++
				continue
			}
			kept++
		}
		s.out = append(s.out, '}')
		return i + 1, meta && kept == 0 && dropped > 0
	case '[':
		s.out = append(s.out, '[')
		i = s.space(i + 1)
		for n := 0; s.in[i] != ']'; n++ {
			if s.in[i] == ',' {
				i = s.space(i + 1)
			}
			if n > 0 {
				s.out = append(s.out, ',')
			}
			end, _ := s.value(i, false)
			i = s.space(end)
		}
		s.out = append(s.out, ']')
		return i + 1, false
	case '"':
		end := s.str(i)
		s.out = append(s.out, s.in[i:end]...)
		return end, false
	}
	end := i
	for end < len(s.in) && !strings.ContainsRune(",]} \t\r\n", rune(s.in[end])) {
		end++
	}
	s.out = append(s.out, s.in[i:end]...)
	return end, false
}
