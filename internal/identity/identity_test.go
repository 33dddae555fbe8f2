package identity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/internal/redact"
)

const token = "ghp_R3alLook1ngT0kenValue0123456789abcd"

func TestCommand(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		// Package runners: the package, without its version.
		{[]string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me/Desktop"}, "@modelcontextprotocol/server-filesystem"},
		{[]string{"npx", "--yes", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"}, "@modelcontextprotocol/server-everything"},
		{[]string{"npx", "-p", "@acme/mcp@1.2.3", "acme-mcp", "--token", token}, "@acme/mcp"},
		{[]string{"npx", "--package=weather-mcp@latest", "weather"}, "weather-mcp"},
		{[]string{"npx", "weather-mcp", "-p", "8080", "--package", "other"}, "weather-mcp"},
		{[]string{"uvx", "weather-mcp", "--from", "other"}, "weather-mcp"},
		{[]string{"npx", "-y", "mcp-remote@0.1.0", "https://user:" + token + "@mcp.example.com/sse?key=" + token}, "mcp-remote"},
		{[]string{"/usr/local/bin/npx.cmd", "-y", "npm:tavily-mcp@0.2"}, "tavily-mcp"},
		{[]string{"bunx", "--bun", "@scope/srv@^2"}, "@scope/srv"},
		{[]string{"pnpm", "dlx", "@scope/srv"}, "@scope/srv"},
		{[]string{"yarn", "dlx", "-p", "@scope/srv@1", "srv"}, "@scope/srv"},
		{[]string{"pnpm", "server.js"}, "pnpm"},
		{[]string{"yarn", "start"}, "yarn"},
		{[]string{"bun", "server.ts"}, "server"},
		{[]string{"bun", "run", "server.ts"}, "server"},
		{[]string{"npm", "exec", "--", "@scope/srv@3"}, "@scope/srv"},
		{[]string{"uvx", "mcp-server-fetch"}, "mcp-server-fetch"},
		{[]string{"uvx", "mcp-server-git==0.6.2", "--repository", "/src"}, "mcp-server-git"},
		{[]string{"uvx", "--from", "mcp-server-time[tz]>=1.0", "mcp-server-time", "--local-timezone=UTC"}, "mcp-server-time"},
		{[]string{"uvx", "--python", "3.12", "--from", "git+https://" + token + "@github.com/acme/weather-mcp.git@v1", "weather"}, "weather-mcp"},
		{[]string{"uv", "tool", "run", "--with", "httpx", "mcp-server-fetch@0.6"}, "mcp-server-fetch"},
		{[]string{"pipx", "run", "--spec", "mcp-server-sqlite==0.1", "mcp-server-sqlite", "--db-path", "x.db"}, "mcp-server-sqlite"},
		{[]string{"pipx", "run", "mcp-server-sqlite"}, "mcp-server-sqlite"},
		// Containers: the image, skipping flags and their values.
		{[]string{"docker", "run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN=" + token, "ghcr.io/github/github-mcp-server"}, "ghcr.io/github/github-mcp-server"},
		{[]string{"docker", "run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server:v0.4.0"}, "ghcr.io/github/github-mcp-server"},
		{[]string{"docker", "run", "--rm", "-it", "--env", "A=" + token, "--env=B=" + token, "-v", "/data:/data", "--name", "mcp",
			"-p", "8080:80", "--network", "host", "-w", "/app", "-u", "1000", "--mount", "type=bind,src=/a,dst=/b",
			"--entrypoint", "/bin/serve", "--label=x=y", "mcp/fetch@sha256:" + strings.Repeat("ab", 32), "--arg", "v"}, "mcp/fetch"},
		{[]string{"docker", "run", "-ie", "TOKEN=" + token, "mcp/time"}, "mcp/time"},
		{[]string{"docker", "run", "-eTOKEN=" + token, "mcp/time"}, "mcp/time"},
		{[]string{"docker", "--context", "remote", "container", "run", "--rm", "localhost:5000/team/srv:1"}, "localhost:5000/team/srv"},
		{[]string{"podman", "run", "--rm", "-i", "--secret", "tok", "--creds", "u:" + token, "quay.io/acme/mcp"}, "quay.io/acme/mcp"},
		{[]string{"docker", "run", "-e", "TOKEN=" + token}, "docker"},
		{[]string{"docker", "compose", "up"}, "docker"},
		// Assignments and secrets never become a name.
		{[]string{"env", "API_KEY=" + token, "mcp-weather", "--verbose"}, "mcp-weather"},
		{[]string{"env", "-u", "HOME", "TOKEN=" + token, "npx", "-y", "@acme/srv"}, "@acme/srv"},
		{[]string{"npx", "-y", "TOKEN=" + token}, "npx"},
		{[]string{"npx", "-y", token}, "npx"},
		{[]string{"./bin/weather-server", "--api-key", token}, "weather-server"},
		{[]string{"java", "-jar", "/opt/srv/weather-mcp-1.0.jar"}, "weather-mcp-1.0"},
		{[]string{"python3", "-u", "-m", "weather_mcp.server", "--token", token}, "weather_mcp.server"},
		{[]string{"python", "-c", "print(1)"}, "python"},
		{[]string{"node", "-e", "require('x')"}, "node"},
		{[]string{"sh", "-c", "TOKEN=" + token + " node server.js"}, "sh"},
		{[]string{"C:\\Tools\\mcp-thing.exe"}, "mcp-thing"},
	} {
		if got := Command(tc.argv, t.TempDir()); got != tc.want {
			t.Errorf("Command(%q) = %q, want %q", tc.argv, got, tc.want)
		}
		if got := Command(tc.argv, ""); strings.Contains(got, token) || strings.Contains(got, "=") || !Valid(got) {
			t.Errorf("Command(%q) = %q: not a valid name", tc.argv, got)
		}
	}
}

// write creates a file and its directories.
func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Two npm servers both run from dist/index.js get their package names, not
// both "index".
func TestNodeScriptPackageJSON(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "weather/package.json"), `{"name": "@acme/weather-mcp", "version": "1.0.0"}`)
	write(t, filepath.Join(root, "weather/dist/package.json"), `{"type": "module"}`)
	write(t, filepath.Join(root, "weather/dist/index.js"), ``)
	write(t, filepath.Join(root, "files/package.json"), `{"name": "files-mcp"}`)
	write(t, filepath.Join(root, "files/build/index.js"), ``)
	write(t, filepath.Join(root, "bad/package.json"), `{"name": "GITHUB_TOKEN=`+token+`"}`)
	write(t, filepath.Join(root, "bad/index.js"), ``)
	write(t, filepath.Join(root, "py/pyproject.toml"), "[tool.x]\nname = \"nope\"\n[project]\nname = \"weather-py\"\nversion = \"1\"\n")
	write(t, filepath.Join(root, "py/src/server.py"), ``)
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../weather/dist/index.js", filepath.Join(root, "bin/weather")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		argv []string
		dir  string
		want string
	}{
		{[]string{"node", filepath.Join(root, "weather/dist/index.js")}, "", "@acme/weather-mcp"},
		{[]string{"node", "--enable-source-maps", "-r", "dotenv/config", "dist/index.js", "--token", token}, filepath.Join(root, "weather"), "@acme/weather-mcp"},
		{[]string{"node", "build/index.js"}, filepath.Join(root, "files"), "files-mcp"},
		{[]string{"node", filepath.Join(root, "bin/weather")}, "", "@acme/weather-mcp"},
		// An invalid package name is passed over; the script's name is left.
		{[]string{"node", filepath.Join(root, "bad/index.js")}, "", "index"},
		{[]string{"python3", "src/server.py"}, filepath.Join(root, "py"), "weather-py"},
		{[]string{"uv", "--directory", filepath.Join(root, "py"), "run", "src/server.py"}, "", "weather-py"},
		// A script that does not exist: its base name.
		{[]string{"node", "/nowhere/dist/index.js"}, "", "index"},
	} {
		if got := Command(tc.argv, tc.dir); got != tc.want {
			t.Errorf("Command(%q, %q) = %q, want %q", tc.argv, tc.dir, got, tc.want)
		}
	}
}

