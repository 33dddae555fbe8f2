package tuf

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/internal/sigstoretest"
	"github.com/etdi-dev/etdi/internal/tuftest"
)

// hostileFile serves data in place of the repository's file named by its
// suffix, everything else as the repository serves it.
type hostileFile struct {
	suffix string
	data   []byte
}

func (h hostileFile) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, h.suffix) {
		return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(h.data)),
			ContentLength: int64(len(h.data)), Header: http.Header{}, Request: r}, nil
	}
	return http.DefaultTransport.RoundTrip(r)
}

// FuzzFetchHostileMirror: whatever a mirror serves in place of one of the
// repository's files (the next root, the timestamp, snapshot, targets or
// the target), Fetch either fails or returns exactly the target the
// repository's signed metadata names.
func FuzzFetchHostileMirror(f *testing.F) {
	target := sigstoretest.New(f).TrustedRoot(f)
	repo := tuftest.New(f, target)
	files := []string{"/2.root.json", "/timestamp.json", "/1.snapshot.json", "/1.targets.json", ".trusted_root.json"}
	for i := range files {
		f.Add(uint8(i), []byte(`{"signed":{"_type":"timestamp","version":2},"signatures":[]}`))
	}
	f.Add(uint8(4), target)
	f.Add(uint8(4), append(bytes.Clone(target), ' '))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		hc := &http.Client{Transport: hostileFile{suffix: files[int(which)%len(files)], data: data}}
		res, err := Fetch(context.Background(), Options{Mirror: repo.URL, Root: repo.Root, CacheDir: t.TempDir(), HTTPClient: hc})
		if err != nil {
			return
		}
		if !bytes.Equal(res.Target, target) {
			t.Fatalf("a target the metadata does not name was returned (%s replaced)", files[int(which)%len(files)])
		}
	})
}
