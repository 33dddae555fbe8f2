package mcpclient

import (
	"os"
	"testing"

	"github.com/etdi-dev/etdi/internal/mcpclient/hostile"
)

// TestMain lets the test binary serve as a hostile stdio server.
func TestMain(m *testing.M) {
	if mode := os.Getenv(hostile.Env); mode != "" {
		hostile.Stdio(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}
