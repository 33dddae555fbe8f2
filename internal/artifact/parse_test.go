package artifact

import (
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
)

const token = "ghp_R3alLook1ngT0kenValue0123456789abcd"

var hexA = strings.Repeat("ab", 32)

// The command line is read as its launcher reads it: the package, image or
// file it names, never the value of a flag.
func TestParseForms(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		// want: kind name version (exact marked "="), image "name tag digest", file path; "!" prefix: resolving fails.
		want string
	}{
		// npm runners
		{[]string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me"}, "npm npx @modelcontextprotocol/server-filesystem"},
		{[]string{"npx", "--yes", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"}, "npm npx @modelcontextprotocol/server-everything =2026.8.31"},
		{[]string{"npx", "-p", "@acme/mcp@1.2.3", "acme-mcp", "--token", token}, "npm npx @acme/mcp =1.2.3"},
		{[]string{"npx", "--package=weather-mcp@latest", "weather"}, "npm npx weather-mcp latest"},
		{[]string{"npx", "--package", "weather-mcp@v1.0.0", "weather"}, "npm npx weather-mcp =1.0.0"},
		{[]string{"npx", "weather-mcp", "-p", "8080", "--package", "other"}, "npm npx weather-mcp"},
		{[]string{"npx", "--api-key", "hunter2pass", "@acme/server@2"}, "npm npx @acme/server 2"},
		{[]string{"npx", "--registry=https://r.example", "--quiet", "srv@^1"}, "npm npx srv ^1"},
		{[]string{"npx", "--cache", "/tmp/c", "srv@1.0.0"}, "npm npx srv =1.0.0"},
		{[]string{"/usr/local/bin/npx.cmd", "-y", "npm:tavily-mcp@0.2.1"}, "npm npx tavily-mcp =0.2.1"},
		{[]string{`C:\Program Files\nodejs\NPX.CMD`, "-y", "srv"}, "npm npx srv"},
		{[]string{"npm", "exec", "--", "@scope/srv@3.0.0"}, "npm npm exec @scope/srv =3.0.0"},
		{[]string{"npm", "x", "--package=@scope/srv", "srv"}, "npm npm exec @scope/srv"},
		{[]string{"bunx", "--bun", "@scope/srv@1.0.0"}, "npm bunx @scope/srv =1.0.0"},
		{[]string{"bun", "x", "@scope/srv"}, "npm bun x @scope/srv"},
		{[]string{"pnpm", "dlx", "@scope/srv@1.0.0"}, "!npm pnpm dlx @scope/srv =1.0.0"},
		{[]string{"yarn", "dlx", "-p", "@scope/srv@1", "srv"}, "!npm yarn dlx @scope/srv 1"},
		{[]string{"pnpx", "srv"}, "!npm pnpx srv"},
		{[]string{"npx", "-y", "github:acme/weather-mcp"}, "!npm npx"},
		{[]string{"npx", "-y", "acme/weather-mcp#v1"}, "!npm npx"},
		{[]string{"npx", "./local-pkg"}, "!npm npx"},
		{[]string{"npx", "jsr:@std/x"}, "!npm npx"},
		{[]string{"npx", "-y", token + "=x"}, "!npm npx"},
		{[]string{"npx", "-c", "echo hi"}, "!"},
		{[]string{"npx", "-p", "a", "-p", "b", "cmd"}, "!"},
		{[]string{"npx", "-y"}, "!"},
		{[]string{"npm", "start"}, "!"},
		{[]string{"pnpm", "run", "serve"}, "!"},
		// Python runners
		{[]string{"uvx", "mcp-server-fetch"}, "pypi uvx mcp-server-fetch"},
		{[]string{"uvx", "mcp-server-git==0.6.2", "--repository", "/src"}, "pypi uvx mcp-server-git =0.6.2"},
		{[]string{"uvx", "--from", "mcp-server-time[tz]==1.0", "mcp-server-time", "--local-timezone=UTC"}, "pypi uvx mcp-server-time =1.0"},
		{[]string{"uvx", "--from", "mcp-server-time[tz]>=1.0", "mcp-server-time"}, "pypi uvx mcp-server-time >=1.0"},
		{[]string{"uvx", "--python", "3.12", "ruff@0.6.0"}, "pypi uvx ruff =0.6.0"},
		{[]string{"uvx", "ruff@latest"}, "pypi uvx ruff latest"},
		{[]string{"uvx", "--token", "secretvalue", "pkg===1.0"}, "pypi uvx pkg =1.0"},
		{[]string{"uvx", "--from", "git+https://github.com/acme/weather-mcp.git@v1", "weather"}, "!pypi uvx"},
		{[]string{"uvx", "pkg; python_version>'3'"}, "!pypi uvx pkg"},
		{[]string{"uvx", "pkg%secret"}, "!pypi uvx"},
		{[]string{"uv", "tool", "run", "--with", "httpx", "mcp-server-fetch==0.6"}, "pypi uv tool run mcp-server-fetch =0.6"},
		{[]string{"uv.exe", "--quiet", "tool", "run", "x==1"}, "pypi uv tool run x =1"},
		{[]string{"pipx", "run", "--spec", "mcp-server-sqlite==0.1", "mcp-server-sqlite", "--db-path", "x.db"}, "pypi pipx run mcp-server-sqlite =0.1"},
		{[]string{"pipx", "run", "mcp-server-sqlite"}, "pypi pipx run mcp-server-sqlite"},
		{[]string{"pipx", "run", "pkg@1.0"}, "!pypi pipx run pkg"},
		{[]string{"pipx", "install", "pkg"}, "!"},
		{[]string{"uv", "sync"}, "!"},
		{[]string{"uv", "run", "mcp-server"}, "!"},
		{[]string{"uv", "--directory", "/srv/w", "run", "server.py"}, "file uv run server.py"},
		// Containers
		{[]string{"docker", "run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN=" + token, "ghcr.io/github/github-mcp-server"}, "oci docker run ghcr.io/github/github-mcp-server"},
		{[]string{"docker", "run", "-i", "--rm", "-e", "TOKEN", "ghcr.io/github/github-mcp-server:v0.4.0"}, "oci docker run ghcr.io/github/github-mcp-server v0.4.0"},
		{[]string{"docker", "run", "--rm", "-it", "--env", "A=" + token, "--env=B=" + token, "-v", "/data:/data", "--name", "mcp",
			"-p", "8080:80", "--network", "host", "-w", "/app", "-u", "1000", "--mount", "type=bind,src=/a,dst=/b",
			"--entrypoint", "/bin/serve", "--label=x=y", "mcp/fetch@sha256:" + hexA, "--arg", "v"}, "oci docker run mcp/fetch  sha256:" + hexA},
		{[]string{"docker", "run", "-ie", "TOKEN=" + token, "mcp/time:1.2@sha256:" + hexA}, "oci docker run mcp/time 1.2 sha256:" + hexA},
		{[]string{"docker", "run", "-eTOKEN=" + token, "mcp/time"}, "oci docker run mcp/time"},
		{[]string{"podman", "container", "run", "--rm", "-i", "--secret", "tok", "--creds", "u:" + token, "quay.io/acme/mcp"}, "oci podman run quay.io/acme/mcp"},
		{[]string{"nerdctl.exe", "run", "--", "localhost:5000/team/srv:1"}, "oci nerdctl run localhost:5000/team/srv 1"},
		{[]string{"docker", "--context", "remote", "run", "img:1"}, "!oci docker run img 1"},
		{[]string{"docker", "--context", "remote", "run", "img@sha256:" + hexA}, "oci docker run img  sha256:" + hexA},
		{[]string{"docker", "run", "--pull=always", "img:1"}, "!oci docker run img 1"},
		{[]string{"docker", "run", "--pull", "missing", "img:1"}, "oci docker run img 1"},
		{[]string{"docker", "run", "img@sha512:" + hexA + hexA}, "!"},
		{[]string{"docker", "run", "Bad_Image"}, "!"},
		{[]string{"docker", "run", "-e", "TOKEN=" + token}, "!"},
		{[]string{"docker", "compose", "up"}, "!"},
		// Interpreters
		{[]string{"node", "--enable-source-maps", "-r", "dotenv/config", "dist/index.js", "--token", token}, "file node dist/index.js"},
		{[]string{"node", "-e", "require('x')"}, "!"},
		{[]string{"node", "--eval=1"}, "!"},
		{[]string{"node"}, "!"},
		{[]string{"nodejs.exe", "--", "server.mjs"}, "file nodejs server.mjs"},
		{[]string{"tsx", "src/server.ts"}, "file tsx src/server.ts"},
		{[]string{"deno", "run", "--allow-net", "-c", "deno.json", "main.ts"}, "file deno run main.ts"},
		{[]string{"deno", "main.ts"}, "file deno main.ts"},
		{[]string{"deno", "task", "start"}, "!"},
		{[]string{"bun", "run", "--cwd", "x", "index.ts"}, "file bun index.ts"},
		{[]string{"bun", "server.ts"}, "file bun server.ts"},
		{[]string{"python3", "-u", "-W", "ignore", "server.py", "--token", token}, "file python3 server.py"},
		{[]string{"python3.12", "-Xdev", "server.py"}, "file python3.12 server.py"},
		{[]string{"py", "server.py"}, "file py server.py"},
		{[]string{"python", "-m", "weather_mcp"}, "!"},
		{[]string{"python", "-um", "weather_mcp"}, "!"},
		{[]string{"python", "-c", "print(1)"}, "!"},
		{[]string{"python"}, "!"},
		{[]string{"bash", "-eu", "-o", "pipefail", "run.sh"}, "file bash run.sh"},
		{[]string{"sh", "-c", "TOKEN=" + token + " node server.js"}, "!"},
		{[]string{"java", "-Xmx1g", "-jar", "/opt/srv/weather.jar"}, "file java -jar /opt/srv/weather.jar"},
		{[]string{"java", "-cp", "a.jar", "com.acme.Main"}, "!"},
		// Wrappers and programs
		{[]string{"env", "API_KEY=" + token, "mcp-weather", "--verbose"}, "file program mcp-weather"},
		{[]string{"env", "-i", "-u", "HOME", "PATH=/bin", "npx", "-y", "@acme/srv"}, "npm npx @acme/srv"},
		{[]string{"env", "-uHOME", "--unset=PATH", "-C/srv", "--chdir=/srv", "npx", "-y", "@acme/srv"}, "npm npx @acme/srv"},
		{[]string{"/usr/bin/env", "--", "node", "a.js"}, "file node a.js"},
		{[]string{"env", "-S", "node a.js"}, "!"},
		{[]string{"env", "-x", "node"}, "!"},
		{[]string{"env", "A=B"}, "!"},
		{[]string{"sudo", "weather"}, "!"},
		{[]string{"./start"}, "file program ./start"},
		{[]string{"./bin/weather-server", "--api-key", token}, "file program ./bin/weather-server"},
		{[]string{`C:\Tools\mcp-thing.exe`}, `file program C:\Tools\mcp-thing.exe`},
		{nil, "!"},
		{[]string{""}, "!"},
	} {
		p := parse(tc.argv)
		got := summary(&p)
		if got != tc.want {
			t.Errorf("parse(%q) = %q, want %q (why: %s)", tc.argv, got, tc.want, p.why)
		}
		if strings.Contains(p.why, token) || strings.Contains(p.what(), token) {
			t.Errorf("parse(%q): a message shows a credential: %s: %s", tc.argv, p.what(), p.why)
		}
	}
}

// summary renders a plan for TestParseForms.
func summary(p *plan) string {
	s := ""
	if p.why != "" {
		s = "!"
		if p.kind == "" || p.name == "" && p.ref.name == "" && p.path == "" {
			if p.kind == etdi.ArtifactNPM || p.kind == etdi.ArtifactPyPI {
				return s + p.kind + " " + p.runner
			}
			return s
		}
	}
	switch p.kind {
	case etdi.ArtifactNPM, etdi.ArtifactPyPI:
		s += p.kind + " " + p.runner + " " + p.name
		if p.version != "" {
			s += " "
			if p.exact {
				s += "="
			}
			s += p.version
		}
	case etdi.ArtifactOCI:
		s += p.kind + " " + p.runner + " " + p.ref.name
		if p.ref.tag != "" || p.ref.digest != "" {
			s += " " + p.ref.tag
		}
		if p.ref.digest != "" {
			s += " " + p.ref.digest
		}
	case etdi.ArtifactFile:
		s += p.kind + " " + p.runner + " " + p.path
	}
	return s
}

func TestCanonicalImage(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"alpine", "docker.io/library/alpine"},
		{"library/alpine", "docker.io/library/alpine"},
		{"index.docker.io/library/alpine", "alpine"},
		{"mcp/fetch", "docker.io/mcp/fetch"},
		{"localhost/x", "localhost/x"},
		{"ghcr.io/github/github-mcp-server", "ghcr.io/github/github-mcp-server"},
	} {
		if canonicalImage(tc.a) != canonicalImage(tc.b) {
			t.Errorf("%q and %q differ: %q, %q", tc.a, tc.b, canonicalImage(tc.a), canonicalImage(tc.b))
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"acme/x", "ghcr.io/acme/x"},
		{"localhost:5000/x", "localhost/x"},
		{"x", "y"},
	} {
		if canonicalImage(tc.a) == canonicalImage(tc.b) {
			t.Errorf("%q and %q are the same: %q", tc.a, tc.b, canonicalImage(tc.a))
		}
	}
}
