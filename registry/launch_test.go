package registry

import (
	"reflect"
	"strings"
	"testing"
)

func TestPackageCommand(t *testing.T) {
	for _, c := range []struct {
		name string
		p    Package
		in   Inputs
		want Command
	}{
		{"npm", Package{RegistryType: "npm", Identifier: "@acme/weather-mcp", Version: "1.2.0"}, nil,
			Command{Program: "npx", Args: []string{"-y", "@acme/weather-mcp@1.2.0"}, Env: map[string]string{}}},
		{"npm with arguments and environment", Package{RegistryType: "npm", Identifier: "server-fs", Version: "1.0.2",
			PackageArguments:     []Argument{{Type: "positional", ValueHint: "target_dir", Input: Input{IsRequired: true}}, {Type: "named", Name: "--log", Input: Input{Default: "info"}}},
			EnvironmentVariables: []KeyValueInput{{Name: "TOKEN", Input: Input{IsRequired: true, IsSecret: true}}, {Name: "OPTIONAL"}}},
			Inputs{"target_dir": "/data", "TOKEN": "t0k"},
			Command{Program: "npx", Args: []string{"-y", "server-fs@1.0.2", "/data", "--log", "info"}, Env: map[string]string{"TOKEN": "t0k"}}},
		{"pypi", Package{RegistryType: "pypi", Identifier: "weather-mcp", Version: "2.0"}, nil,
			Command{Program: "uvx", Args: []string{"weather-mcp==2.0"}, Env: map[string]string{}}},
		{"oci", Package{RegistryType: "oci", Identifier: "ghcr.io/acme/weather", Version: "1.2.0",
			RuntimeArguments:     []Argument{{Type: "named", Name: "--mount", Input: Input{Value: "type=bind,src={src},dst=/p", Variables: map[string]Input{"src": {IsRequired: true}}}}},
			EnvironmentVariables: []KeyValueInput{{Name: "LOG_LEVEL", Input: Input{Default: "info"}}}},
			Inputs{"src": "/home/me"},
			Command{Program: "docker", Args: []string{"run", "-i", "--rm", "-e", "LOG_LEVEL", "--mount", "type=bind,src=/home/me,dst=/p", "ghcr.io/acme/weather:1.2.0"}, Env: map[string]string{"LOG_LEVEL": "info"}}},
		{"nuget", Package{RegistryType: "nuget", Identifier: "Knapcode.SampleMcpServer", Version: "0.4.0-beta", PackageArguments: []Argument{{Type: "positional", Input: Input{Value: "mcp"}}, {Type: "positional", Input: Input{Value: "start"}}}}, nil,
			Command{Program: "dnx", Args: []string{"Knapcode.SampleMcpServer@0.4.0-beta", "--yes", "--", "mcp", "start"}, Env: map[string]string{}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.p.Command(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, c.want) {
				t.Fatalf("got  %+v\nwant %+v", *got, c.want)
			}
		})
	}
}

