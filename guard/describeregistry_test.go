package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/trust"
)

// These tests decide what guard makes of a registry entry. The registry
// here is a hostile one written for each case (it may send anything); the
// CLI's scripts check the same decisions against the real registry.

const npmIntegrity = "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="

// fakeRegistry serves entries (server.json documents by name@version,
// wrapped as the registry API wraps them, with status) and files.
type fakeRegistry struct {
	srv     *httptest.Server
	entries map[string]string // name@version: server.json
	status  map[string]string
	files   map[string][]byte
}

func newFakeRegistry(t *testing.T) *fakeRegistry {
	f := &fakeRegistry{entries: map[string]string{}, status: map[string]string{}, files: map[string][]byte{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := f.files[r.URL.Path]; ok {
			w.Write(b)
			return
		}
		rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/v0.1/servers/")
		esc, version, ok2 := strings.Cut(rest, "/versions/")
		name := strings.ReplaceAll(esc, "%2F", "/")
		doc, found := f.entries[name+"@"+version]
		if !ok || !ok2 || !found {
			http.NotFound(w, r)
			return
		}
		status := f.status[name+"@"+version]
		if status == "" {
			status = "active"
		}
		fmt.Fprintf(w, `{"server": %s, "_meta": {"io.modelcontextprotocol.registry/official": {"status": %q, "statusMessage": "moved to io.github.acme/weather2\u001b[2J", "isLatest": true}}}`, doc, status)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeRegistry) client(t *testing.T) *registry.Client {
	c, err := registry.NewClient(f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// npmEntry is a server.json of one npm package, with dev.etdi naming
// bundleURL and digest when bundleURL is not "".
func npmEntry(name, version, pkgVersion, bundleURL, digest string) string {
	meta := ""
	if bundleURL != "" {
		meta = fmt.Sprintf(`, "_meta": {"io.modelcontextprotocol.registry/publisher-provided": {"dev.etdi": {"bundle": %q, "digest": %q}}}`, bundleURL, digest)
	}
	return fmt.Sprintf(`{"name": %q, "version": %q, "description": "Weather",
  "packages": [
    {"registryType": "npm", "identifier": "@acme/weather", "version": %q, "transport": {"type": "stdio"},
     "packageArguments": [{"type": "named", "name": "--profile", "isSecret": true}],
     "environmentVariables": [{"name": "WEATHER_API_KEY", "isRequired": true, "isSecret": true, "description": "Your key"},
                              {"name": "UNITS", "default": "metric"}]}],
  "remotes": [{"type": "streamable-http", "url": "https://mcp.acme.example/weather"}]%s}`, name, version, pkgVersion, meta)
}

// registryBundle signs a one-tool bundle of acme/weather for registry
// name reg, bound to npm @acme/weather@pkgVersion and the endpoint
// https://mcp.acme.example/weather, by a key the returned policy trusts.
func registryBundle(t *testing.T, reg, pkgVersion string) ([]byte, *trust.Policy) {
	return trustedBundle(t, func(m *etdi.Manifest) {
		m.Server.RegistryName = reg
		m.Server.Endpoints = []string{"https://mcp.acme.example/weather"}
		m.Server.Artifacts = []etdi.Artifact{{Type: "npm", Name: "@acme/weather", Version: pkgVersion, Digest: npmIntegrity}}
	})
}

var secretKey = "wk-" + strings.Repeat("7Qz", 10)

// An npm entry is started as a host starts it: npx -y at the exact
// version, its environment set on purpose, an input marked secret a
// secret and a credential, never part of the label; a required input not
// given is an error naming the --input that gives it.
func TestDescribeRegistryPackage(t *testing.T) {
	f := newFakeRegistry(t)
	f.entries["io.github.acme/weather@1.0.0"] = npmEntry("io.github.acme/weather", "1.0.0", "1.2.0", "", "")
	ctx := context.Background()
	rs, err := DescribeRegistry(ctx, f.client(t), "io.github.acme/weather", "1.0.0", RegistryOptions{Inputs: registry.Inputs{"WEATHER_API_KEY": secretKey, "--profile": "blue-horizon-42"}, Environ: []string{"HOME=/home/u"}})
	if err != nil {
		t.Fatal(err)
	}
	sp := rs.Spec
	if got := strings.Join(sp.Command, " "); got != "npx -y @acme/weather@1.2.0 --profile blue-horizon-42" {
		t.Errorf("command %q", got)
	}
	if !slices.Contains(sp.Env, "WEATHER_API_KEY="+secretKey) || !slices.Contains(sp.Env, "UNITS=metric") || !slices.Contains(sp.Env, "HOME=/home/u") {
		t.Errorf("env %q", sp.Env)
	}
	if !slices.Equal(sp.KeepEnv, []string{"UNITS", "WEATHER_API_KEY"}) {
		t.Errorf("keep %q", sp.KeepEnv)
	}
	if !sp.Secrets.Holds(secretKey) || !slices.ContainsFunc(sp.Credentials, func(c Credential) bool { return c.Value == secretKey }) {
		t.Errorf("the key is not a secret and a credential: %+v", sp.Credentials)
	}
	if sp.Name != "io.github.acme/weather" || rs.Package == nil || rs.PackageIndex != 1 || rs.Meta != nil || rs.Bundle != nil || rs.Blocked() {
		t.Errorf("described %+v", rs)
	}
	// An argument marked secret is one, though neither its name nor its
	// value looks like a credential.
	if !sp.Secrets.Holds("blue-horizon-42") || !slices.ContainsFunc(sp.Credentials, func(c Credential) bool { return c.Value == "blue-horizon-42" && c.Where == "input --profile" }) {
		t.Errorf("the secret argument is not a secret and a credential: %+v", sp.Credentials)
	}
	if strings.Contains(sp.Label, secretKey) || rs.Chosen() != "package 1 (npm @acme/weather@1.2.0)" {
		t.Errorf("label %q, chosen %q", sp.Label, rs.Chosen())
	}
	// The server is started with what the entry sets, not etdi's secrets.
	l := sp.Server()
	if !slices.Contains(l.Env, "WEATHER_API_KEY="+secretKey) {
		t.Errorf("launch env %q", l.Env)
	}

	_, err = DescribeRegistry(ctx, f.client(t), "io.github.acme/weather", "1.0.0", RegistryOptions{})
	if err == nil || !strings.Contains(err.Error(), "input WEATHER_API_KEY is required (Your key): give it with --input WEATHER_API_KEY=VALUE") {
		t.Errorf("missing input: %v", err)
	}

	// The remote, chosen.
	rs, err = DescribeRegistry(ctx, f.client(t), "io.github.acme/weather", "1.0.0", RegistryOptions{Remote: 1})
	if err != nil || rs.Spec.URL != "https://mcp.acme.example/weather" || len(rs.Spec.Command) != 0 || rs.Chosen() != "remote 1 (https://mcp.acme.example/weather)" {
		t.Fatalf("remote: %v %+v", err, rs)
	}
	for _, o := range []RegistryOptions{{Package: 2}, {Remote: 2}, {Package: 1, Remote: 1}} {
		if _, err := DescribeRegistry(ctx, f.client(t), "io.github.acme/weather", "1.0.0", o); err == nil {
			t.Errorf("%+v: chosen", o)
		}
	}
}

// A hostile entry is refused before anything starts: a runner that is
// not its package type's, an identifier or version a runner would read
// as an option. A deleted entry is refused; a deprecated one is checked
// with a note, its message escaped by whoever prints it but bounded here.
func TestDescribeRegistryHostile(t *testing.T) {
	f := newFakeRegistry(t)
	ok := npmEntry("io.github.acme/weather", "1.0.0", "1.2.0", "", "")
	for v, doc := range map[string]string{
		"sh":      strings.Replace(ok, `"registryType": "npm",`, `"registryType": "npm", "runtimeHint": "/bin/sh",`, 1),
		"option":  strings.Replace(ok, `"identifier": "@acme/weather"`, `"identifier": "--registry=https://evil.example"`, 1),
		"version": strings.Replace(ok, `"version": "1.2.0"`, `"version": "--ignore-scripts=false"`, 1),
		"runarg":  strings.Replace(ok, `"transport": {"type": "stdio"},`, `"transport": {"type": "stdio"}, "runtimeArguments": [{"type": "named", "name": "node_modules"}],`, 1),
	} {
		f.entries["io.github.acme/weather@"+v] = strings.Replace(doc, `"version": "1.0.0"`, `"version": "`+v+`"`, 1)
		rs, err := DescribeRegistry(context.Background(), f.client(t), "io.github.acme/weather", v, RegistryOptions{Inputs: registry.Inputs{"WEATHER_API_KEY": secretKey}})
		if err == nil {
			t.Errorf("%s: described as %q", v, rs.Spec.Command)
		}
	}
	f.entries["io.github.acme/weather@1.0.0"] = ok
	f.status["io.github.acme/weather@1.0.0"] = "deleted"
	_, err := DescribeRegistry(context.Background(), f.client(t), "io.github.acme/weather", "1.0.0", RegistryOptions{Inputs: registry.Inputs{"WEATHER_API_KEY": secretKey}})
	if !errors.Is(err, ErrDeleted) {
		t.Errorf("deleted: %v", err)
	}
	f.status["io.github.acme/weather@1.0.0"] = "deprecated"
	rs, err := DescribeRegistry(context.Background(), f.client(t), "io.github.acme/weather", "1.0.0", RegistryOptions{Inputs: registry.Inputs{"WEATHER_API_KEY": secretKey}})
	if err != nil || !strings.HasPrefix(rs.Deprecated(), "the registry marks io.github.acme/weather@1.0.0 deprecated (moved to io.github.acme/weather2") {
		t.Errorf("deprecated: %v %q", err, rs.Deprecated())
	}
	f.status["io.github.acme/weather@1.0.0"] = "active"
	if rs, err := DescribeRegistry(context.Background(), f.client(t), "io.github.acme/weather", "1.0.0", RegistryOptions{Inputs: registry.Inputs{"WEATHER_API_KEY": secretKey}}); err != nil || rs.Deprecated() != "" {
		t.Errorf("active: %v", err)
	}
}

// The bundle an entry names is fetched and must be the file its digest
// names: another file, one that cannot be fetched, or dev.etdi metadata
// that is malformed are bundle_invalid (exit 10) and block the server
// before it starts, never an unsigned entry. The same entry with its
// members reordered and re-indented is the same entry.
func TestDescribeRegistryBundle(t *testing.T) {
	f := newFakeRegistry(t)
	bundle, _ := registryBundle(t, "io.github.acme/weather", "1.2.0")
	f.files["/weather.etdi.json"] = bundle
	f.files["/other.etdi.json"] = append(append([]byte{}, bundle...), ' ')
	in := RegistryOptions{Inputs: registry.Inputs{"WEATHER_API_KEY": secretKey}}
	name := "io.github.acme/weather"
	digest := registry.Digest(bundle)
	cases := map[string]struct {
		doc     string
		blocked bool
	}{
		"genuine":   {npmEntry(name, "genuine", "1.2.0", f.srv.URL+"/weather.etdi.json", digest), false},
		"reordered": {reorder(t, npmEntry(name, "reordered", "1.2.0", f.srv.URL+"/weather.etdi.json", digest)), false},
		"other":     {npmEntry(name, "other", "1.2.0", f.srv.URL+"/other.etdi.json", digest), true},
		"missing":   {npmEntry(name, "missing", "1.2.0", f.srv.URL+"/gone.etdi.json", digest), true},
		"digest":    {npmEntry(name, "digest", "1.2.0", f.srv.URL+"/weather.etdi.json", "sha256:abc"), true},
		"remote":    {npmEntry(name, "remote", "1.2.0", "http://192.0.2.1/weather.etdi.json", digest), true},
	}
	for v, c := range cases {
		f.entries[name+"@"+v] = c.doc
		rs, err := DescribeRegistry(context.Background(), f.client(t), name, v, in)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if rs.Blocked() != c.blocked {
			t.Errorf("%s: blocked %v, findings %+v", v, rs.Blocked(), rs.Findings)
		}
		if c.blocked {
			r := rs.Report()
			if len(r.Findings) != 1 || r.Findings[0].Kind != finding.BundleInvalid || r.ExitCode() != 10 || rs.Bundle != nil {
				t.Errorf("%s: report %+v exit %d", v, r.Findings, r.ExitCode())
			}
			continue
		}
		if string(rs.Bundle) != string(bundle) || rs.Meta == nil || rs.Meta.Bundle != f.srv.URL+"/weather.etdi.json" {
			t.Errorf("%s: bundle %d bytes, meta %+v", v, len(rs.Bundle), rs.Meta)
		}
		opts := rs.Options(Options{})
		if string(opts.Bundle) != string(bundle) || opts.BundleSource != rs.Meta.Bundle || opts.Registry != rs || opts.Name != name || opts.RegistryName != name {
			t.Errorf("%s: options %+v", v, opts)
		}
	}
}

// reorder returns a JSON document with its object members in reverse
// order, indented otherwise.
func reorder(t *testing.T, doc string) string {
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(v, "", "\t") // sorted keys: another order than written
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A verified bundle must be the one of the entry checked: named for
// another entry (the same bundle attached to another namespace's entry),
// bound to another version of the npm package, or to endpoints that do
// not cover the remote checked, it is impersonation (12) naming both
// sides, and nothing is compared. The genuine entry's bundle passes.
func TestAttackRegistryBinding(t *testing.T) {
	f := newFakeRegistry(t)
	bundle, p := registryBundle(t, "io.github.acme/weather", "1.2.0")
	f.files["/weather.etdi.json"] = bundle
	url, digest := f.srv.URL+"/weather.etdi.json", registry.Digest(bundle)
	remoteOther := strings.Replace(npmEntry("io.github.acme/weather", "3.0.0", "1.2.0", url, digest), "https://mcp.acme.example/weather", "https://mcp.evil.example/weather", 1)
	f.entries["io.github.acme/weather@1.0.0"] = npmEntry("io.github.acme/weather", "1.0.0", "1.2.0", url, digest)
	f.entries["io.github.evil/weather@1.0.0"] = npmEntry("io.github.evil/weather", "1.0.0", "1.2.0", url, digest)
	f.entries["io.github.acme/weather@2.0.0"] = npmEntry("io.github.acme/weather", "2.0.0", "1.2.1", url, digest)
	f.entries["io.github.acme/weather@3.0.0"] = remoteOther
	for _, c := range []struct {
		ref    string
		remote int
		want   string // "" bound
	}{
		{"io.github.acme/weather@1.0.0", 0, ""},
		{"io.github.acme/weather@1.0.0", 1, ""},
		{"io.github.evil/weather@1.0.0", 0, `it was made for registry entry "io.github.acme/weather" and is checked for registry entry "io.github.evil/weather"`},
		{"io.github.acme/weather@2.0.0", 0, "npm @acme/weather@1.2.1: the bundle names npm @acme/weather@1.2.0"},
		{"io.github.acme/weather@3.0.0", 1, "remote https://mcp.evil.example/weather: not covered by the bundle's endpoints https://mcp.acme.example/weather"},
	} {
		name, version, _ := strings.Cut(c.ref, "@")
		rs, err := DescribeRegistry(context.Background(), f.client(t), name, version, RegistryOptions{Inputs: registry.Inputs{"WEATHER_API_KEY": secretKey}, Remote: c.remote})
		if err != nil {
			t.Fatal(err)
		}
		r, err := Observe(context.Background(), nil, rs.Options(Options{Policy: p}))
		if err != nil {
			t.Fatal(err)
		}
		if c.want == "" {
			if r.Blocked() || r.ExitCode() != 0 || r.Server != "acme:"+r.Verification.Statement.Server.Name {
				t.Errorf("%s: %+v exit %d", c.ref, r.Findings, r.ExitCode())
			}
			continue
		}
		if !r.Blocked() || r.ExitCode() != 12 || len(r.Findings) != 1 || r.Findings[0].Kind != finding.Impersonation ||
			!strings.Contains(r.Findings[0].Message, c.want) {
			t.Errorf("%s: blocked %v exit %d %+v", c.ref, r.Blocked(), r.ExitCode(), r.Findings)
		}
	}
}

// CheckRegistry runs nothing its entry's bundle does not bind: a package
// of another version than the bundle's is refused (12) before its command
// starts, and so is an entry whose bundle is not the file named (10);
// the genuine entry's command is started.
func TestAttackRegistryPrecheckStartsNothing(t *testing.T) {
	f := newFakeRegistry(t)
	bundle, p := registryBundle(t, "io.github.acme/weather", "1.2.0")
	f.files["/weather.etdi.json"] = bundle
	url, digest := f.srv.URL+"/weather.etdi.json", registry.Digest(bundle)
	f.entries["io.github.acme/weather@1.0.0"] = npmEntry("io.github.acme/weather", "1.0.0", "1.2.0", url, digest)
	f.entries["io.github.acme/weather@2.0.0"] = npmEntry("io.github.acme/weather", "2.0.0", "1.2.1", url, digest)
	f.entries["io.github.acme/weather@3.0.0"] = npmEntry("io.github.acme/weather", "3.0.0", "1.2.0", url, "sha256:"+strings.Repeat("0", 64))
	dir := t.TempDir()
	for _, c := range []struct {
		version string
		exit    int // 0: started
	}{{"2.0.0", 12}, {"3.0.0", 10}, {"1.0.0", 0}} {
		rs, err := DescribeRegistry(context.Background(), f.client(t), "io.github.acme/weather", c.version, RegistryOptions{Inputs: registry.Inputs{"WEATHER_API_KEY": secretKey}})
		if err != nil {
			t.Fatal(err)
		}
		marker := filepath.Join(dir, c.version)
		rs.Spec.Command = []string{script(t, dir, "run-"+c.version, "touch "+marker)}
		r, err := CheckRegistry(context.Background(), rs, Options{Policy: p, Pins: filepath.Join(dir, "pins.db")}, FetchOptions{StartTimeout: time.Minute, Timeout: time.Minute})
		_, statErr := os.Stat(marker)
		started := statErr == nil
		if c.exit == 0 {
			if !started || err == nil {
				t.Errorf("%s: the genuine entry's command was not started (%v)", c.version, err)
			}
			continue
		}
		if err != nil || started || r.ExitCode() != c.exit {
			t.Errorf("%s: started %v, err %v, report %+v", c.version, started, err, r)
		}
	}
}

// FuzzDescribeRegistryEntry: whatever server.json a registry sends, the
// launch etdi builds from it runs a runner of the package's type (never a
// program the entry names), a remote is reached by URL alone, and the
// label never holds a value given for an input. The bundle it
// names is never fetched here: the client refuses every request.
func FuzzDescribeRegistryEntry(f *testing.F) {
	f.Add(npmEntry("io.github.acme/weather", "1.0.0", "1.2.0", "", ""))
	f.Add(npmEntry("io.github.acme/weather", "1.0.0", "1.2.0", "https://acme.example/w.etdi.json", "sha256:"+strings.Repeat("ab", 32)))
	f.Add(strings.Replace(npmEntry("io.github.acme/weather", "1.0.0", "1.2.0", "", ""), `"registryType": "npm",`, `"registryType": "npm", "runtimeHint": "/bin/sh",`, 1))
	f.Add(`{"name": "io.github.acme/w", "version": "1", "packages": [{"registryType": "oci", "identifier": "ghcr.io/acme/w:1.0", "transport": {"type": "stdio"},
	  "runtimeArguments": [{"type": "named", "name": "-v", "value": "/:/host"}], "environmentVariables": [{"name": "K", "isSecret": true}]}]}`)
	f.Add(`{"name": "io.github.acme/w", "version": "1", "packages": [{"registryType": "pypi", "identifier": "acme-w", "version": "2.0", "runtimeHint": "pipx", "transport": {"type": "stdio"},
	  "packageArguments": [{"type": "positional", "valueHint": "dir", "isSecret": true}]}]}`)
	f.Add(`{"name": "io.github.acme/w", "version": "1", "remotes": [{"type": "streamable-http", "url": "https://{host}/mcp", "variables": {"host": {"isSecret": true}},
	  "headers": [{"name": "X-Key", "isSecret": true, "value": "{key}", "variables": {"key": {"isSecret": true}}}]}]}`)
	const secret = "s3cret-Input-Value-91"
	refuse := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("no network here") })}
	f.Fuzz(func(t *testing.T, doc string) {
		s, err := registry.ParseServerJSON([]byte(doc))
		if err != nil {
			return
		}
		in := registry.Inputs{}
		for _, p := range s.Packages {
			for _, e := range p.EnvironmentVariables {
				in[e.Name] = secret
			}
			for _, a := range append(append([]registry.Argument{}, p.RuntimeArguments...), p.PackageArguments...) {
				in[a.Name], in[a.ValueHint] = secret, secret
			}
		}
		for _, r := range s.Remotes {
			for _, h := range r.Headers {
				in[h.Name] = secret
			}
			for n := range r.Variables {
				in[n] = secret
			}
		}
		rs, err := DescribeRegistryEntry(context.Background(), &registry.Entry{Server: s}, RegistryOptions{Inputs: in, HTTP: refuse})
		if err != nil {
			return
		}
		if strings.Contains(rs.Spec.Label, secret) || strings.Contains(rs.Chosen(), secret) {
			t.Fatalf("label %q shows a secret input", rs.Spec.Label)
		}
		if rs.Package == nil {
			if len(rs.Spec.Command) != 0 || rs.Spec.URL == "" {
				t.Fatalf("a remote described as %q %q", rs.Spec.Command, rs.Spec.URL)
			}
			return
		}
		if !slices.Contains(registry.Runners[rs.Package.RegistryType], rs.Spec.Command[0]) {
			t.Fatalf("%s package started with %q", rs.Package.RegistryType, rs.Spec.Command[0])
		}
		if rs.Bundle != nil {
			t.Fatal("a bundle was fetched without a network")
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