func TestURL(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"https://mcp.example.com/mcp", "mcp.example.com/mcp"},
		{"https://mcp.example.com:443/v1/mcp/", "mcp.example.com/v1/mcp"},
		{"http://127.0.0.1:3001/mcp", "127.0.0.1:3001/mcp"},
		{"http://user:" + token + "@Example.COM:8080/mcp?token=" + token + "#frag", "example.com:8080/mcp"},
		{"https://actions.example.com/mcp/" + token + "/sse", "actions.example.com/mcp/sse"},
		{"https://h.example/mcp;jsessionid=abc/x/key=v", "h.example/mcp/x"},
		{"http://[::1]:9/mcp", "[::1]:9/mcp"},
		{"https://example.com", "example.com"},
		{"/just/a/path", ""},
		{"::", ""},
	} {
		if got := URL(tc.raw); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}

func TestValid(t *testing.T) {
	for _, n := range []string{"weather", "@scope/name", "ghcr.io/github/github-mcp-server", "127.0.0.1:3001/mcp", "mcp-server-fetch"} {
		if !Valid(n) {
			t.Errorf("Valid(%q) = false", n)
		}
	}
	for _, n := range []string{"", "a=b", "a b", "a\x1bb", token, "x/" + token, strings.Repeat("a", MaxLen+1), "\xff"} {
		if Valid(n) {
			t.Errorf("Valid(%q) = true", n)
		}
	}
}

