package guard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/redact"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/verify"
)

// RegistryOptions say how a registry entry's server is described
// ([DescribeRegistry]).
type RegistryOptions struct {
	// Inputs are the values given for the entry's inputs (environment
	// variables, headers, arguments, URL variables), keyed as
	// [registry.Inputs] says.
	Inputs registry.Inputs
	// Package chooses the entry's package to check, 1 the first of its
	// packages; Remote its remote, 1 the first. Both 0: the first package
	// etdi starts, else the first remote. At most one may be set.
	Package, Remote int
	// HTTP fetches the bundle the entry names; nil: a client that times
	// out after [registry.RequestTimeout] and refuses redirects away from
	// https.
	HTTP *http.Client
	// Environ is the environment a package's command starts from (nil:
	// none but what the entry sets).
	Environ []string
	// Name is what the server is pinned under without a bundle; "" the
	// entry's name (unsigned:io.github.acme/weather).
	Name string
}

// RegistryServer is a registry entry's server as a host would run it:
// the entry, the package or remote chosen, the launch built from it
// (its Spec), and the bundle the entry names, fetched and checked against
// the entry's digest. [RegistryServer.Options] turns it into the options
// of [Check].
type RegistryServer struct {
	// Entry is the registry's entry.
	Entry *registry.Entry
	// Package is the package chosen (nil for a remote) and PackageIndex
	// its position, 1 the first; Remote and RemoteIndex likewise.
	Package      *registry.Package
	PackageIndex int
	Remote       *registry.Transport
	RemoteIndex  int
	// Spec describes the server as the host starts or reaches it: the
	// package's command line and environment, or the remote's URL and
	// headers, their values secrets as a host configuration entry's are.
	Spec *ServerSpec
	// Meta is the entry's dev.etdi metadata; nil for an unsigned entry.
	Meta *registry.EtdiMeta
	// Bundle is the bundle Meta names, fetched and of Meta's digest; nil
	// for an unsigned entry or when it could not be fetched (Findings).
	Bundle []byte
	// Findings are about the entry itself: its dev.etdi metadata
	// malformed, its bundle that could not be fetched or is not the file
	// the digest names (bundle_invalid). An error among them blocks the
	// server before it is started ([RegistryServer.Blocked]).
	Findings []finding.Finding
}

// ErrDeleted is returned by [DescribeRegistry] for an entry the registry
// marks deleted: it is not checked, and no host should install it.
var ErrDeleted = errors.New("the registry marks this entry deleted")

// DescribeRegistry fetches the entry of server name at version ("" the
// latest) from the registry c and describes its server as a host builds
// it from server.json ([registry.Package.Command], [registry.Transport.Remote]):
// the package or remote o chooses, with o.Inputs. An entry that carries
// dev.etdi metadata has its bundle fetched ([registry.FetchBundle]); a
// bundle that cannot be fetched or is not the one the digest names is a
// bundle_invalid finding (exit 10), never an unsigned entry. An entry
// without the metadata is unsigned, and the trust policy's unsigned rule
// decides it.
//
// A deleted entry is [ErrDeleted]. A package etdi refuses to start (a
// runner that is not its type's, an identifier that is not a package
// name, a required input not given) is an error naming what is wrong,
// before anything is started.
func DescribeRegistry(ctx context.Context, c *registry.Client, name, version string, o RegistryOptions) (*RegistryServer, error) {
	if c == nil {
		return nil, errors.New("guard: no registry client")
	}
	e, err := c.Get(ctx, name, version)
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", c.BaseURL, err)
	}
	return DescribeRegistryEntry(ctx, e, o)
}

