package registry

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/artifact"
	"github.com/etdi-dev/etdi/internal/artifactsyntax"
)

// Command is how a host starts a package's server: the program, its
// arguments and the environment it adds.
type Command struct {
	Program string
	Args    []string
	Env     map[string]string
}

// Remote is how a host reaches a remote server: its URL and headers.
type Remote struct {
	Type    string
	URL     string
	Headers map[string]string
}

// Inputs are the values a person gives for a server's inputs: keyed by
// an environment variable's or header's name, a named argument's flag
// ("--port"), a positional argument's valueHint, or a variable's name.
type Inputs map[string]string

// Runners are the programs a host may start a package with, by registry
// type: the first is the default. A server.json's runtimeHint must name
// one of them: a registry entry never chooses the program.
var Runners = map[string][]string{
	PackageNPM:   {"npx", "bunx"},
	PackagePyPI:  {"uvx", "pipx"},
	PackageOCI:   {"docker", "podman"},
	PackageNuGet: {"dnx"},
}

var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`) })

// Command builds the command line a host runs for package p, as hosts
// read server.json: the runner (runtimeHint, or the registry type's
// default), its runtimeArguments, the package at its exact version, and
// the packageArguments; the environment from environmentVariables. Values
// come from in, else the server.json's value or default; a required input
// without one is an error naming it. A package of a type etdi cannot start
// (MCPB, which a desktop host installs; an unknown type), a runner outside
// [Runners], a transport other than stdio, or a package without a version
// is refused.
func (p Package) Command(in Inputs) (*Command, error) {
	runners, ok := Runners[p.RegistryType]
	if !ok {
		if p.RegistryType == PackageMCPB {
			return nil, fmt.Errorf("%s: an MCPB is installed by a desktop host; check the file with etdi check --mcpb FILE", PackageLabel(p))
		}
		return nil, fmt.Errorf("%s: etdi does not start %q packages", PackageLabel(p), p.RegistryType)
	}
	if t := p.Transport.Type; t != "" && t != TransportStdio {
		return nil, fmt.Errorf("%s: transport %q: etdi starts stdio packages only", PackageLabel(p), t)
	}
	prog := runners[0]
	if p.RuntimeHint != "" {
		if !slices.Contains(runners, p.RuntimeHint) {
			return nil, fmt.Errorf("%s: runtimeHint %q is not a runner of %s packages (%s)", PackageLabel(p), p.RuntimeHint, p.RegistryType, strings.Join(runners, ", "))
		}
		prog = p.RuntimeHint
	}
	if err := checkSpec(p); err != nil {
		return nil, fmt.Errorf("%s: %w", PackageLabel(p), err)
	}
	c := &Command{Program: prog, Env: map[string]string{}}
	var spec []string
	switch p.RegistryType {
	case PackageNPM, PackageNuGet:
		if p.Version == "" {
			return nil, fmt.Errorf("%s: no version: the host would run whatever is newest", PackageLabel(p))
		}
		spec = []string{p.Identifier + "@" + p.Version}
	case PackagePyPI:
		if p.Version == "" {
			return nil, fmt.Errorf("%s: no version: the host would run whatever is newest", PackageLabel(p))
		}
		spec = []string{p.Identifier + "==" + p.Version}
		if prog == "pipx" {
			c.Args = append(c.Args, "run")
		}
	case PackageOCI:
		ref := p.Identifier
		if name, tag, digest := splitImage(ref); tag == "" && digest == "" {
			if p.Version == "" {
				return nil, fmt.Errorf("%s: no tag, digest or version: the host would run whatever is newest", PackageLabel(p))
			}
			ref = name + ":" + p.Version
		}
		spec = []string{ref}
		c.Args = append(c.Args, "run", "-i", "--rm")
	}
	rt, err := arguments(p.RuntimeArguments, in)
	if err != nil {
		return nil, fmt.Errorf("%s: runtimeArguments: %w", PackageLabel(p), err)
	}
	pa, err := arguments(p.PackageArguments, in)
	if err != nil {
		return nil, fmt.Errorf("%s: packageArguments: %w", PackageLabel(p), err)
	}
	for _, e := range p.EnvironmentVariables {
		if !envName().MatchString(e.Name) {
			return nil, fmt.Errorf("%s: environment variable name %q is not a name", PackageLabel(p), e.Name)
		}
		v, set, err := value(e.Name, e.Input, in)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", PackageLabel(p), err)
		}
		if set {
			c.Env[e.Name] = v
		}
	}
	switch {
	case prog == "npx" && !slices.Contains(rt, "-y") && !slices.Contains(rt, "--yes"):
		// npx asks before it installs a package; a host answers yes.
		c.Args = append(c.Args, "-y")
	case p.RegistryType == PackageOCI:
		// The container sees the variables the host sets for it.
		names := make([]string, 0, len(c.Env))
		for n := range c.Env {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			c.Args = append(c.Args, "-e", n)
		}
	}
	c.Args = append(c.Args, rt...)
	c.Args = append(c.Args, spec...)
	if p.RegistryType == PackageNuGet {
		c.Args = append(c.Args, "--yes")
		if len(pa) > 0 {
			c.Args = append(c.Args, "--")
		}
	}
	c.Args = append(c.Args, pa...)
	if why := c.refusal(p); why != "" {
		return nil, fmt.Errorf("%s: the launch would run more than the package: %s", PackageLabel(p), why)
	}
	return c, nil
}

// defaultRegistries are the package registries etdi starts packages
// from: an entry naming another (registryBaseUrl) names another package
// under the same name, which a bundle binding the name does not cover.
var defaultRegistries = map[string][]string{
	PackageNPM:   {"https://registry.npmjs.org"},
	PackagePyPI:  {"https://pypi.org", "https://pypi.org/simple"},
	PackageNuGet: {"https://api.nuget.org/v3/index.json", "https://api.nuget.org"},
	PackageOCI:   {"https://docker.io", "https://registry-1.docker.io", "https://index.docker.io", "https://ghcr.io", "https://quay.io", "https://mcr.microsoft.com"},
}

// refusal says why the launch c built from p would run more than p's
// package: another package registry, or what the command line and the
// environment the entry chose would load besides it
// (artifact.Refusal).
func (c *Command) refusal(p Package) string {
	if b := strings.TrimSuffix(p.RegistryBaseURL, "/"); b != "" && !slices.Contains(defaultRegistries[p.RegistryType], b) {
		return fmt.Sprintf("registryBaseUrl %q is not the %s registry etdi starts packages from", p.RegistryBaseURL, p.RegistryType)
	}
	argv := append([]string{c.Program}, c.Args...)
	switch p.RegistryType {
	case PackageNPM, PackagePyPI:
		return artifact.Refusal(argv, c.Env, p.RegistryType, p.Identifier, p.Version)
	case PackageOCI:
		name, _, _ := splitImage(p.Identifier)
		return artifact.Refusal(argv, c.Env, p.RegistryType, name, p.Version)
	}
	for n := range c.Env {
		if artifact.Injecting(n) {
			return n + " is set: it loads other code into the server"
		}
	}
	return ""
}

// CheckLaunch reports why a host's launch of package p would run more
// than the package, whatever values a person gives its inputs: the
// launch is built with a placeholder for each required input without a
// value. nil when it runs the package alone, or when p is not a package
// etdi starts (see [Package.Command]).
func CheckLaunch(p Package) error {
	if _, ok := Runners[p.RegistryType]; !ok {
		return nil
	}
	in := Inputs{}
	need := func(key string, i Input) {
		if key != "" && i.IsRequired && i.Value == "" && i.Default == "" {
			in[key] = "x"
		}
		for k, v := range i.Variables {
			if v.IsRequired && v.Value == "" && v.Default == "" {
				in[k] = "x"
			}
		}
	}
	for _, a := range append(append([]Argument{}, p.RuntimeArguments...), p.PackageArguments...) {
		key := a.ValueHint
		if a.Type == "named" {
			key = a.Name
		}
		need(key, a.Input)
	}
	for _, e := range p.EnvironmentVariables {
		need(e.Name, e.Input)
	}
	_, err := p.Command(in)
	return err
}

var nugetID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,255}$`) })

