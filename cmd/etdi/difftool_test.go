package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/strictjson"
)

// diffTool calls a tool changed when only its version differs from its
// pin, unchanged when nothing does, and a tool without a pin not pinned.
func TestDiffToolVersion(t *testing.T) {
	s, err := pin.Open(filepath.Join(t.TempDir(), "pins.db"), pin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	signer := pin.SignerID{Kind: "key", ID: "sha256:" + strings.Repeat("a", 64)}
	tool := func(name, version string) pin.Observed {
		c, err := strictjson.Canonicalize([]byte(`{"name":"` + name + `","description":"Adds.","inputSchema":{"type":"object"}}`))
		if err != nil {
			t.Fatal(err)
		}
		d, _ := etdi.DigestJSON(c)
		return pin.Observed{Name: name, Version: version, Digest: d, Canonical: c, Signer: signer}
	}
	o := &pin.Observation{Server: "acme:calc", Provider: "acme", Name: "calc", Sequence: 1, Tools: []pin.Observed{tool("add", "1.0.0")}}
	if _, refused, err := s.Approve(o, pin.ApproveOptions{By: "test"}); err != nil || len(refused) > 0 {
		t.Fatalf("approve: %v %+v", err, refused)
	}
	for _, tc := range []struct {
		t    pin.Observed
		want string
	}{
		{tool("add", "1.0.0"), "unchanged"},
		{tool("add", "1.1.0"), "changed"},
		{tool("sub", "1.0.0"), "not pinned"},
	} {
		d, err := diffTool(s, "acme:calc", tc.t)
		if err != nil || d.Kind != tc.want || len(d.Changes) != 0 {
			t.Errorf("diffTool(%s %s) = %+v, %v; want %s without changes", tc.t.Name, tc.t.Version, d, err, tc.want)
		}
	}
}
