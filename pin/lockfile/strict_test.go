package lockfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/strictjson"
	"golang.org/x/mod/sumdb/note"
)

// doc is the team lockfile as generic JSON, to edit.
func doc(t *testing.T) map[string]any {
	t.Helper()
	s := openStore(t)
	team(t, s, "Get the weather.")
	var m map[string]any
	if err := json.Unmarshal(export(t, s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func entries(m map[string]any, name string) []any { return m[name].([]any) }

func entry(m map[string]any, list, key, value string) map[string]any {
	for _, e := range entries(m, list) {
		if o := e.(map[string]any); o[key] == value {
			return o
		}
	}
	panic(list + " has no " + key + " " + value)
}

// withDigest sets a pin's definition and its digest.
func withDigest(p map[string]any, def any) {
	b, _ := json.Marshal(def)
	c, err := strictjson.Canonicalize(b)
	if err != nil {
		panic(err)
	}
	p["definition"] = def
	p["digest"] = etdi.DigestString(string(c)).String()
}

// More of what Parse refuses, each with its reason: the limits, entries
// listed twice, and inconsistent entries that a lax reader would take.
func TestParseStrictEntries(t *testing.T) {
	sha := "sha256:" + strings.Repeat("d", 64)
	for _, tc := range []struct {
		name, want string
		edit       func(m map[string]any)
	}{
		{"server listed twice", "listed twice", func(m map[string]any) {
			m["servers"] = append(entries(m, "servers"), entries(m, "servers")[0])
		}},
		{"revoked twice", "revoked twice", func(m map[string]any) {
			m["revocations"] = append(entries(m, "revocations"), entries(m, "revocations")[0])
		}},
		{"text too long", "longer than 1024 bytes", func(m map[string]any) {
			entry(m, "pins", "tool", "get_alerts")["served"] = strings.Repeat("x", 1025)
		}},
		{"unsigned server name too long", "longer than 128 bytes", func(m map[string]any) {
			name := strings.Repeat("f", 129)
			s := entry(m, "servers", "server", "unsigned:files")
			s["name"], s["server"] = name, "unsigned:"+name
			for _, p := range entries(m, "pins") {
				if p := p.(map[string]any); p["server"] == "unsigned:files" {
					p["server"] = "unsigned:" + name
				}
			}
			for _, r := range entries(m, "revocations") {
				if r := r.(map[string]any); r["server"] == "unsigned:files" {
					r["server"] = "unsigned:" + name
				}
			}
		}},
		{"digest without its prefix", "not sha256: and 64", func(m map[string]any) {
			p := entry(m, "pins", "tool", "get_alerts")
			p["digest"] = strings.TrimPrefix(p["digest"].(string), "sha256:")
		}},
		{"a prompt with a signer and a version", "pinned by digest alone", func(m map[string]any) {
			p := entry(m, "pins", "tool", "weather_report")
			p["signer"] = map[string]any{"kind": "key", "id": sha}
			p["version"] = "1.0.0"
		}},
		{"an unsigned tool with permissions", "an unsigned tool has no permissions", func(m map[string]any) {
			entry(m, "pins", "tool", "list_dir")["permissions"] = []any{map[string]any{"scope": "fs:read"}}
		}},
		{"too many definition values", "more than 50000 JSON values", func(m map[string]any) {
			p := entry(m, "pins", "tool", "get_alerts")
			withDigest(p, map[string]any{"name": "get_alerts", "x": make([]any, 50_000)})
		}},
		{"an unsigned signer with an id", "an unsigned signer has no id", func(m map[string]any) {
			entry(m, "pins", "tool", "list_dir")["signer"] = map[string]any{"kind": "none", "id": sha}
		}},
		{"a scope twice", "duplicate scope", func(m map[string]any) {
			p := entry(m, "pins", "tool", "get_forecast")
			p["permissions"] = append(p["permissions"].([]any), p["permissions"].([]any)[0])
		}},
		{"too many permissions", "more than 256 permissions", func(m map[string]any) {
			var perms []any
			for i := range 257 {
				perms = append(perms, map[string]any{"scope": fmt.Sprintf("s:%d", i)})
			}
			entry(m, "pins", "tool", "get_forecast")["permissions"] = perms
		}},
		{"a key revocation naming a tool", "names no server, tool or version", func(m map[string]any) {
			r := entry(m, "revocations", "keyId", "sha256:"+strings.Repeat("c", 64))
			r["server"], r["tool"] = "acme:weather", "get_weather"
		}},
		{"a key id without its prefix", "not a key id", func(m map[string]any) {
			entry(m, "revocations", "keyId", "sha256:"+strings.Repeat("c", 64))["keyId"] = strings.Repeat("c", 64)
		}},
		{"a revocation of a server alone", "names a keyId, or a server and a tool", func(m map[string]any) {
			m["revocations"] = append(entries(m, "revocations"), map[string]any{"server": "acme:weather"})
		}},
		{"a reason too long", "longer than 4096 bytes", func(m map[string]any) {
			entry(m, "revocations", "tool", "read_file")["reason"] = strings.Repeat("r", 4097)
		}},
		{"a revoked version that is no version", "version", func(m map[string]any) {
			entry(m, "revocations", "tool", "get_forecast")["version"] = "1.0"
		}},
		{"too many servers", "more than 10000 servers", func(m map[string]any) {
			var s []any
			for i := range 10_001 {
				s = append(s, map[string]any{"server": fmt.Sprintf("unsigned:s%d", i), "name": fmt.Sprintf("s%d", i)})
			}
			m["servers"] = s
		}},
		{"too many pins", "more than 50000 pins", func(m map[string]any) {
			p := entries(m, "pins")
			for len(p) <= 50_000 {
				p = append(p, p[0])
			}
			m["pins"] = p
		}},
		{"too many revocations", "more than 10000 revocations", func(m map[string]any) {
			var r []any
			for i := range 10_001 {
				r = append(r, map[string]any{"keyId": fmt.Sprintf("sha256:%064x", i)})
			}
			m["revocations"] = r
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := doc(t)
			tc.edit(m)
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Parse(b); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an error with %q", err, tc.want)
			}
		})
	}
}

// Verify without a key says so; Sign refuses a generation beyond 2^53-1.
func TestVerifySignEdges(t *testing.T) {
	s := openStore(t)
	team(t, s, "Get the weather.")
	f, _ := Export(s)
	signer, _ := newKey(t)
	f.Generation, f.Expires = MaxGeneration+1, expiry
	if err := f.Sign(signer); err == nil {
		t.Fatal("signed a generation beyond 2^53-1")
	}
	f.Generation = MaxGeneration
	if err := f.Sign(signer); err != nil {
		t.Fatal(err)
	}
	var ve *VerifyError
	if err := f.Verify(); !errors.As(err, &ve) || !strings.Contains(err.Error(), "no key") {
		t.Fatalf("verify without a key: %v", err)
	}
	if err := f.Verify([]note.Verifier{}...); !errors.As(err, &ve) {
		t.Fatalf("verify with an empty key list: %v", err)
	}
}

// A pin of the database that the lockfile has with the same digest but
// another version or another signer is a conflict: the lockfile would
// change what was approved. A revocation of one version is another
// revocation than one of the whole tool.
func TestImportComparesEveryField(t *testing.T) {
	a := openStore(t)
	team(t, a, "Get the weather.")
	f, _ := Export(a)
	for name, edit := range map[string]func(p *Pin){
		"version": func(p *Pin) { p.Version = "1.0.1" },
		"signer":  func(p *Pin) { p.Signer = keyB },
	} {
		t.Run(name, func(t *testing.T) {
			g, _ := Export(a)
			for i := range g.Pins {
				if g.Pins[i].Tool == "get_alerts" {
					edit(&g.Pins[i])
				}
			}
			b := openStore(t)
			if _, err := Import(b, f, ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			var ce *ConflictError
			if _, err := Import(b, g, ImportOptions{}); !errors.As(err, &ce) || len(ce.Conflicts) != 1 || ce.Conflicts[0].Ref != "acme:weather/get_alerts" {
				t.Fatalf("%v", err)
			}
		})
	}
	// The database revoked every version of get_forecast; the lockfile
	// revokes version 1.0.0: recorded, not taken as the same.
	b := openStore(t)
	if _, err := Import(b, f, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	c := openStore(t)
	g, _ := Export(b)
	g.Revocations = []Revocation{{Server: "acme:weather", Tool: "get_forecast"}}
	if _, err := Import(c, g, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := Import(c, f, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range res.Revoked {
		found = found || (r.Tool == "get_forecast" && r.Version == "1.0.0")
	}
	if !found {
		t.Fatalf("the version's revocation was taken as the tool's: %+v", res.Revoked)
	}
	_ = pin.ItemTool
}
