package audit_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/registrytest"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/pin/lockfile"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/registry/audit"
	"github.com/etdi-dev/etdi/trust"
)

// genuine publishes acme's signed entry NAME@1.0.0 of npm package
// @acme/weather 1.0.0, its bundle hosted beside it, and returns its name
// and bundle.
func (w *world) genuine() (string, []byte) {
	w.t.Helper()
	name := w.Name("acme", "weather")
	b := w.NPMBundle(name, "@acme/weather", "1.0.0")
	path := "/" + w.Suffix + "/weather.etdi.json"
	w.Files.Put(path, b)
	w.publish(w.ServerJSON(name, "1.0.0", "@acme/weather", "1.0.0", path, b))
	return name, b
}

func judge(t *testing.T, e registry.Entry, o audit.Options) audit.Verdict {
	t.Helper()
	v := audit.Judge(context.Background(), e, o)
	if v.Status == audit.Error {
		t.Fatalf("not judged: %s", v.Error)
	}
	return v
}

// want checks a verdict's status and exit code, and that its error
// findings are of the kinds given (in any order).
func want(t *testing.T, v audit.Verdict, status audit.Status, exit int, kinds ...finding.Kind) {
	t.Helper()
	var got []finding.Kind
	for _, f := range v.Findings {
		if f.Severity == finding.Error {
			got = append(got, f.Kind)
		}
	}
	slices.Sort(got)
	got = slices.Compact(got)
	slices.Sort(kinds)
	if v.Status != status || v.ExitCode != exit || !slices.Equal(got, kinds) {
		t.Fatalf("verdict %s exit %d, error kinds %v; want %s exit %d, kinds %v\nfindings: %+v", v.Status, v.ExitCode, got, status, exit, kinds, v.Findings)
	}
	if v.Pass() != (exit == 0 && status != audit.Deleted) {
		t.Fatalf("Pass() = %v for %s exit %d", v.Pass(), status, exit)
	}
}

// A genuine entry: signed, the bundle served as named, verified, bound to
// the entry's package and name, and every tool approved in the pin store.
func TestGenuineApproved(t *testing.T) {
	w := newWorld(t)
	name, b := w.genuine()
	db := filepath.Join(t.TempDir(), "pins.db")
	server := w.Approve(db, b)
	e := w.entry(name, "1.0.0")

	v := judge(t, e, audit.Options{Trust: w.Policy, Pins: db})
	want(t, v, audit.Approved, 0)
	if !v.Signed || !v.SignatureVerified || !v.Bound || v.Server != server || v.Provider != "acme" || v.Approvals != "pins" {
		t.Fatalf("verdict %+v", v)
	}
	if len(v.Tools) != 1 || v.Tools[0].Name != "get_weather" || v.Tools[0].Status != pin.StatusOK {
		t.Fatalf("tools %+v", v.Tools)
	}
	if v.Name != name || v.Version != "1.0.0" || v.RegistryStatus != registry.StatusActive || v.BundleDigest != registry.Digest(b) {
		t.Fatalf("verdict %+v", v)
	}

	// Without approvals to look at, the same entry is verified only.
	want(t, judge(t, e, audit.Options{Trust: w.Policy}), audit.Verified, 0)
	// Against a team store that approved nothing yet, approval is required.
	v = judge(t, e, audit.Options{Trust: w.Policy, Pins: filepath.Join(t.TempDir(), "none.db")})
	want(t, v, audit.ApprovalRequired, finding.ExitApproval, finding.NewTool)
	// The audit wrote nothing.
	if _, err := pin.Open(filepath.Join(t.TempDir(), "none.db"), pin.Options{ReadOnly: true}); err == nil {
		t.Fatal("the audit created a pin database")
	}
}

// Harmless differences in how a publisher writes server.json (member
// order, whitespace, other publishers' metadata beside dev.etdi) change
// nothing.
func TestHarmlessServerJSONChanges(t *testing.T) {
	w := newWorld(t)
	name := w.Name("acme", "weather")
	b := w.NPMBundle(name, "@acme/weather", "1.0.0")
	w.Files.Put("/w.json", b)
	doc := `{ "$schema": "` + registrytest.SchemaURL + `",
    "version":"1.0.0",   "name": "` + name + `",
  "_meta": {"io.modelcontextprotocol.registry/publisher-provided": {"com.example.other": {"x": [1, 2]},
     "dev.etdi": {"digest": "` + registry.Digest(b) + `", "bundle": "` + w.Files.URL("/w.json") + `"}}},
  "packages": [{"transport": {"type": "stdio"}, "version": "1.0.0", "identifier": "@acme/weather", "registryType": "npm"}],
  "description": "Weather forecasts"
}`
	w.publish([]byte(doc))
	db := filepath.Join(t.TempDir(), "pins.db")
	w.Approve(db, b)
	want(t, judge(t, w.entry(name, "1.0.0"), audit.Options{Trust: w.Policy, Pins: db}), audit.Approved, 0)
}

