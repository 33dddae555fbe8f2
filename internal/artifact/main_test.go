package artifact

import (
	"os"
	"testing"
)

// TestMain removes the npm world the tests copy (npmTemplate) once they
// have all run.
func TestMain(m *testing.M) {
	code := m.Run()
	if npmTemplate.root != "" {
		os.RemoveAll(npmTemplate.root)
	}
	os.Exit(code)
}