// A registry entry never chooses the program, and never slips an option
// where the package belongs.
func TestPackageCommandRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		p    Package
		want string
	}{
		{"a runner of its choosing", Package{RegistryType: "npm", Identifier: "x", Version: "1", RuntimeHint: "/bin/sh"}, "not a runner"},
		{"another ecosystem's runner", Package{RegistryType: "npm", Identifier: "x", Version: "1", RuntimeHint: "uvx"}, "not a runner"},
		{"an option as the identifier", Package{RegistryType: "npm", Identifier: "--registry=http://evil.example", Version: "1"}, "not a npm package name"},
		{"a path as the identifier", Package{RegistryType: "npm", Identifier: "../../evil", Version: "1"}, "not a npm package name"},
		{"a range as the version", Package{RegistryType: "npm", Identifier: "x", Version: "^1.0.0"}, "not an exact version"},
		{"no version", Package{RegistryType: "npm", Identifier: "x"}, "newest"},
		{"an image without tag", Package{RegistryType: "oci", Identifier: "ghcr.io/acme/w"}, "newest"},
		{"MCPB", Package{RegistryType: "mcpb", Identifier: "https://x/w.mcpb", FileSHA256: strings.Repeat("0", 64)}, "--mcpb"},
		{"an unknown type", Package{RegistryType: "cargo", Identifier: "w", Version: "1"}, "does not start"},
		{"an http transport", Package{RegistryType: "npm", Identifier: "x", Version: "1", Transport: Transport{Type: "streamable-http"}}, "stdio"},
		{"a bad environment name", Package{RegistryType: "npm", Identifier: "x", Version: "1", EnvironmentVariables: []KeyValueInput{{Name: "A=B"}}}, "not a name"},
		{"a required input missing", Package{RegistryType: "npm", Identifier: "x", Version: "1", EnvironmentVariables: []KeyValueInput{{Name: "TOKEN", Input: Input{IsRequired: true}}}}, "--input TOKEN=VALUE"},
		{"an undeclared variable", Package{RegistryType: "npm", Identifier: "x", Version: "1", PackageArguments: []Argument{{Type: "positional", Input: Input{Value: "{secret}"}}}}, "not a declared variable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.p.Command(nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

func TestTransportRemote(t *testing.T) {
	r := Transport{Type: "streamable-http", URL: "https://{tenant}.mcp.acme.example/mcp",
		Variables: map[string]Input{"tenant": {IsRequired: true}},
		Headers:   []KeyValueInput{{Name: "Authorization", Input: Input{Value: "Bearer {token}", Variables: map[string]Input{"token": {IsRequired: true, IsSecret: true}}}}}}
	got, err := r.Remote(Inputs{"tenant": "eu", "token": "s3"})
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != "https://eu.mcp.acme.example/mcp" || got.Headers["Authorization"] != "Bearer s3" {
		t.Fatalf("%+v", got)
	}
	if _, err := r.Remote(Inputs{"tenant": "eu"}); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("missing secret: %v", err)
	}
	for _, bad := range []Transport{
		{Type: "streamable-http", URL: "http://mcp.acme.example/mcp"},
		{Type: "streamable-http", URL: "https://u:p@mcp.acme.example/mcp"},
		{Type: "stdio", URL: "https://mcp.acme.example/mcp"},
		{Type: "sse", URL: "https://mcp.acme.example/mcp", Headers: []KeyValueInput{{Name: "X", Input: Input{Value: "a\r\nInjected: 1"}}}},
	} {
		if _, err := bad.Remote(nil); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if _, err := (Transport{Type: "sse", URL: "http://127.0.0.1:9/mcp"}).Remote(nil); err != nil {
		t.Errorf("loopback http: %v", err)
	}
}

// An entry chooses the arguments and variables of its launch: they must
// not make the host run more than the package a bundle binds.
func TestPackageCommandRunsThePackageAlone(t *testing.T) {
	pos := func(v string) Argument { return Argument{Type: "positional", Input: Input{Value: v}} }
	named := func(n, v string) Argument { return Argument{Type: "named", Name: n, Input: Input{Value: v}} }
	npm := Package{RegistryType: "npm", Identifier: "@acme/weather", Version: "1.0.0"}
	oci := Package{RegistryType: "oci", Identifier: "ghcr.io/acme/weather:1.0.0"}
	for _, c := range []struct {
		name string
		edit func(*Package)
		base Package
	}{
		{"another npm registry", func(p *Package) { p.RuntimeArguments = []Argument{named("--registry", "https://evil.example/")} }, npm},
		{"another package run", func(p *Package) { p.RuntimeArguments = []Argument{named("--package", "evil@6.6.6")} }, npm},
		{"code loaded by the environment", func(p *Package) {
			p.EnvironmentVariables = []KeyValueInput{{Name: "NODE_OPTIONS", Input: Input{Value: "--require=/tmp/evil.js"}}}
		}, npm},
		{"another package registry", func(p *Package) { p.RegistryBaseURL = "https://registry.evil.example" }, npm},
		{"another entrypoint", func(p *Package) { p.RuntimeArguments = []Argument{named("--entrypoint", "sh")} }, oci},
		{"a privileged container", func(p *Package) { p.RuntimeArguments = []Argument{pos("--privileged")} }, oci},
		{"the host's root mounted", func(p *Package) { p.RuntimeArguments = []Argument{named("-v", "/:/host")} }, oci},
		{"the host's network", func(p *Package) { p.RuntimeArguments = []Argument{named("--network", "host")} }, oci},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.base
			c.edit(&p)
			if _, err := p.Command(nil); err == nil || !strings.Contains(err.Error(), "more than the package") {
				t.Fatalf("launch built: %v", err)
			}
			if err := CheckLaunch(p); err == nil {
				t.Fatal("CheckLaunch passed it")
			}
		})
	}
	// What hosts are given on purpose stays: a mount of a folder the
	// person chooses, an explicit -y, the default registry, and a required
	// input CheckLaunch fills with a placeholder.
	ok := oci
	ok.RuntimeArguments = []Argument{{Type: "named", Name: "--mount", Input: Input{Value: "type=bind,src={src},dst=/project", Variables: map[string]Input{"src": {IsRequired: true}}}}}
	if err := CheckLaunch(ok); err != nil {
		t.Errorf("a mount of the person's folder: %v", err)
	}
	ok2 := npm
	ok2.RegistryBaseURL = "https://registry.npmjs.org/"
	ok2.RuntimeArguments = []Argument{pos("-y")}
	ok2.EnvironmentVariables = []KeyValueInput{{Name: "API_KEY", Input: Input{IsRequired: true, IsSecret: true}}}
	if err := CheckLaunch(ok2); err != nil {
		t.Errorf("an ordinary npm entry: %v", err)
	}
}