// The genuine bundle attached to an entry of another namespace, with the
// same package: the bundle names the entry it was made for.
func TestBundleOnAnotherNamespace(t *testing.T) {
	w := newWorld(t)
	_, b := w.genuine()
	db := filepath.Join(t.TempDir(), "pins.db")
	w.Approve(db, b)
	evil := w.Name("evil", "weather")
	w.Files.Put("/evil.json", b)
	w.publish(w.ServerJSON(evil, "1.0.0", "@acme/weather", "1.0.0", "/evil.json", b))
	v := judge(t, w.entry(evil, "1.0.0"), audit.Options{Trust: w.Policy, Pins: db})
	want(t, v, audit.Blocked, finding.ExitImpersonation, finding.Impersonation)
	if v.Bound || !strings.Contains(v.Findings[0].Message, `made for registry entry "`+w.Name("acme", "weather")+`"`) {
		t.Fatalf("verdict %+v", v)
	}
}

// A bundle that names no registry entry, attached to an entry outside
// the namespaces the trust policy gives its provider: impersonation. In
// the provider's namespace it is the provider's.
func TestBundleOutsideProviderNamespaces(t *testing.T) {
	w := newWorld(t)
	if _, err := w.Policy.AddRegistryNamespaces("acme", "io.github.acme"+w.Suffix); err != nil {
		t.Fatal(err)
	}
	b := w.NPMBundle("", "@acme/weather", "1.0.0")
	w.Files.Put("/plain.json", b)
	own, evil := w.Name("acme", "weather"), w.Name("evil", "weather")
	w.publish(w.ServerJSON(own, "1.0.0", "@acme/weather", "1.0.0", "/plain.json", b))
	w.publish(w.ServerJSON(evil, "1.0.0", "@acme/weather", "1.0.0", "/plain.json", b))
	want(t, judge(t, w.entry(own, "1.0.0"), audit.Options{Trust: w.Policy}), audit.Verified, 0)
	v := judge(t, w.entry(evil, "1.0.0"), audit.Options{Trust: w.Policy})
	want(t, v, audit.Blocked, finding.ExitImpersonation, finding.Impersonation)
	if !strings.Contains(v.Findings[0].Message, "publishes only under io.github.acme"+w.Suffix) {
		t.Fatalf("finding %+v", v.Findings[0])
	}
}

// An entry whose npm package version differs from the one the bundle
// binds: the bundle was made for another release.
func TestPackageVersionDiffers(t *testing.T) {
	w := newWorld(t)
	name, b := w.genuine()
	db := filepath.Join(t.TempDir(), "pins.db")
	w.Approve(db, b)
	w.publish(w.ServerJSON(name, "1.0.1", "@acme/weather", "1.0.1", "/"+w.Suffix+"/weather.etdi.json", b))
	v := judge(t, w.entry(name, "1.0.1"), audit.Options{Trust: w.Policy, Pins: db})
	want(t, v, audit.Blocked, finding.ExitImpersonation, finding.Impersonation)
	if !strings.Contains(v.Findings[0].Message, "npm @acme/weather@1.0.1") {
		t.Fatalf("finding %+v", v.Findings[0])
	}
	// Another package name, same version: the same.
	w.publish(w.ServerJSON(name, "1.0.2", "@evil/weather", "1.0.0", "/"+w.Suffix+"/weather.etdi.json", b))
	want(t, judge(t, w.entry(name, "1.0.2"), audit.Options{Trust: w.Policy, Pins: db}), audit.Blocked, finding.ExitImpersonation, finding.Impersonation)
}