// DescribeRegistryEntry is [DescribeRegistry] for an entry already read.
func DescribeRegistryEntry(ctx context.Context, e *registry.Entry, o RegistryOptions) (*RegistryServer, error) {
	s := e.Server
	ref := s.Name + "@" + s.Version
	if e.Official.Status == registry.StatusDeleted {
		return nil, fmt.Errorf("%s: %w%s: not checked", ref, ErrDeleted, statusMessage(e))
	}
	rs := &RegistryServer{Entry: e}
	if err := rs.choose(o); err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	var err error
	if rs.Package != nil {
		err = rs.describePackage(o)
	} else {
		err = rs.describeRemote(o)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	rs.Spec.Name = o.Name
	if rs.Spec.Name == "" {
		rs.Spec.Name = s.Name
	}
	m, signed, err := s.EtdiMeta()
	switch {
	case err != nil:
		// Present but malformed: never read as an unsigned entry.
		rs.Findings = append(rs.Findings, rs.bundleFinding("the entry's dev.etdi metadata: "+err.Error()))
	case signed:
		rs.Meta = &m
		b, err := registry.FetchBundle(ctx, o.HTTP, m)
		if err != nil {
			rs.Findings = append(rs.Findings, rs.bundleFinding(fmt.Sprintf("the bundle the entry names (%s, %s): %v", m.Bundle, m.Digest, err)))
			break
		}
		rs.Bundle = b
	}
	return rs, nil
}

// choose picks the package or remote o says, or the first package etdi
// starts, else the first remote.
func (rs *RegistryServer) choose(o RegistryOptions) error {
	s := rs.Entry.Server
	switch {
	case o.Package < 0 || o.Remote < 0:
		return errors.New("guard: a package or remote position is 1 or more")
	case o.Package > 0 && o.Remote > 0:
		return errors.New("choose a package or a remote, not both")
	case o.Package > len(s.Packages):
		return fmt.Errorf("package %d chosen, the entry has %d", o.Package, len(s.Packages))
	case o.Remote > len(s.Remotes):
		return fmt.Errorf("remote %d chosen, the entry has %d", o.Remote, len(s.Remotes))
	case o.Package > 0:
		rs.Package, rs.PackageIndex = &s.Packages[o.Package-1], o.Package
		return nil
	case o.Remote > 0:
		rs.Remote, rs.RemoteIndex = &s.Remotes[o.Remote-1], o.Remote
		return nil
	}
	for i := range s.Packages {
		if _, ok := registry.Runners[s.Packages[i].RegistryType]; ok {
			rs.Package, rs.PackageIndex = &s.Packages[i], i+1
			return nil
		}
	}
	if len(s.Remotes) > 0 {
		rs.Remote, rs.RemoteIndex = &s.Remotes[0], 1
		return nil
	}
	var types []string
	for _, p := range s.Packages {
		types = append(types, p.RegistryType)
	}
	if len(types) == 0 {
		return errors.New("the entry has neither packages nor remotes")
	}
	return fmt.Errorf("etdi starts none of the entry's packages (%s) and it has no remote", strings.Join(types, ", "))
}

// describePackage builds the command line of the chosen package.
func (rs *RegistryServer) describePackage(o RegistryOptions) error {
	p := *rs.Package
	c, err := p.Command(o.Inputs)
	if err != nil {
		return err
	}
	argv := append([]string{c.Program}, c.Args...)
	sp := &ServerSpec{Command: argv, Env: append([]string{}, o.Environ...)}
	keys := make([]string, 0, len(c.Env))
	for k := range c.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		// Set for the server on purpose, as a host configuration's env.
		sp.Env = append(sp.Env, k+"="+c.Env[k])
		sp.KeepEnv = append(sp.KeepEnv, k)
		sp.Secrets.Add(c.Env[k])
	}
	sp.Secrets.AddArgs(argv)
	sp.Credentials = append(EnvCredentials(c.Env), CommandCredentials(argv[1:])...)
	rs.addSecretInputs(sp, secretInputs(p), o.Inputs)
	sp.Label = fmt.Sprintf("%s@%s package %d (%s)", rs.Entry.Server.Name, rs.Entry.Server.Version, rs.PackageIndex, registry.PackageLabel(p))
	rs.Spec = sp
	return nil
}