// checkSpec refuses an identifier or version that is not a package name
// or version of its ecosystem: one that a runner would read as an option
// ("--registry=…") or as another kind of spec (a path, a URL, git).
func checkSpec(p Package) error {
	ok := false
	switch p.RegistryType {
	case PackageNPM:
		ok = artifactsyntax.NPMName(p.Identifier)
	case PackagePyPI:
		ok = artifactsyntax.PyPIName(p.Identifier)
	case PackageOCI:
		name, tag, digest := splitImage(p.Identifier)
		ok = artifactsyntax.ImageName(name) && (tag == "" || artifactsyntax.Tag(tag)) && (digest == "" || artifactsyntax.SHA256(digest))
	case PackageNuGet:
		ok = nugetID().MatchString(p.Identifier)
	}
	if !ok {
		return fmt.Errorf("identifier %q is not a %s package name", p.Identifier, p.RegistryType)
	}
	if p.Version != "" && (strings.HasPrefix(p.Version, "-") || strings.ContainsAny(p.Version, " \t\r\n/:@=<>^~*|")) {
		return fmt.Errorf("version %q is not an exact version", p.Version)
	}
	return nil
}

// Remote builds the URL and headers a host uses for remote r: variables
// filled in from in, else their value or default. The URL must be https
// (http only to a loopback host).
func (r Transport) Remote(in Inputs) (*Remote, error) {
	switch r.Type {
	case TransportStreamableHTTP, TransportSSE:
	default:
		return nil, fmt.Errorf("remote %s: transport %q is not streamable-http or sse", r.URL, r.Type)
	}
	u, err := fill(r.URL, r.Variables, in)
	if err != nil {
		return nil, fmt.Errorf("remote %s: %w", r.URL, err)
	}
	pu, err := url.Parse(u)
	if err != nil || pu.Host == "" || pu.User != nil || !(pu.Scheme == "https" || pu.Scheme == "http" && isLoopback(pu.Hostname())) {
		return nil, fmt.Errorf("remote %s: want an https URL (http only to a loopback host) without user information", u)
	}
	out := &Remote{Type: r.Type, URL: u, Headers: map[string]string{}}
	for _, h := range r.Headers {
		if h.Name == "" || strings.ContainsAny(h.Name, " :\r\n\t") {
			return nil, fmt.Errorf("remote %s: header name %q", r.URL, h.Name)
		}
		v, set, err := value(h.Name, h.Input, in)
		if err != nil {
			return nil, fmt.Errorf("remote %s: %w", r.URL, err)
		}
		if set {
			if strings.ContainsAny(v, "\r\n") {
				return nil, fmt.Errorf("remote %s: header %s: a value with a line break", r.URL, h.Name)
			}
			out.Headers[h.Name] = v
		}
	}
	return out, nil
}