// An entry bound to its package by a genuine, approved bundle, whose
// launch runs more than the package: another npm registry, code loaded
// through NODE_OPTIONS. A host would run what the bundle never vouched
// for: impersonation, and never approved.
func TestLaunchRunsMoreThanThePackage(t *testing.T) {
	w := newWorld(t)
	name, b := w.genuine()
	db := filepath.Join(t.TempDir(), "pins.db")
	w.Approve(db, b)
	for i, extra := range []string{
		`"runtimeArguments": [{"type": "named", "name": "--registry", "value": "https://evil.example/"}]`,
		`"environmentVariables": [{"name": "NODE_OPTIONS", "value": "--require=/tmp/evil.js"}]`,
		`"registryBaseUrl": "https://registry.evil.example"`,
	} {
		version := fmt.Sprintf("1.0.%d", i+1)
		doc := string(w.ServerJSON(name, version, "@acme/weather", "1.0.0", "/"+w.Suffix+"/weather.etdi.json", b))
		doc = strings.Replace(doc, `"registryType"`, extra+`, "registryType"`, 1)
		w.publish([]byte(doc))
		v := judge(t, w.entry(name, version), audit.Options{Trust: w.Policy, Pins: db})
		want(t, v, audit.Blocked, finding.ExitImpersonation, finding.Impersonation)
		if v.Bound || !strings.Contains(v.Findings[0].Message, "more than the package") {
			t.Fatalf("%s: verdict %+v", extra, v)
		}
	}
}

// An MCPB entry is bound by the file's SHA-256: the bundle made for one
// file does not vouch for an entry whose fileSha256 names another, nor
// for an entry that adds an MCPB the bundle does not name.
func TestMCPBHashDiffers(t *testing.T) {
	w := newWorld(t)
	name := w.Name("acme", "weather")
	file := strings.Repeat("ab", 32)
	b := w.Bundle(name, "1.0.0", []any{map[string]any{"type": "mcpb", "name": "weather", "version": "1.0.0", "digest": "sha256:" + file}})
	w.Files.Put("/m.json", b)
	mcpbDoc := func(version, sha string) []byte {
		doc := `{"$schema": "` + registrytest.SchemaURL + `", "name": "` + name + `", "version": "` + version + `", "description": "Weather forecasts",
  "packages": [{"registryType": "mcpb", "identifier": "https://example.com/weather.mcpb", "version": "1.0.0", "fileSha256": "` + sha + `", "transport": {"type": "stdio"}}],
  "_meta": {"io.modelcontextprotocol.registry/publisher-provided": {"dev.etdi": {"bundle": "` + w.Files.URL("/m.json") + `", "digest": "` + registry.Digest(b) + `"}}}}`
		return []byte(doc)
	}
	w.publish(mcpbDoc("1.0.0", file))
	w.publish(mcpbDoc("1.0.1", strings.Repeat("cd", 32)))
	want(t, judge(t, w.entry(name, "1.0.0"), audit.Options{Trust: w.Policy}), audit.Verified, 0)
	v := judge(t, w.entry(name, "1.0.1"), audit.Options{Trust: w.Policy})
	want(t, v, audit.Blocked, finding.ExitImpersonation, finding.Impersonation)
	if !strings.Contains(v.Findings[0].Message, "the bundle names another file") {
		t.Fatalf("finding %+v", v.Findings[0])
	}

	// An npm-only bundle on an entry that also lists an MCPB.
	other := w.Name("acme", "both")
	nb := w.NPMBundle(other, "@acme/weather", "1.0.0")
	w.Files.Put("/both.json", nb)
	doc := `{"$schema": "` + registrytest.SchemaURL + `", "name": "` + other + `", "version": "1.0.0", "description": "Weather forecasts",
  "packages": [{"registryType": "npm", "identifier": "@acme/weather", "version": "1.0.0", "transport": {"type": "stdio"}},
    {"registryType": "mcpb", "identifier": "https://example.com/weather.mcpb", "version": "1.0.0", "fileSha256": "` + file + `", "transport": {"type": "stdio"}}],
  "_meta": {"io.modelcontextprotocol.registry/publisher-provided": {"dev.etdi": {"bundle": "` + w.Files.URL("/both.json") + `", "digest": "` + registry.Digest(nb) + `"}}}}`
	w.publish([]byte(doc))
	v = judge(t, w.entry(other, "1.0.0"), audit.Options{Trust: w.Policy})
	want(t, v, audit.Blocked, finding.ExitImpersonation, finding.Impersonation)
	if !strings.Contains(v.Findings[0].Message, "no mcpb artifact") {
		t.Fatalf("finding %+v", v.Findings[0])
	}
}

