package cmdline

import (
	"slices"
	"testing"
)

func TestBaseAndCutExt(t *testing.T) {
	for _, tc := range []struct {
		p, base string
		exts    []string
		name    string
		found   bool
	}{
		{"/usr/local/bin/npx", "npx", []string{".exe", ".cmd"}, "npx", false},
		{`C:\Program Files\nodejs\NPX.CMD`, "NPX.CMD", []string{".exe", ".cmd"}, "NPX", true},
		{"uv.Exe", "uv.Exe", []string{".exe"}, "uv", true},
		{"npx.ps1", "npx.ps1", []string{".exe", ".cmd"}, "npx.ps1", false},
		{"npx.ps1", "npx.ps1", []string{".exe", ".ps1"}, "npx", true},
		{".exe", ".exe", []string{".exe"}, "", true},
		{"exe", "exe", []string{".exe"}, "exe", false},
		{"dir/", "dir", nil, "dir", false},
		{"", ".", nil, ".", false},
	} {
		base := Base(tc.p)
		if base != tc.base {
			t.Errorf("Base(%q) = %q, want %q", tc.p, base, tc.base)
		}
		if name, found := CutExt(base, tc.exts...); name != tc.name || found != tc.found {
			t.Errorf("CutExt(%q, %q) = %q, %v, want %q, %v", base, tc.exts, name, found, tc.name, tc.found)
		}
	}
}

func TestWith(t *testing.T) {
	a := FlagSpec{Values: Set("-a"), Stop: Set("-e")}
	b := a.With(FlagSpec{Values: Set("-b"), Bools: Set("--q"), StopBare: true})
	if !b.Values["-a"] || !b.Values["-b"] || !b.Stop["-e"] || !b.Bools["--q"] || !b.StopBare || b.Assignments {
		t.Errorf("With: %+v", b)
	}
	// The tables With starts from are left as they were.
	if a.Values["-b"] || a.Bools["--q"] || a.StopBare {
		t.Errorf("With changed its receiver: %+v", a)
	}
}

func TestSub(t *testing.T) {
	values := Set("--directory")
	for _, tc := range []struct {
		args  []string
		names []string
		rest  []string
		ok    bool
	}{
		{[]string{"exec", "--", "pkg"}, []string{"exec", "x"}, []string{"--", "pkg"}, true},
		{[]string{"--yes", "x", "pkg"}, []string{"exec", "x"}, []string{"pkg"}, true},
		{[]string{"--directory", "run", "run", "s.py"}, []string{"run"}, []string{"s.py"}, true},
		{[]string{"--directory=d", "run"}, []string{"run"}, []string{}, true},
		{[]string{"start", "run"}, []string{"run"}, nil, false},
		{[]string{"--directory", "run"}, []string{"run"}, nil, false},
		{nil, []string{"run"}, nil, false},
	} {
		rest, ok := Sub(tc.args, values, tc.names...)
		if !slices.Equal(rest, tc.rest) || ok != tc.ok {
			t.Errorf("Sub(%q, %q) = %q, %v, want %q, %v", tc.args, tc.names, rest, ok, tc.rest, tc.ok)
		}
	}
}

