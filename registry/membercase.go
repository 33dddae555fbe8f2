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
// equal without regard to case, or with a member name that differs only
// in case from one etdi reads there. Under _meta, where publishers keep
// metadata of their own in names of their choosing, etdi reads only the
// registry's keys, dev.etdi under publisher-provided, and what those hold.
func checkMemberCase(v *strictjson.Value) error {
	return walkMembers(v, 0, decoded)
}

// level is where an object sits, which says the member names etdi reads
// in it.
type level int

const (
	decoded   level = iota // a member of what etdi decodes: knownNames
	meta                   // a _meta object: the registry's keys
	publisher              // _meta's publisher-provided object: dev.etdi
	own                    // the publisher's own metadata: no names
)

// metaNames and publisherNames are the names etdi reads in a _meta and in
// its publisher-provided object, by lower case.
var (
	metaNames      = map[string]string{strings.ToLower(PublisherProvidedKey): PublisherProvidedKey, strings.ToLower(OfficialKey): OfficialKey}
	publisherNames = map[string]string{strings.ToLower(EtdiKey): EtdiKey}
)

func (l level) names() map[string]string {
	switch l {
	case decoded:
		return knownNames()
	case meta:
		return metaNames
	case publisher:
		return publisherNames
	}
	return nil
}

// member is the level of the value of this level's member name.
func (l level) member(name string) level {
	switch {
	case l == decoded && name == "_meta":
		return meta
	case l == decoded, l == meta && name == OfficialKey, l == publisher && name == EtdiKey:
		return decoded
	case l == meta && name == PublisherProvidedKey:
		return publisher
	}
	return own
}

func walkMembers(v *strictjson.Value, depth int, at level) error {
	if v == nil || depth > strictjson.MaxDepth {
		return nil
	}
	switch v.Kind {
	case strictjson.Array:
		for _, e := range v.Elems {
			if err := walkMembers(e, depth+1, at); err != nil {
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
			if known, ok := at.names()[low]; ok && known != m.Name {
				return fmt.Errorf("member %q differs only in case from %q: a host would not read it as etdi does", m.Name, known)
			}
			if err := walkMembers(m.Value, depth+1, at.member(m.Name)); err != nil {
				return err
			}
		}
	}
	return nil
}
