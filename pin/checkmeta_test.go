package pin

import (
	"errors"
	"os"
	"testing"
)

// A zeroed meta page is found by the walk, in the caller's goroutine:
// bbolt's own check panics on it in a goroutine of its own, after
// closing its channel, which let the check pass when the process ended
// first.
func TestCheckFileZeroedMetaPage(t *testing.T) {
	fileOnly(t)
	s := openTemp(t)
	mustApprove(t, s, obs("acme:weather", 1, tool(t, "get_weather", "1.0.0", weatherDef, keyA, "net:fetch")))
	path := s.Path()
	s.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	size := os.Getpagesize()
	if _, err := f.WriteAt(make([]byte, size), int64(size)); err != nil { // page 1
		t.Fatal(err)
	}
	f.Close()
	for range 20 {
		var ce *CorruptError
		if err := CheckFileAt(path, 0); !errors.As(err, &ce) {
			t.Fatalf("CheckFileAt of a database with meta page 1 zeroed: %v", err)
		}
	}
}
