package main

import (
	"testing"
	"time"
)

func TestParseValidity(t *testing.T) {
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "1d": 24 * time.Hour, "720h": 720 * time.Hour, "90m": 90 * time.Minute} {
		if got, err := parseValidity(in); err != nil || got != want {
			t.Errorf("parseValidity(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"d", "-3d", "1.5d", "30 d", "99999999d", "30days", ""} {
		if got, err := parseValidity(in); err == nil {
			t.Errorf("parseValidity(%q) = %v, want an error", in, got)
		}
	}
}
