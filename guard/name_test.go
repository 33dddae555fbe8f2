package guard

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/trust"
)

// A server without a bundle needs a name to be pinned under, and one
// that is a valid unsigned name: no name is ErrNoName, a hostile one a
// NameError, and nothing is compared or recorded either way.
func TestCheckUnsignedNameRequired(t *testing.T) {
	l, err := ReadListing([]byte(`{"tools":[{"name":"get_weather","description":"Get the weather."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Policy: &trust.Policy{Unsigned: trust.Warn}, Pins: filepath.Join(t.TempDir(), "pins.db")}
	if _, err := Check(context.Background(), l, opts); !errors.Is(err, ErrNoName) {
		t.Errorf("no name: %v", err)
	}
	for _, name := range []string{"x\x1b[2J", strings.Repeat("w", 300)} {
		opts.Name = name
		var ne *NameError
		if _, err := Check(context.Background(), l, opts); !errors.As(err, &ne) || errors.Is(err, ErrNoName) {
			t.Errorf("name %q: %v", name, err)
		}
	}
	opts.Name = "weather"
	if r, err := Check(context.Background(), l, opts); err != nil || r.Blocked() {
		t.Errorf("a valid name: %v", err)
	}
}