// describeRemote builds the URL and headers of the chosen remote.
func (rs *RegistryServer) describeRemote(o RegistryOptions) error {
	r, err := rs.Remote.Remote(o.Inputs)
	if err != nil {
		return err
	}
	sp := &ServerSpec{URL: r.URL}
	if len(r.Headers) > 0 {
		sp.Header = http.Header{}
		for k, v := range r.Headers {
			sp.Header.Set(k, v)
			sp.Secrets.Add(v)
		}
	}
	sp.Secrets.AddURL(r.URL)
	sp.Credentials = URLCredentials(r.URL, sp.Header)
	var secret []string
	for _, h := range rs.Remote.Headers {
		if h.IsSecret {
			secret = append(secret, h.Name)
		}
	}
	for n, v := range rs.Remote.Variables {
		if v.IsSecret {
			secret = append(secret, n)
		}
	}
	rs.addSecretInputs(sp, secret, o.Inputs)
	sp.Label = fmt.Sprintf("%s@%s remote %d (%s)", rs.Entry.Server.Name, rs.Entry.Server.Version, rs.RemoteIndex, sp.Secrets.String(redact.URL(r.URL)))
	rs.Spec = sp
	return nil
}

// addSecretInputs makes the values given for the inputs server.json
// marks secret (isSecret) secrets and credentials of the server, wherever
// they end up (an argument, a URL).
func (rs *RegistryServer) addSecretInputs(sp *ServerSpec, keys []string, in registry.Inputs) {
	for _, k := range keys {
		if v, ok := in[k]; ok && v != "" {
			sp.Secrets.Add(v)
			sp.Credentials = addCredential(sp.Credentials, "input "+k, v)
		}
	}
}

// secretInputs are the keys of a package's inputs marked isSecret.
func secretInputs(p registry.Package) []string {
	var out []string
	for _, e := range p.EnvironmentVariables {
		if e.IsSecret {
			out = append(out, e.Name)
		}
	}
	for _, a := range append(append([]registry.Argument{}, p.RuntimeArguments...), p.PackageArguments...) {
		if !a.IsSecret {
			continue
		}
		if a.Type == "named" {
			out = append(out, a.Name)
		} else {
			out = append(out, a.ValueHint)
		}
	}
	return out
}

func (rs *RegistryServer) bundleFinding(msg string) finding.Finding {
	return finding.Finding{Kind: finding.BundleInvalid, Severity: finding.Error, Server: rs.Entry.Server.Name,
		Message: msg + "; the entry is not checked until its bundle is the one it names"}
}

// statusMessage is the registry's message about an entry's status, as
// "(: message)" for an error, escaped and bounded.
func statusMessage(e *registry.Entry) string {
	if e.Official.StatusMessage == "" {
		return ""
	}
	return " (" + oneLineBounded(e.Official.StatusMessage, 200) + ")"
}

// Deprecated is the registry's note about a deprecated entry ("" for one
// that is not): a deprecated entry is still checked, as hosts still
// install it, and the note says so.
func (rs *RegistryServer) Deprecated() string {
	if rs.Entry.Official.Status != registry.StatusDeprecated {
		return ""
	}
	return "the registry marks " + rs.Entry.Server.Name + "@" + rs.Entry.Server.Version + " deprecated" + statusMessage(rs.Entry)
}

