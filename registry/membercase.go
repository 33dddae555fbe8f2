package registry

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/etdi-dev/etdi/strictjson"
)

// Go's encoding/json matches member names without regard to case; a
// JavaScript host's JSON.parse does not. A document with "packages" and
// "Packages", or with "Identifier" where "identifier" is meant, would be
// one thing to etdi and another to the host it is served or installed
// for. checkMemberCase refuses both, so what etdi judges is what a host
// reads (a case-sensitive decoder is not in the standard library).

// knownNames are the member names etdi decodes from registry documents,
// by lower case.
var knownNames = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	var add func(t reflect.Type)
	seen := map[reflect.Type]bool{}
	add = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous {
				add(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			m[strings.ToLower(name)] = name
			add(f.Type)
		}
	}
	for _, v := range []any{ServerJSON{}, EtdiMeta{}, Official{}, rawEntry{}, rawPage{}} {
		add(reflect.TypeOf(v))
	}
	return m
})

// checkMemberCase refuses an object, anywhere in v, with two member names
// equal without regard to case, or, outside _meta (where publishers keep
// metadata of their own, in names of their choosing), with a member name
// that differs only in case from one etdi decodes.
func checkMemberCase(v *strictjson.Value) error {
	return walkMembers(v, 0, false)
}

func walkMembers(v *strictjson.Value, depth int, inMeta bool) error {
	if v == nil || depth > strictjson.MaxDepth {
		return nil
	}
	switch v.Kind {
	case strictjson.Array:
		for _, e := range v.Elems {
			if err := walkMembers(e, depth+1, inMeta); err != nil {
				return err
			}
		}
	case strictjson.Object:
		seen := make(map[string]string, len(v.Members))
		for _, m := range v.Members {
			low := strings.ToLower(m.Name)
			if other, dup := seen[low]; dup {
				return fmt.Errorf("members %q and %q differ only in case: a host would read one, etdi the other", other, m.Name)
			}
			seen[low] = m.Name
			if known, ok := knownNames()[low]; ok && known != m.Name && !inMeta {
				return fmt.Errorf("member %q differs only in case from %q: a host would not read it as etdi does", m.Name, known)
			}
			if err := walkMembers(m.Value, depth+1, inMeta || m.Name == "_meta"); err != nil {
				return err
			}
		}
	}
	return nil
}
