package mcpclient

import (
	"testing"

	"github.com/etdi-dev/etdi/internal/mcpclient/hostile"
)

// The largest listing etdi accepts is read whole: four pages of one
// 15 MiB tool, 60 MiB in all, each page under the 64 MiB bound of one
// message. A bound must not refuse a listing this size, over stdio or
// HTTP.
func TestBigListingAccepted(t *testing.T) {
	check := func(t *testing.T, l *Listing, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Tools) != 4 || l.Tools[3].Name != "tool_3" || l.Pages != 4 {
			t.Fatalf("%d tools in %d pages", len(l.Tools), l.Pages)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		l, err := hostileStdio(t, hostile.BigListing, Options{})
		check(t, l, err)
	})
	t.Run("http", func(t *testing.T) {
		l, err := hostileHTTP(t, hostile.Handler(hostile.BigListing), Options{}, nil)
		check(t, l, err)
	})
}
