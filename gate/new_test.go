package gate

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/trust"
)

// TestNewRefusesMissingPolicyOrPins: a gate without a trust policy or a
// pin database has nothing to decide by, and is refused rather than
// started.
func TestNewRefusesMissingPolicyOrPins(t *testing.T) {
	pins := filepath.Join(t.TempDir(), "pins.db")
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{Options: guard.Options{Pins: pins}}, "gate: a gate needs a trust policy"},
		{Options{Options: guard.Options{Policy: &trust.Policy{}}}, "gate: a gate needs a pin database"},
	} {
		g, err := New(c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) || g != nil {
			t.Errorf("New = %v, %v; want the error %q", g, err, c.want)
		}
	}
}
