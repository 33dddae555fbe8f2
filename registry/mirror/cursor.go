package mirror

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/etdi-dev/etdi/registry"
)

// maxCursor bounds a cursor a client sends, in bytes.
const maxCursor = 2048

// cursor is where a listing continues: in the upstream page that Upstream
// (with page size Limit) starts, after its first Skip entries, the last
// of which was Last.
type cursor struct {
	Upstream string `json:"u,omitempty"`
	Limit    int    `json:"l"`
	Skip     int    `json:"s,omitempty"`
	Last     string `json:"k,omitempty"`
}

// cursorMAC authenticates a cursor's payload for one listing's filters.
func cursorMAC(key, payload []byte, filter string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("etdi registry mirror cursor\x00"))
	m.Write([]byte(filter))
	m.Write([]byte{0})
	m.Write(payload)
	return m.Sum(nil)[:16]
}

// encodeCursor writes c as an opaque cursor: its payload and a MAC over
// the payload and the listing's filters.
func encodeCursor(key []byte, c cursor, filter string) string {
	payload, _ := json.Marshal(c)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(cursorMAC(key, payload, filter))
}

// errCursor is the one answer to a cursor that was not issued for this
// listing: whether it was forged, altered, from another process or
// another listing's is not told apart.
var errCursor = errors.New("not a cursor this registry issued for this listing (keep the same filters when following metadata.nextCursor)")

// decodeCursor reads a cursor encodeCursor wrote with key for the same
// filters, refusing any other.
func decodeCursor(key []byte, s, filter string) (cursor, error) {
	var c cursor
	if len(s) > maxCursor {
		return c, fmt.Errorf("longer than %d bytes", maxCursor)
	}
	p, m, ok := strings.Cut(s, ".")
	if !ok {
		return c, errCursor
	}
	enc := base64.RawURLEncoding
	payload, err := enc.DecodeString(p)
	if err != nil {
		return c, errCursor
	}
	mac, err := enc.DecodeString(m)
	if err != nil || !hmac.Equal(mac, cursorMAC(key, payload, filter)) {
		return c, errCursor
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || dec.More() {
		return cursor{}, errCursor
	}
	if c.Limit < 1 || c.Limit > registry.MaxPageSize || c.Skip < 0 || c.Skip > registry.MaxPageSize || len(c.Upstream) > maxUpstreamCursor {
		return cursor{}, errCursor
	}
	return c, nil
}
