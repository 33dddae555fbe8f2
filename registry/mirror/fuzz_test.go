package mirror

import (
	"net/url"
	"testing"

	"github.com/etdi-dev/etdi"
)

// FuzzCursor: a cursor from a client never panics the reader, and one it
// accepts is within bounds and was issued with its key for its filters.
func FuzzCursor(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	good := encodeCursor(key, cursor{Upstream: "io.github.acme/weather:1.0.0", Limit: 30, Skip: 3, Last: "io.github.acme/weather\x001.0.0"}, "3:wea,0:,0:")
	f.Add(good, "3:wea,0:,0:")
	f.Add("abc", "")
	f.Add(good+"A", "3:wea,0:,0:")
	f.Add(".", "")
	f.Add("e30.AAAAAAAAAAAAAAAAAAAAAA", "")
	f.Fuzz(func(t *testing.T, s, filter string) {
		c, err := decodeCursor(key, s, filter)
		if err != nil {
			return
		}
		if c.Limit < 1 || c.Limit > 100 || c.Skip < 0 || c.Skip > 100 || len(c.Upstream) > maxUpstreamCursor {
			t.Fatalf("accepted %+v", c)
		}
		if _, err := decodeCursor([]byte("another key, another process...."), s, filter); err == nil {
			t.Fatal("a cursor accepted under two keys")
		}
	})
}

// FuzzRoute: a request path never panics the router, and a path it
// routes names a valid registry name and a bounded version.
func FuzzRoute(f *testing.F) {
	for _, p := range []string{"/v0.1/servers", "/v0.1/servers/io.github.acme%2Fweather/versions", "/v0.1/servers/io.github.acme%2Fweather/versions/1.0.0", "/v0.1/servers/a%2F%2Fb/versions/%zz", "/v0.1/servers//versions/"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		u, err := url.Parse(p)
		if err != nil {
			return
		}
		name, version, what, ok := route(u)
		if !ok || what == routeList {
			return
		}
		if etdi.ValidateRegistryName(name) != nil {
			t.Fatalf("routed the name %q", name)
		}
		if what == routeVersion && (version == "" || len(version) > 255) {
			t.Fatalf("routed the version %q", version)
		}
	})
}
