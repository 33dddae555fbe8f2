package registrytest

import (
	"fmt"
	"strings"
	"testing"
)

// stopTB records how a test would have been stopped.
type stopTB struct {
	testing.TB
	skipped, failed string
}

type stopped struct{}

func (s *stopTB) Helper() {}
func (s *stopTB) Skipf(format string, args ...any) {
	s.skipped = fmt.Sprintf(format, args...)
	panic(stopped{})
}
func (s *stopTB) Fatalf(format string, args ...any) {
	s.failed = fmt.Sprintf(format, args...)
	panic(stopped{})
}

func (s *stopTB) run(f func(testing.TB)) {
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(stopped); !ok {
				panic(v)
			}
		}
	}()
	f(s)
}

// TestMissingPostgres shows that without PostgreSQL a test needing the
// registry is skipped saying what is missing and how to install it, and
// fails instead under CI=true: never a silent pass.
func TestMissingPostgres(t *testing.T) {
	saved := debianPgBin
	debianPgBin = t.TempDir() + "/*/bin"
	defer func() { debianPgBin = saved }()
	t.Setenv("PATH", t.TempDir())

	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		for name, f := range map[string]func(testing.TB){
			"Start":  func(tb testing.TB) { Start(tb) },
			"Binary": func(tb testing.TB) { Binary(tb) },
		} {
			s := &stopTB{TB: t}
			s.run(f)
			got := s.skipped
			if ci == "true" {
				got = s.failed
				if s.skipped != "" {
					t.Fatalf("%s skipped under CI=true: %s", name, s.skipped)
				}
			} else if s.failed != "" {
				t.Fatalf("%s failed outside CI: %s", name, s.failed)
			}
			if !strings.Contains(got, "initdb") || !strings.Contains(got, "apt-get install postgresql") {
				t.Fatalf("%s, CI=%q: %q does not say what is missing and how to install it", name, ci, got)
			}
		}
	}
}