// FuzzCommand: whatever the command line, the name is valid and holds no
// argument that has '=' or looks like a credential.
func FuzzCommand(f *testing.F) {
	f.Add("docker\x00run\x00-e\x00A=" + token + "\x00img")
	f.Add("npx\x00-y\x00@a/b@1")
	f.Add("uvx\x00--from\x00git+https://x@h/r.git\x00r")
	f.Add("node\x00dist/index.js")
	f.Add("env\x00K=V\x00pipx\x00run\x00--spec\x00p==1\x00p")
	f.Add("npx\x00--api-key\x00hunter2pass\x00@acme/server")
	f.Add("uvx\x00--token\x00v\x00mcp-server-fetch[x]>=1")
	f.Fuzz(func(t *testing.T, s string) {
		argv := strings.Split(s, "\x00")
		n := Command(argv, "/nonexistent")
		if !Valid(n) {
			t.Fatalf("Command(%q) = %q: not valid", argv, n)
		}
		// The value of an unknown long flag of a runner is never the name,
		// though it is a valid package name.
		if len(argv) > 2 && (argv[0] == "npx" || argv[0] == "uvx") && strings.HasPrefix(argv[1], "--") && !strings.Contains(argv[1], "=") &&
			!npmFlags.bools[argv[1]] && !uvFlags.bools[argv[1]] && !npmFlags.pkg[argv[1]] && !uvFlags.pkg[argv[1]] && argv[1] != "--" &&
			!strings.Contains(s, "zqxvalue") {
			argv[2] = "zqxvalue"
			if n := Command(argv, "/nonexistent"); strings.Contains(n, "zqxvalue") {
				t.Fatalf("Command(%q) = %q: the value of %s", argv, n, argv[1])
			}
		}
	})
}

// FuzzURL: the name of any URL is "" or valid, and never holds the
// password or the query.
func FuzzURL(f *testing.F) {
	f.Add("https://u:p4ssw0rd-secret@h.example:8443/a/b?token=abcdef#x")
	f.Add("http://[::1]/mcp")
	f.Add("https://h/%2F%0a/x")
	f.Fuzz(func(t *testing.T, raw string) {
		n := URL(raw)
		if n != "" && !Valid(n) {
			t.Fatalf("URL(%q) = %q: not valid", raw, n)
		}
	})
}