func oneLineBounded(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// Blocked reports whether a finding about the entry keeps its server from
// being started and checked.
func (rs *RegistryServer) Blocked() bool {
	for _, f := range rs.Findings {
		if f.Severity == finding.Error {
			return true
		}
	}
	return false
}

// Chosen names the package or remote checked, as "package 1 (npm
// acme-weather@1.0.0)" or "remote 1 (https://…)".
func (rs *RegistryServer) Chosen() string {
	if rs.Package != nil {
		return fmt.Sprintf("package %d (%s)", rs.PackageIndex, registry.PackageLabel(*rs.Package))
	}
	return fmt.Sprintf("remote %d (%s)", rs.RemoteIndex, rs.Spec.Secrets.String(redact.URL(rs.Spec.URL)))
}

// Options returns opts set for checking the entry's server: its bundle
// (from the URL the entry names), the name it is pinned under without
// one, its description and credentials, the registry name the bundle is
// checked for (its server.registryName and its provider's namespaces,
// SPEC.md §4.2), and the entry whose package or remote a verified bundle
// must bind.
func (rs *RegistryServer) Options(opts Options) Options {
	if rs.Bundle != nil {
		opts.Bundle, opts.BundleSource = rs.Bundle, rs.Meta.Bundle
	}
	opts.Name = rs.Spec.Name
	opts.Spec = rs.Spec
	opts.Credentials = append(append([]Credential{}, opts.Credentials...), rs.Spec.Credentials...)
	opts.Registry = rs
	opts.RegistryName = rs.Entry.Server.Name
	return opts
}

// Report is the report of an entry blocked before its server was
// started ([RegistryServer.Blocked]): its findings, nothing compared.
func (rs *RegistryServer) Report() *Report {
	return &Report{Tools: []pin.ToolState{}, Findings: append([]finding.Finding{}, rs.Findings...)}
}

// bindingFindings compare a verified bundle with the entry: its artifacts
// or endpoints must bind the package or remote checked
// ([registry.BindsPackage], [registry.BindsRemote]). Each mismatch is an
// impersonation finding naming both sides. The entry's name is held to
// the bundle by verification ([Options.RegistryName]).
func (rs *RegistryServer) bindingFindings(res *verify.Result) []finding.Finding {
	if rs == nil || res == nil || res.Statement == nil {
		return nil
	}
	signed := res.Statement.Server
	var ms []registry.Mismatch
	if rs.Package != nil {
		if m := registry.BindsPackage(*rs.Package, signed); m != nil {
			ms = append(ms, *m)
		}
	} else if m := registry.BindsRemote(*rs.Remote, signed); m != nil {
		ms = append(ms, *m)
	}
	var out []finding.Finding
	server := pin.SignedServerKey(res.Statement.Provider.ID, signed.Name)
	for _, m := range ms {
		out = append(out, finding.Finding{Kind: finding.Impersonation, Severity: finding.Error, Server: server,
			Message: rs.Spec.Secrets.String((fmt.Sprintf("the bundle of %s is not the one of registry entry %s@%s: %s: %s",
				server, rs.Entry.Server.Name, rs.Entry.Server.Version, m.What, m.Why)))})
	}
	return out
}

// CheckRegistry checks the server of a registry entry as etdi check
// --registry does: an entry blocked by its own findings or by its bundle
// ([RegistryServer.Precheck]) is reported without starting anything;
// otherwise what the command runs is resolved, the
// server is started or reached as the host would and listed, and the
// listing is checked ([Check]) with the entry's bundle, bound to the
// entry. opts carries the trust policy and the pins; the bundle, name,
// description and credentials are the entry's.
//
//	c, _ := registry.NewClient("https://registry.modelcontextprotocol.io")
//	rs, err := guard.DescribeRegistry(ctx, c, "io.github.acme/weather", "", guard.RegistryOptions{})
//	...
//	r, err := guard.CheckRegistry(ctx, rs, guard.Options{Policy: policy, Pins: "pins.db"}, guard.FetchOptions{})
//	if r.ExitCode() != 0 { ... }
func CheckRegistry(ctx context.Context, rs *RegistryServer, opts Options, fo FetchOptions) (*Report, error) {
	opts = rs.Options(opts)
	if r, err := rs.Precheck(ctx, opts); r != nil || err != nil {
		return r, err
	}
	rs.Spec.SecretEnv = SecretEnv(opts.Policy)
	launch := rs.Spec.Server()
	opts.Origin = ResolveOrigin(ctx, launch)
	l, err := Fetch(ctx, launch, fo)
	if err != nil {
		return nil, rs.Spec.Secrets.Error(fmt.Errorf("server %s: %w", rs.Spec.Label, err))
	}
	return Check(ctx, l, opts)
}

// Precheck decides, before the server is started, what the entry alone
// decides: its own findings (a bundle that could not be fetched or is not
// the one named), and its bundle verified without the live server
// ([Observe]): a bundle that does not verify, or is not bound to the
// entry's name and the package or remote checked. It returns the report
// of an entry so blocked, or nil when the server is to be started and
// checked: a package a bundle does not bind is never run. opts are
// [RegistryServer.Options]'.
func (rs *RegistryServer) Precheck(ctx context.Context, opts Options) (*Report, error) {
	if rs.Blocked() {
		return rs.Report(), nil
	}
	if rs.Bundle == nil {
		return nil, nil // unsigned: the policy's rule, on the live listing
	}
	r, err := Observe(ctx, nil, opts)
	if err != nil || r.Blocked() {
		return r, err
	}
	return nil, nil
}