// An entry that names no bundle is decided by the trust policy's
// unsigned rule.
func TestUnsignedEntry(t *testing.T) {
	w := newWorld(t)
	name := w.Name("acme", "plain")
	w.publish(w.ServerJSON(name, "1.0.0", "@acme/plain", "1.0.0", "", nil))
	e := w.entry(name, "1.0.0")
	db := filepath.Join(t.TempDir(), "pins.db")

	v := judge(t, e, audit.Options{Trust: w.Policy, Pins: db})
	want(t, v, audit.Blocked, finding.ExitSignature, finding.UnsignedTool)
	if v.Signed {
		t.Fatal("signed")
	}
	w.Policy.Unsigned = trust.Warn
	v = judge(t, e, audit.Options{Trust: w.Policy, Pins: db})
	want(t, v, audit.Unsigned, 0)
	if len(v.Findings) != 1 || v.Findings[0].Kind != finding.UnsignedTool || v.Findings[0].Severity != finding.Warning {
		t.Fatalf("findings %+v", v.Findings)
	}
	w.Policy.Unsigned = trust.Allow
	v = judge(t, e, audit.Options{Trust: w.Policy, Pins: db})
	want(t, v, audit.Unsigned, 0)
	if len(v.Findings) != 0 {
		t.Fatalf("findings %+v", v.Findings)
	}
}

