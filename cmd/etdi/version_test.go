package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestBuildInfoFrom(t *testing.T) {
	installed := &debug.BuildInfo{Main: debug.Module{Path: "github.com/etdi-dev/etdi", Version: "v1.4.2"}}
	if b := buildInfoFrom("dev", installed); b.Version != "v1.4.2" || b.GoVersion != runtime.Version() {
		t.Fatalf("go install build: %+v", b)
	}
	checkout := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}
	b := buildInfoFrom("dev", checkout)
	if b.Version != "dev" || b.Commit != "0123456789abcdef0123" || !b.Modified {
		t.Fatalf("checkout build: %+v", b)
	}
	if s := b.String(); s != "etdi dev (commit 0123456789ab-dirty, "+runtime.Version()+")" {
		t.Fatalf("String() = %q", s)
	}
	// A release build's linked version wins over the module version.
	if b := buildInfoFrom("v2.0.0", installed); b.Version != "v2.0.0" {
		t.Fatalf("release build: %+v", b)
	}
}
