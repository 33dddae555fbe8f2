package etdi

import (
	"bytes"
	"fmt"

	"github.com/etdi-dev/etdi/strictjson"
)

// MetaBundleKey is the _meta key under which a server carries its etdi
// bundle in-band: in the _meta of a tools/list result, or of each tool
// (SPEC.md §15). The value is the bundle object itself.
const MetaBundleKey = MetaPrefix + "bundle"

// InbandBundle returns the bundle carried under [MetaBundleKey] in the given
// _meta objects, serialized as JSON, or nil if none carries one. All
// carriers must hold the same bundle (the same JSON value); different
// bundles are an error, since a server must not offer two signed stories.
func InbandBundle(metas []*strictjson.Value) ([]byte, error) {
	var found []byte
	count := 0
	for _, m := range metas {
		v := m.Get(MetaBundleKey)
		if v == nil {
			continue
		}
		if v.Kind != strictjson.Object {
			return nil, fmt.Errorf("_meta[%q] is a %s, not a bundle object", MetaBundleKey, v.Kind)
		}
		b := strictjson.AppendCanonical(nil, v)
		count++
		if found == nil {
			found = b
		} else if !bytes.Equal(found, b) {
			return nil, fmt.Errorf("the server carries %d or more different in-band bundles", count)
		}
	}
	return found, nil
}