// arguments turns runtime or package arguments into words.
func arguments(args []Argument, in Inputs) ([]string, error) {
	var out []string
	for _, a := range args {
		switch a.Type {
		case "positional":
			key := a.ValueHint
			v, set, err := value(key, a.Input, in)
			if err != nil {
				return nil, err
			}
			if set {
				out = append(out, v)
			}
		case "named":
			if !strings.HasPrefix(a.Name, "-") || strings.ContainsAny(a.Name, " \t\r\n") {
				return nil, fmt.Errorf("named argument %q: want a flag", a.Name)
			}
			v, set, err := value(a.Name, a.Input, in)
			if err != nil {
				return nil, err
			}
			if set {
				out = append(out, a.Name, v)
			}
		default:
			return nil, fmt.Errorf("argument type %q: want positional or named", a.Type)
		}
	}
	return out, nil
}

// value is an input's value: given in in under key, else its value (with
// its {variables} filled), else its default. set is false for an optional
// input without one.
func value(key string, i Input, in Inputs) (v string, set bool, err error) {
	if key != "" {
		if given, ok := in[key]; ok {
			return given, true, nil
		}
	}
	switch {
	case i.Value != "":
		v, err := fill(i.Value, i.Variables, in)
		return v, err == nil, err
	case i.Default != "":
		return i.Default, true, nil
	case i.IsRequired:
		if key == "" {
			return "", false, fmt.Errorf("a required input without a name or a value")
		}
		return "", false, fmt.Errorf("input %s is required (%s): give it with --input %s=VALUE", key, oneLine(i.Description), key)
	}
	return "", false, nil
}

var placeholder = regexp.MustCompile(`\{([A-Za-z0-9_.-]+)\}`)

// fill replaces {name} in s with the variable's value.
func fill(s string, vars map[string]Input, in Inputs) (string, error) {
	var firstErr error
	out := placeholder.ReplaceAllStringFunc(s, func(m string) string {
		name := m[1 : len(m)-1]
		def, known := vars[name]
		if !known {
			if v, ok := in[name]; ok {
				return v
			}
			if firstErr == nil {
				firstErr = fmt.Errorf("{%s} is not a declared variable", name)
			}
			return m
		}
		v, set, err := value(name, def, in)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if !set && firstErr == nil {
			firstErr = fmt.Errorf("variable %s has no value: give it with --input %s=VALUE", name, name)
		}
		return v
	})
	return out, firstErr
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	if s == "" {
		s = "no description"
	}
	return s
}

func isLoopback(h string) bool { return etdi.LoopbackHost(h) }
