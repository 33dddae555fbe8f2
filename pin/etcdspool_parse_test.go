package pin

import (
	"strings"
	"testing"
)

// Each entry differs from a valid one in one way only, so each is
// refused by its own check.
func TestParseSpoolEntryRefuses(t *testing.T) {
	const rec = `{"time":"2026-01-01T00:00:00Z","type":"finding","server":"unsigned:x","kind":"new_tool","severity":"error","message":"m"}`
	const call = `{"time":"2026-01-01T00:00:00Z","type":"call","server":"x","tool":"t","outcome":"forwarded"}`
	valid := []string{
		`{"v":1,"records":[` + rec + `]}`,
		`{"v":1,"user":"carol","spool":"s1","seq":2,"records":[` + call + `]}`,
		`{"v":1,"spool":"s1","end":true,"records":[]}`,
	}
	for _, v := range valid {
		if _, err := parseSpoolEntry([]byte(v)); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	with := func(field string) string {
		return `{"v":1,"records":[` + strings.Replace(rec, `"type"`, field+`,"type"`, 1) + `]}`
	}
	for name, bad := range map[string]string{
		"duplicate member":    `{"v":1,"records":[` + strings.Replace(rec, `"message":"m"`, `"message":"m","message":"n"`, 1) + `]}`,
		"duplicate top level": `{"v":1,"v":1,"records":[` + rec + `]}`,
		"unknown member":      `{"v":1,"pin":{},"records":[` + rec + `]}`,
		"unknown in record":   with(`"approvedBy":"x"`),
		"too large":           `{"v":1,"records":[` + strings.Replace(rec, `"m"`, `"`+strings.Repeat("m", MaxSpoolEntry)+`"`, 1) + `]}`,
		"signer":              with(`"signer":{"kind":"none"}`),
		"key id":              with(`"keyId":"sha256:00"`),
		"permissions":         with(`"permissions":[{"scope":"net"}]`),
		"scopes":              with(`"scopes":["files:write"]`),
		"served":              with(`"served":"npm x@1"`),
		"replaced":            with(`"replaced":"1 sha256:00"`),
		"index":               with(`"index":3`),
		"prev":                with(`"prev":"AAAA"`),
		"machine":             with(`"machine":"a"`),
		"user":                with(`"user":"a"`),
		"version 2":           `{"v":2,"records":[` + rec + `]}`,
		"no records":          `{"v":1,"records":[]}`,
		"seq without spool":   `{"v":1,"seq":3,"records":[` + rec + `]}`,
		"spool with a slash":  `{"v":1,"spool":"a/b","records":[` + call + `]}`,
		"user with control":   `{"v":1,"user":"a\u001b[31m","records":[` + rec + `]}`,
		"finding with call":   with(`"outcome":"forwarded"`),
		"call with finding":   `{"v":1,"records":[` + strings.Replace(call, `"outcome"`, `"kind":"new_tool","outcome"`, 1) + `]}`,
		"trailing data":       `{"v":1,"records":[` + rec + `]} {}`,
		"not an object":       `[1]`,
	} {
		if _, err := parseSpoolEntry([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