func TestSkip(t *testing.T) {
	node := FlagSpec{Values: Set("-r", "--require"), Stop: Set("-e", "--eval")}
	bare := node.With(FlagSpec{StopBare: true})
	env := FlagSpec{Values: Set("-u"), Assignments: true}
	for _, tc := range []struct {
		args []string
		fs   FlagSpec
		want []string
	}{
		{[]string{"-r", "dotenv/config", "--enable-source-maps", "dist/index.js", "--token", "x"}, node, []string{"dist/index.js", "--token", "x"}},
		{[]string{"--require=x", "a.js"}, node, []string{"a.js"}},
		{[]string{"--", "-a.js", "b"}, node, []string{"-a.js", "b"}},
		{[]string{"-", "a.js"}, node, []string{"-", "a.js"}},
		{[]string{"-e", "code", "a.js"}, node, nil},
		{[]string{"--eval=code", "a.js"}, node, nil},
		{[]string{"--eval=code", "a.js"}, bare, []string{"a.js"}},
		{[]string{"-e", "code", "a.js"}, bare, nil},
		{[]string{"-r"}, node, nil},
		{[]string{"A=B", "prog"}, node, []string{"A=B", "prog"}},
		{[]string{"-u", "HOME", "A=B", "prog", "C=D"}, env, []string{"prog", "C=D"}},
		{nil, node, nil},
	} {
		if got := Skip(tc.args, tc.fs); !slices.Equal(got, tc.want) {
			t.Errorf("Skip(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestReadRunner(t *testing.T) {
	npx := NPMFlags.With(FlagSpec{Stop: Set("-c")})
	for _, tc := range []struct {
		args []string
		fs   FlagSpec
		want Runner
	}{
		{[]string{"-y", "@acme/srv@1", "-p", "8080"}, npx, Runner{First: "@acme/srv@1"}},
		{[]string{"-p", "a", "--package=b", "cmd"}, npx, Runner{Pkgs: []string{"a", "b"}, First: "cmd"}},
		{[]string{"--cache", "/c", "--cache=/d", "srv"}, npx, Runner{First: "srv", Cache: "/d"}},
		{[]string{"--api-key", "hunter2pass", "srv"}, npx, Runner{First: "srv"}},
		{[]string{"--api-key=hunter2pass", "srv"}, npx, Runner{First: "srv"}},
		{[]string{"--yes", "--quiet", "srv"}, npx, Runner{First: "srv"}},
		{[]string{"-w", "ws", "--", "srv"}, npx, Runner{First: "srv"}},
		{[]string{"--"}, npx, Runner{}},
		{[]string{"-p", "a", "-c", "cmd"}, npx, Runner{Pkgs: []string{"a"}, Stopped: true}},
		{[]string{"-c=cmd", "srv"}, npx, Runner{Stopped: true}},
		{[]string{"-c=cmd", "srv"}, npx.With(FlagSpec{StopBare: true}), Runner{First: "srv"}},
		{[]string{"-c", "cmd", "srv"}, NPMFlags, Runner{First: "srv"}},
		{[]string{"-p"}, npx, Runner{}},
		{[]string{"--from", "pkg[x]==1", "pkg"}, UVFlags, Runner{Pkgs: []string{"pkg[x]==1"}, First: "pkg"}},
		{[]string{"--python", "3.12", "--isolated", "ruff@0.6.0"}, UVFlags, Runner{First: "ruff@0.6.0"}},
		{[]string{"--spec", "p==1", "p"}, PipxFlags, Runner{Pkgs: []string{"p==1"}, First: "p"}},
	} {
		got := ReadRunner(tc.args, tc.fs)
		if !slices.Equal(got.Pkgs, tc.want.Pkgs) || got.First != tc.want.First || got.Cache != tc.want.Cache || got.Stopped != tc.want.Stopped {
			t.Errorf("ReadRunner(%q) = %+v, want %+v", tc.args, got, tc.want)
		}
	}
}

func TestUVToolRun(t *testing.T) {
	for _, tc := range []struct {
		args []string
		rest []string
		ok   bool
	}{
		{[]string{"tool", "run", "--with", "httpx", "pkg"}, []string{"--with", "httpx", "pkg"}, true},
		{[]string{"--quiet", "--directory", "d", "tool", "--offline", "run", "pkg"}, []string{"pkg"}, true},
		{[]string{"tool", "install", "pkg"}, nil, false},
		{[]string{"run", "server.py"}, nil, false},
	} {
		rest, ok := UVToolRun(tc.args)
		if !slices.Equal(rest, tc.rest) || ok != tc.ok {
			t.Errorf("UVToolRun(%q) = %q, %v, want %q, %v", tc.args, rest, ok, tc.rest, tc.ok)
		}
	}
}

func TestContainerCommand(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		i       int
		globals bool
	}{
		{[]string{"run", "img"}, 0, false},
		{[]string{"container", "run", "img"}, 1, false},
		{[]string{"--context", "run", "run", "img"}, 2, true},
		{[]string{"--context=remote", "run", "img"}, 1, true},
		{[]string{"-H", "tcp://h", "container", "run"}, 3, true},
		{[]string{"compose", "up"}, 0, false},
		{[]string{"--debug"}, 1, true},
		{nil, 0, false},
	} {
		if i, globals := ContainerCommand(tc.args); i != tc.i || globals != tc.globals {
			t.Errorf("ContainerCommand(%q) = %d, %v, want %d, %v", tc.args, i, globals, tc.i, tc.globals)
		}
	}
}

func TestRunImage(t *testing.T) {
	for _, tc := range []struct {
		args        []string
		image, pull string
	}{
		{[]string{"-i", "--rm", "-e", "TOKEN=x", "ghcr.io/a/b:1", "--arg"}, "ghcr.io/a/b:1", ""},
		{[]string{"-ie", "TOKEN=x", "img"}, "img", ""},
		{[]string{"-eTOKEN=x", "img"}, "img", ""},
		{[]string{"-it", "img"}, "img", ""},
		{[]string{"--env=A=B", "--name", "mcp", "img"}, "img", ""},
		{[]string{"--mount", "type=bind,src=/a,dst=/b", "--unknown", "img"}, "img", ""},
		{[]string{"--pull", "always", "img"}, "img", "always"},
		{[]string{"--pull=newer", "--", "img"}, "img", "newer"},
		{[]string{"--pull"}, "", ""},
		{[]string{"--"}, "", ""},
		{[]string{"-", "img"}, "-", ""},
		{[]string{"", "img"}, "", ""},
		{[]string{"-e", "TOKEN=x"}, "", ""},
	} {
		if image, pull := RunImage(tc.args); image != tc.image || pull != tc.pull {
			t.Errorf("RunImage(%q) = %q, %q, want %q, %q", tc.args, image, pull, tc.image, tc.pull)
		}
	}
}

func TestCutImage(t *testing.T) {
	for _, tc := range []struct {
		ref, name, tag, digest string
		hasTag, hasDigest      bool
	}{
		{"img", "img", "", "", false, false},
		{"ghcr.io/a/b:v1", "ghcr.io/a/b", "v1", "", true, false},
		{"localhost:5000/team/srv", "localhost:5000/team/srv", "", "", false, false},
		{"localhost:5000/team/srv:1", "localhost:5000/team/srv", "1", "", true, false},
		{"mcp/time:1.2@sha256:ab", "mcp/time", "1.2", "sha256:ab", true, true},
		{"x@", "x", "", "", false, true},
		{"x:", "x", "", "", true, false},
		{"a@b@c", "a", "", "b@c", false, true},
	} {
		name, digest, hasDigest := CutDigest(tc.ref)
		name, tag, hasTag := CutTag(name)
		if name != tc.name || tag != tc.tag || digest != tc.digest || hasTag != tc.hasTag || hasDigest != tc.hasDigest {
			t.Errorf("CutDigest, CutTag(%q) = %q %q %q %v %v, want %q %q %q %v %v", tc.ref, name, tag, digest, hasTag, hasDigest,
				tc.name, tc.tag, tc.digest, tc.hasTag, tc.hasDigest)
		}
	}
}

func TestNPM(t *testing.T) {
	for _, tc := range []struct {
		spec, name, version string
		validVersion        bool
	}{
		{"weather-mcp", "weather-mcp", "", true},
		{"weather-mcp@1.2.3", "weather-mcp", "1.2.3", true},
		{"@scope/srv", "@scope/srv", "", true},
		{"@scope/srv@^2", "@scope/srv", "^2", true},
		{"srv@>=1 <2", "srv", ">=1 <2", false},
		{"srv@latest", "srv", "latest", true},
		{"a@b@c", "a@b", "c", true},
		{"@", "@", "", true},
		{"", "", "", true},
	} {
		name, version := SplitNPM(tc.spec)
		if name != tc.name || version != tc.version {
			t.Errorf("SplitNPM(%q) = %q, %q, want %q, %q", tc.spec, name, version, tc.name, tc.version)
		}
		if NPMVersion(version) != tc.validVersion {
			t.Errorf("NPMVersion(%q) = %v", version, !tc.validVersion)
		}
	}
	for spec, want := range map[string]bool{
		"acme/weather-mcp": true, "acme/weather-mcp#v1": true, "a-b/c.d_e": true,
		"@scope/srv": false, "-acme/x": false, "acme/x/y": false, "srv": false, "github:acme/x": false,
	} {
		if NPMShorthand(spec) != want {
			t.Errorf("NPMShorthand(%q) = %v", spec, !want)
		}
	}
}
