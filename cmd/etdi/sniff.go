package main

import (
	"fmt"

	"github.com/etdi-dev/etdi/strictjson"
)

// notABundle tells a user who passed the wrong file where a bundle was
// expected: a saved tools/list or a manifest is not a security failure but
// a mix-up, so it is a usage error that says how to use the file. It
// returns nil for anything else (a real bundle, or garbage that
// verification reports as bundle_invalid).
func notABundle(path string, data []byte) error {
	v, err := strictjson.Parse(data)
	if err != nil {
		return nil
	}
	obj := v
	if v.Kind == strictjson.Object && v.Get("jsonrpc") != nil {
		if r := v.Get("result"); r != nil {
			obj = r
		}
	}
	if v.Kind == strictjson.Array {
		return usagef("%s is an array of tools, not a bundle: pass it with --tools, and give the provider's signed bundle (.etdi.json)", path)
	}
	if obj.Kind != strictjson.Object || obj.Get("payloadType") != nil || obj.Get("signatures") != nil || obj.Get("dsseEnvelope") != nil {
		return nil
	}
	tools := obj.Get("tools")
	if tools == nil || tools.Kind != strictjson.Array {
		return nil
	}
	if obj.Get("provider") != nil && obj.Get("server") != nil {
		return usagef("%s is a manifest, not a bundle: sign it first (etdi sign --key KEY --out BUNDLE %s), then verify the bundle", path, path)
	}
	return &usageError{fmt.Errorf("%s is a tools/list result, not a bundle: pass it with --tools (etdi verify --tools %s BUNDLE), or check it with etdi check --tools %s", path, path, path)}
}

// notAListing tells a user who passed a manifest or a bundle where a
// saved tools/list goes (--tools) how to use the file, as notABundle
// does for verify; nil for anything else.
func notAListing(path string, data []byte) error {
	v, err := strictjson.Parse(data)
	if err != nil || v.Kind != strictjson.Object || v.Get("jsonrpc") != nil {
		return nil
	}
	if v.Get("payloadType") != nil || v.Get("signatures") != nil || v.Get("dsseEnvelope") != nil {
		return usagef("%s is a signed bundle, not a tools/list result: pass it with --bundle %s, and the server (--server, --url, --config) or its saved tools/list with --tools", path, path)
	}
	if tools := v.Get("tools"); tools != nil && tools.Kind == strictjson.Array && v.Get("provider") != nil && v.Get("server") != nil {
		return usagef("%s is a manifest, not a tools/list result: sign it (etdi sign --key KEY --out BUNDLE %s) and check the bundle with --bundle BUNDLE; --tools takes what a server lists (etdi fetch --out FILE --server -- CMD)", path, path)
	}
	return nil
}