// A server revoked in the team store is blocked, though its entry and
// bundle are genuine.
func TestRevokedInStore(t *testing.T) {
	w := newWorld(t)
	name, b := w.genuine()
	db := filepath.Join(t.TempDir(), "pins.db")
	server := w.Approve(db, b)
	s, err := pin.Open(db, pin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Revoke(pin.Revocation{Server: server, Tool: "get_weather", By: "security", Reason: "exfiltrates"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	v := judge(t, w.entry(name, "1.0.0"), audit.Options{Trust: w.Policy, Pins: db})
	want(t, v, audit.Blocked, finding.ExitRevoked, finding.Revoked)
}

// The URL the entry names serves other bytes than the bundle whose digest
// the entry gives: a validly signed bundle of another entry, or nothing.
func TestBundleURLServesOtherBytes(t *testing.T) {
	w := newWorld(t)
	name, b := w.genuine()
	db := filepath.Join(t.TempDir(), "pins.db")
	w.Approve(db, b)
	e := w.entry(name, "1.0.0")
	other := w.NPMBundle(name, "@acme/weather", "1.0.0", "get_weather", "send_mail")
	w.Files.Put("/"+w.Suffix+"/weather.etdi.json", other)
	v := judge(t, e, audit.Options{Trust: w.Policy, Pins: db})
	want(t, v, audit.Blocked, finding.ExitSignature, finding.BundleInvalid)
	if v.SignatureVerified || !strings.Contains(v.Findings[0].Message, "digest") {
		t.Fatalf("verdict %+v", v)
	}
	w.Files.Put("/"+w.Suffix+"/weather.etdi.json", append(append([]byte{}, b...), ' '))
	want(t, judge(t, e, audit.Options{Trust: w.Policy, Pins: db}), audit.Blocked, finding.ExitSignature, finding.BundleInvalid)
	w.Files.Remove("/" + w.Suffix + "/weather.etdi.json")
	want(t, judge(t, e, audit.Options{Trust: w.Policy, Pins: db}), audit.Blocked, finding.ExitSignature, finding.BundleInvalid)
}

// A bundle signed by a key the policy does not trust.
func TestBundleOfUntrustedKey(t *testing.T) {
	w := newWorld(t)
	name, _ := w.genuine()
	e := w.entry(name, "1.0.0")
	other := newWorld(t)
	v := judge(t, e, audit.Options{Trust: other.Policy})
	want(t, v, audit.Blocked, finding.ExitSignature, finding.SignatureInvalid)
}

// Approvals from a team lockfile, as from the store it was exported from.
func TestLockfileApprovals(t *testing.T) {
	w := newWorld(t)
	name, b := w.genuine()
	db := filepath.Join(t.TempDir(), "pins.db")
	w.Approve(db, b)
	s, err := pin.Open(db, pin.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	lf, err := lockfile.Export(s)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	a, err := audit.New(audit.Options{Trust: w.Policy, Lockfile: lf})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	v := a.Judge(context.Background(), w.entry(name, "1.0.0"))
	want(t, v, audit.Approved, 0)
	if v.Approvals != "lockfile" {
		t.Fatalf("approvals %q", v.Approvals)
	}
	empty := &lockfile.File{Servers: []lockfile.ServerEntry{}, Pins: []lockfile.Pin{}, Revocations: []lockfile.Revocation{}}
	want(t, audit.Judge(context.Background(), w.entry(name, "1.0.0"), audit.Options{Trust: w.Policy, Lockfile: empty}),
		audit.ApprovalRequired, finding.ExitApproval, finding.NewTool)
	if _, err := audit.New(audit.Options{Trust: w.Policy, Lockfile: lf, Pins: db}); err == nil {
		t.Fatal("a pin store and a lockfile together were accepted")
	}
}

// A deleted entry, listed by a walk with updated_since, is reported
// deleted and not judged; a deprecated one is judged as any other.
func TestDeletedAndDeprecated(t *testing.T) {
	w := newWorld(t)
	since := time.Now().Add(-time.Minute)
	name, b := w.genuine()
	db := filepath.Join(t.TempDir(), "pins.db")
	w.Approve(db, b)
	old := w.Name("acme", "old")
	w.publish(w.ServerJSON(old, "1.0.0", "@acme/old", "1.0.0", "", nil))
	ctx := context.Background()
	if err := w.reg.SetStatus(ctx, old, "1.0.0", registry.StatusDeleted); err != nil {
		t.Fatal(err)
	}
	if err := w.reg.SetStatus(ctx, name, "1.0.0", registry.StatusDeprecated); err != nil {
		t.Fatal(err)
	}
	a, err := audit.New(audit.Options{Trust: w.Policy, Pins: db})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	got := map[string]audit.Verdict{}
	sum, err := a.Audit(ctx, w.client, registry.ListOptions{UpdatedSince: since, Search: w.Suffix}, 2, func(v audit.Verdict) error {
		got[v.Name] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("verdicts %+v", got)
	}
	want(t, got[old], audit.Deleted, 0)
	want(t, got[name], audit.Approved, 0)
	if got[name].RegistryStatus != registry.StatusDeprecated || got[old].RegistryStatus != registry.StatusDeleted {
		t.Fatalf("registry statuses %q %q", got[name].RegistryStatus, got[old].RegistryStatus)
	}
	if sum.Deleted != 1 || sum.Approved != 1 || sum.ExitCode() != 0 {
		t.Fatalf("summary %+v", sum)
	}
}

// An auditor that keeps judging (as a registry serving hosts does) lets a
// revocation through: the revocation waits for the pin database at most
// MaxHold, and the next judgement sees it.
func TestRevocationReachesARunningAuditor(t *testing.T) {
	w := newWorld(t)
	name, b := w.genuine()
	db := filepath.Join(t.TempDir(), "pins.db")
	server := w.Approve(db, b)
	a, err := audit.New(audit.Options{Trust: w.Policy, Pins: db})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	e := w.entry(name, "1.0.0")
	want(t, a.Judge(context.Background(), e), audit.Approved, 0)
	s, err := pin.Open(db, pin.Options{LockTimeout: 10 * audit.MaxHold})
	if err != nil {
		t.Fatalf("the auditor held the pin database: %v", err)
	}
	if err := s.Revoke(pin.Revocation{Server: server, Tool: "get_weather", By: "security", Reason: "compromised"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	want(t, a.Judge(context.Background(), e), audit.Blocked, finding.ExitRevoked, finding.Revoked)
}

// dev.etdi metadata that is present but malformed (a URL that is not
// https, a digest of another form, an unknown member) makes the entry
// blocked, never unsigned: the unsigned rule must not decide an entry that
// claims a bundle.
func TestMalformedEtdiMeta(t *testing.T) {
	w := newWorld(t)
	w.Policy.Unsigned = trust.Allow
	for i, meta := range []string{
		`{"bundle": "ftp://example.com/b.json", "digest": "sha256:` + strings.Repeat("0", 64) + `"}`,
		`{"bundle": "https://example.com/b.json", "digest": "md5:00"}`,
		`{"bundle": "https://example.com/b.json", "digest": "sha256:` + strings.Repeat("0", 64) + `", "trusted": true}`,
		`"https://example.com/b.json"`,
	} {
		name := w.Name("acme", "meta"+string(rune('a'+i)))
		doc := `{"$schema": "` + registrytest.SchemaURL + `", "name": "` + name + `", "version": "1.0.0", "description": "x",
  "_meta": {"io.modelcontextprotocol.registry/publisher-provided": {"dev.etdi": ` + meta + `}}}`
		w.publish([]byte(doc))
		v := judge(t, w.entry(name, "1.0.0"), audit.Options{Trust: w.Policy})
		want(t, v, audit.Blocked, finding.ExitSignature, finding.BundleInvalid)
		if !v.Signed {
			t.Fatalf("%s: not signed", meta)
		}
	}
}