// The value of a runner's flag is never the package, even when it is a
// valid package name: a long flag not known to take no value takes the
// next argument (npx --api-key SECRET pkg). When no argument parses as a
// package, the name falls back to the program's base name.
func TestCommandFlagValueNeverPackage(t *testing.T) {
	for _, tc := range []struct {
		argv   []string
		want   string
		secret string
	}{
		{[]string{"npx", "-y", "--api-key", "hunter2pass", "@acme/server"}, "@acme/server", "hunter2pass"},
		{[]string{"npx", "--api-key", "hunter2pass", "@acme/server"}, "@acme/server", "hunter2pass"},
		{[]string{"npx", "-y", "--token", "mysecretvalue", "@acme/server"}, "@acme/server", "mysecretvalue"},
		{[]string{"uvx", "--token", "mysecretvalue", "mcp-server-fetch"}, "mcp-server-fetch", "mysecretvalue"},
		{[]string{"npm", "exec", "--auth", "mysecretvalue", "--", "@acme/server"}, "@acme/server", "mysecretvalue"},
		{[]string{"bunx", "--registry-token", "mysecretvalue", "weather-mcp@1"}, "weather-mcp", "mysecretvalue"},
		{[]string{"pnpm", "dlx", "--secret", "mysecretvalue", "weather-mcp"}, "weather-mcp", "mysecretvalue"},
		{[]string{"uv", "tool", "run", "--password", "mysecretvalue", "mcp-server-time"}, "mcp-server-time", "mysecretvalue"},
		{[]string{"pipx", "run", "--key", "mysecretvalue", "mcp-server-sqlite"}, "mcp-server-sqlite", "mysecretvalue"},
		// An unknown flag followed by nothing else: its value is not the
		// package, and the name falls back.
		{[]string{"npx", "--api-key", "hunter2pass"}, "npx", "hunter2pass"},
		{[]string{"uvx", "--token", "mysecretvalue"}, "uvx", "mysecretvalue"},
		// What follows the package belongs to the server.
		{[]string{"npx", "--api-key", "hunter2pass", "@acme/server", "--token", "mysecretvalue"}, "@acme/server", "mysecretvalue"},
		// An argument that is no package spec gives no name.
		{[]string{"npx", "-y", "not a package"}, "npx", ""},
		{[]string{"npx", "-y", "@acme/srv@1 2"}, "npx", ""},
		{[]string{"uvx", "pkg%secret"}, "uvx", ""},
		// Known flags without a value do not take the package.
		{[]string{"npx", "--yes", "--quiet", "@acme/server@2"}, "@acme/server", ""},
		{[]string{"uvx", "--isolated", "--no-cache", "mcp-server-fetch"}, "mcp-server-fetch", ""},
		{[]string{"pipx", "run", "--no-cache", "mcp-server-sqlite"}, "mcp-server-sqlite", ""},
		// --flag=value never takes the next argument.
		{[]string{"npx", "--registry=https://registry.example.com", "@acme/server"}, "@acme/server", ""},
		{[]string{"uvx", "--index-url=https://pypi.example.com/simple", "mcp-server-fetch[cli]>=1.0"}, "mcp-server-fetch", ""},
		// Explicit sources.
		{[]string{"npx", "-y", "github:acme/weather-mcp"}, "weather-mcp", ""},
		{[]string{"npx", "-y", "acme/weather-mcp#v1"}, "weather-mcp", ""},
		{[]string{"uvx", "git+https://github.com/acme/weather-mcp.git"}, "weather-mcp", ""},
	} {
		got := Command(tc.argv, t.TempDir())
		if got != tc.want {
			t.Errorf("Command(%q) = %q, want %q", tc.argv, got, tc.want)
		}
		if tc.secret != "" && strings.Contains(got, tc.secret) {
			t.Errorf("Command(%q) = %q: the flag's value is the identity", tc.argv, got)
		}
	}
}

// A derived name that holds a value of the server's secret set falls back
// to the program's base name, then to "server".
func TestCommandForSecrets(t *testing.T) {
	var s redact.Set
	s.Add("weather-mcp", "evilprog")
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"npx", "-y", "weather-mcp@1"}, "npx"},
		{[]string{"npx", "-y", "@acme/weather-mcp"}, "npx"},
		{[]string{"/bin/evilprog", "x"}, "server"},
		{[]string{"npx", "-y", "@acme/other"}, "@acme/other"},
	} {
		if got := CommandFor(tc.argv, "", &s); got != tc.want {
			t.Errorf("CommandFor(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
	// The values of a package flag are not secrets: the name stays.
	var args redact.Set
	argv := []string{"npx", "--package=weather-mcp", "weather", "--token", "mysecretvalue"}
	args.AddArgs(argv)
	if got := CommandFor(argv, "", &args); got != "weather-mcp" {
		t.Errorf("CommandFor(%q) = %q, want weather-mcp", argv, got)
	}
}

// TestCommandNestingBounded: programs that run programs are followed a
// few levels deep, never further, however deep a command line nests them.
func TestCommandNestingBounded(t *testing.T) {
	if got := Command([]string{"env", "env", "node", "s.js"}, ""); got != "s" {
		t.Errorf("two levels: %q", got)
	}
	var argv []string
	for range 10 {
		argv = append(argv, "env")
	}
	if got := Command(append(argv, "node", "s.js"), ""); got != "env" {
		t.Errorf("ten levels: %q", got)
	}
}
