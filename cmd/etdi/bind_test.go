package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// buildWeather puts the in-band example server in dir under name; build
// makes another binary with the same tools. Each build is linked once per
// test binary and copied: a copy is the file a build in dir would have
// written (Go builds are reproducible), so its digest is the same.
func buildWeather(t *testing.T, dir, name, build string) string {
	t.Helper()
	src := weatherBuild(t, build)
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// weatherBuilds are the example server's builds of this test binary, by
// build string, in a folder removed when the tests end.
var weatherBuilds struct {
	sync.Mutex
	dir  string
	bins map[string]string
}

// weatherBuild returns the example server built with build, building it
// on first use.
func weatherBuild(t *testing.T, build string) string {
	t.Helper()
	bin, err := buildWeatherOnce(build)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// buildWeatherOnce returns the example server built with build, building
// it on first use.
func buildWeatherOnce(build string) (string, error) {
	weatherBuilds.Lock()
	defer weatherBuilds.Unlock()
	if bin, ok := weatherBuilds.bins[build]; ok {
		return bin, nil
	}
	if weatherBuilds.dir == "" {
		dir, err := os.MkdirTemp("", "etdi-weather-")
		if err != nil {
			return "", err
		}
		weatherBuilds.dir, weatherBuilds.bins = dir, map[string]string{}
		cleanupAfterTests(func() { os.RemoveAll(dir) })
	}
	bin := filepath.Join(weatherBuilds.dir, fmt.Sprintf("weather-%d", len(weatherBuilds.bins)))
	args := []string{"build", "-o", bin}
	if build != "" {
		args = append(args, "-ldflags", "-X main.build="+build)
	}
	if out, err := exec.Command("go", append(args, "../../examples/inband-server")...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build example: %v %s", err, out)
	}
	weatherBuilds.bins[build] = bin
	return bin, nil
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// A bundle bound to the digest of the binary it was made for: that binary
// passes; another build carrying the same genuine bundle in-band is
// impersonation, for etdi check and for etdi run (whose host sees no tool
// and whose calls are refused), and with the bundle given out of band
// etdi run does not start it at all.
func TestBindArtifactGoServer(t *testing.T) {
	p := newPinEnv(t)
	bin := buildWeather(t, p.dir, "weather", "")
	other := buildWeather(t, p.dir, "weather-other", "other")
	if fileSHA256(t, bin) == fileSHA256(t, other) {
		t.Fatal("the two builds are the same file")
	}
	r := p.ok("manifest", "init", "--provider", "acme", "--server", "--", bin)
	if !strings.Contains(r.stdout, `"artifacts":[{"digest":"`+fileSHA256(t, bin)+`","name":"weather","type":"file"}]`) {
		t.Fatalf("manifest init did not bind the binary:\n%s\n%s", r.stdout, r.stderr)
	}
	p.write("w.manifest.json", r.stdout)
	p.ok("sign", "--key", "acme.key", "--out", "w.etdi.json", "w.manifest.json")
	bundle := filepath.Join(p.dir, "w.etdi.json")

	if r := p.liveCheck(nil, "--yes", "--server", "--", bin, "-bundle", bundle); r.code != 0 {
		t.Fatalf("the bound binary: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = p.liveCheck(nil, "--json", "--server", "--", other, "-bundle", bundle)
	if r.code != 12 || !strings.Contains(r.stdout, `"kind": "impersonation"`) || !strings.Contains(r.stdout, "weather-other") {
		t.Fatalf("another build with the same bundle in-band: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := p.liveCheck(nil, "--bundle", "w.etdi.json", "--server", "--", other); r.code != 12 {
		t.Fatalf("another build with the bundle out of band: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// etdi run: the bound binary's tools reach the host; the other's do not.
	cs, _ := sdkHost(t, p.gatedCmd(nil, nil, bin, "-bundle", bundle))
	if lt, err := cs.ListTools(context.Background(), nil); err != nil || len(lt.Tools) != 1 {
		t.Fatalf("through the gate, the bound binary: %v %v", lt, err)
	}
	cs.Close()
	cs, _ = sdkHost(t, p.gatedCmd(nil, nil, other, "-bundle", bundle))
	if lt, err := cs.ListTools(context.Background(), nil); err != nil || len(lt.Tools) != 0 {
		t.Fatalf("through the gate, another build: %+v %v", lt, err)
	}
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_weather", Arguments: map[string]any{"city": "Berlin"}})
	if k := blockedKindOf(t, err); k == "" {
		t.Fatalf("call to another build's tool: %v", err)
	}
	cs.Close()
	run := exec.Command(etdiBin, p.gated([]string{"--bundle", "w.etdi.json"}, other)[1:]...)
	run.Dir = p.dir
	run.Env = append(os.Environ(), "HOME="+p.dir)
	out, err := run.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 12 || !strings.Contains(string(out), "not starting the server") {
		t.Fatalf("etdi run --bundle of another build: %v\n%s", err, out)
	}
}

// startHTTPWeather starts the example over Streamable HTTP on a free
// loopback port and returns its URL.
func startHTTPWeather(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-http", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("server URL: %v", err)
	}
	return strings.TrimSpace(line)
}

// A bundle bound to the URL its server is served from: that URL passes;
// another origin serving the same bundle in-band is impersonation, and an
// out-of-band bundle is held to the same rule.
func TestBindEndpointHTTP(t *testing.T) {
	p := newPinEnv(t)
	bin := buildWeather(t, p.dir, "weather", "")
	plain := startHTTPWeather(t, bin)
	r := p.ok("manifest", "init", "--provider", "acme", "--url", plain)
	if !strings.Contains(r.stdout, `"endpoints":["`+plain+`"]`) {
		t.Fatalf("manifest init did not bind the URL:\n%s", r.stdout)
	}
	p.write("w.manifest.json", r.stdout)
	p.ok("sign", "--key", "acme.key", "--out", "w.etdi.json", "w.manifest.json")
	// The bundle names the plain server's URL; serve it from there (no
	// bundle in-band: out of band) and in-band from another origin.
	other := startHTTPWeather(t, bin, "-bundle", filepath.Join(p.dir, "w.etdi.json"))
	if r := p.liveCheck(nil, "--yes", "--bundle", "w.etdi.json", "--url", plain); r.code != 0 {
		t.Fatalf("the bound URL: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := p.liveCheck(nil, "--url", plain+"?session=1"); r.code == 0 {
		t.Fatalf("no bundle at all passed: %d", r.code)
	}
	r = p.liveCheck(nil, "--json", "--url", other)
	if r.code != 12 || !strings.Contains(r.stdout, other) || !strings.Contains(r.stdout, "served only from "+plain) {
		t.Fatalf("the bundle in-band from another origin: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A credential in the URL reaches neither the finding nor the pins.
	const token = "sk_live_51HcQWeRtYuIoPaSdFgHjKl0987654321"
	r = p.liveCheck(nil, "--json", "--url", other+"?api_key="+token)
	db, _ := os.ReadFile(filepath.Join(p.dir, "pins.db"))
	if r.code != 12 || strings.Contains(r.stdout+r.stderr, token) || strings.Contains(string(db), token) {
		t.Fatalf("a URL with a credential: %d (token shown or stored)\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := p.liveCheck(nil, "--bundle", "w.etdi.json", "--url", other); r.code != 12 {
		t.Fatalf("the bundle out of band for another origin: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Through etdi run --url: the bound URL's tools reach the host, the
	// other origin's do not.
	for _, c := range []struct {
		flags []string
		tools int
	}{{[]string{"--bundle", "w.etdi.json", "--url", plain}, 1}, {[]string{"--url", other}, 0}} {
		cs, _ := sdkHost(t, p.gatedCmd(nil, c.flags))
		if lt, err := cs.ListTools(context.Background(), nil); err != nil || len(lt.Tools) != c.tools {
			t.Fatalf("etdi run %q: %+v %v", c.flags, lt, err)
		}
		cs.Close()
	}
	run := exec.Command(etdiBin, p.gated([]string{"--bundle", "w.etdi.json", "--url", other})[1:]...)
	run.Dir = p.dir
	run.Env = append(os.Environ(), "HOME="+p.dir)
	if out, err := run.CombinedOutput(); run.ProcessState.ExitCode() != 12 || !strings.Contains(string(out), "not starting the server") {
		t.Fatalf("etdi run --bundle --url of another origin: %v\n%s", err, out)
	}
	// The stdio build of the same server is not the endpoint either.
	if r := p.liveCheck(nil, "--bundle", "w.etdi.json", "--server", "--", bin); r.code != 12 {
		t.Fatalf("the bundle of a remote server for a stdio launch: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Unsigned servers: the same tools served by another binary of the same
// name are an update of the server (server_updated): approval required,
// refused where the trust policy blocks updates; approving shows both and
// records the new one.
func TestBindUnsignedArtifactRugPull(t *testing.T) {
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	bin := buildWeather(t, p.dir, "weather", "")
	other := buildWeather(t, p.dir, "weather-next", "next")
	// The host configuration runs "weather"; an update replaces the file.
	run := filepath.Join(p.dir, "bin", "weather")
	os.MkdirAll(filepath.Dir(run), 0o755)
	copyFile(t, bin, run)
	if r := p.liveCheck(nil, "--yes", "--name", "weather", "--server", "--", run); r.code != 0 {
		t.Fatalf("approve: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := p.liveCheck(nil, "--name", "weather", "--server", "--", run); r.code != 0 {
		t.Fatalf("unchanged: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	copyFile(t, other, run)
	// The same file name with other contents is an update of the server:
	// approval required by default, both files named.
	r := p.liveCheck(nil, "--json", "--name", "weather", "--server", "--", run)
	if r.code != 13 || !strings.Contains(r.stdout, `"server_updated"`) || strings.Contains(r.stdout, `"rug_pull"`) ||
		!strings.Contains(r.stdout, fileSHA256(t, bin)) || !strings.Contains(r.stdout, fileSHA256(t, other)) {
		t.Fatalf("another binary under the same tools: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Where the trust policy blocks updates it is an error that --yes
	// does not approve, and etdi run does not start it.
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn", "--on-update", "block")
	r = p.liveCheck(nil, "--json", "--name", "weather", "--server", "--", run)
	if r.code != 11 || !strings.Contains(r.stdout, `"/served"`) || !strings.Contains(r.stdout, fileSHA256(t, bin)) || !strings.Contains(r.stdout, fileSHA256(t, other)) {
		t.Fatalf("another binary under the same tools: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := p.liveCheck(nil, "--yes", "--name", "weather", "--server", "--", run); r.code != 11 {
		t.Fatalf("--yes approved a rug pull: %d\n%s", r.code, r.stdout)
	}
	// etdi run does not start the replaced implementation.
	gate := exec.Command(etdiBin, p.gated([]string{"--name", "weather"}, run)[1:]...)
	gate.Dir = p.dir
	gate.Env = append(os.Environ(), "HOME="+p.dir)
	out, err := gate.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 11 || !strings.Contains(string(out), "not starting the server") || !strings.Contains(string(out), fileSHA256(t, other)) {
		t.Fatalf("etdi run of the replaced binary: %v\n%s", err, out)
	}
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn", "--on-update", "ask")
	r = p.run("pin", "approve", "--trust", "trust.json", "--pins", "pins.db", "--name", "weather", "--server", "--", run)
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, fileSHA256(t, other)) {
		t.Fatalf("approving the update: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := p.liveCheck(nil, "--name", "weather", "--server", "--", run); r.code != 0 {
		t.Fatalf("after re-approval: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cs, _ := sdkHost(t, p.gatedCmd(nil, []string{"--name", "weather"}, run))
	if lt, err := cs.ListTools(context.Background(), nil); err != nil || len(lt.Tools) != 1 {
		t.Fatalf("through the gate after re-approval: %v %v", lt, err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(to) // a running copy stays intact
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// npm: a real server package installed from its lockfile, bound by its
// integrity. The same package at another version is caught.
func TestBindNPMPackage(t *testing.T) {
	needNode(t)
	p := newPinEnv(t)
	mcp, _ := filepath.Abs(mcpDir)
	var lock struct {
		Packages map[string]struct{ Version, Integrity string } `json:"packages"`
	}
	data, err := os.ReadFile(filepath.Join(mcp, "package-lock.json"))
	if err != nil || json.Unmarshal(data, &lock) != nil {
		t.Fatal(err)
	}
	want := lock.Packages["node_modules/@modelcontextprotocol/server-memory"]
	if want.Integrity == "" {
		t.Fatal("server-memory is not in the fixture lockfile")
	}
	// npx finds the package the lockfile installed (no registry).
	server := []string{"--server", "--", "npx", "--no-install", "@modelcontextprotocol/server-memory"}
	init := exec.Command(etdiBin, append([]string{"manifest", "init", "--provider", "acme"}, server...)...)
	init.Dir = mcp
	init.Env = []string{"HOME=" + p.dir, "PATH=" + os.Getenv("PATH")}
	out, err := init.Output()
	if err != nil {
		t.Fatalf("manifest init: %v", err)
	}
	bound := fmt.Sprintf(`{"digest":%q,"name":"@modelcontextprotocol/server-memory","type":"npm","version":%q}`, want.Integrity, want.Version)
	if !strings.Contains(string(out), bound) {
		t.Fatalf("manifest init did not bind the package (want %s):\n%s", bound, out)
	}
	p.write("m.manifest.json", string(out))
	p.ok("sign", "--key", "acme.key", "--out", "m.etdi.json", "m.manifest.json")
	// Another version of the package (its registry integrity differs).
	p.write("old.manifest.json", strings.Replace(string(out), `"version":"`+want.Version+`"`, `"version":"2025.4.25"`, 1))
	p.ok("sign", "--key", "acme.key", "--out", "old.etdi.json", "old.manifest.json")
	check := func(bundle string, extra ...string) result {
		args := append([]string{"check", "--trust", filepath.Join(p.dir, "trust.json"), "--pins", filepath.Join(p.dir, "pins.db"),
			"--start-timeout", "15s", "--timeout", "30s", "--bundle", filepath.Join(p.dir, bundle)}, extra...)
		return runEtdi(t, mcp, []string{"HOME=" + p.dir}, append(args, server...)...)
	}
	if r := check("m.etdi.json", "--yes"); r.code != 0 {
		t.Fatalf("the bound package: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := check("old.etdi.json"); r.code != 12 || !strings.Contains(r.stdout+r.stderr, "2025.4.25") {
		t.Fatalf("a bundle of another version: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// OCI: the image's digest, from a docker that answers image inspect (a
// stand-in on PATH; no daemon needed) and runs the example server.
func TestBindOCIImage(t *testing.T) {
	p := newPinEnv(t)
	bin := buildWeather(t, p.dir, "weather", "")
	digest := "sha256:" + strings.Repeat("ab", 32)
	fake := filepath.Join(p.dir, "fakebin")
	os.MkdirAll(fake, 0o755)
	script := fmt.Sprintf(`#!/bin/sh
if [ "$1" = image ] && [ "$2" = inspect ]; then
	cat %q 2>/dev/null || exit 1
	exit 0
fi
if [ "$1" = run ]; then exec %q; fi
exit 2
`, filepath.Join(p.dir, "repodigests"), bin)
	if err := os.WriteFile(filepath.Join(fake, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p.write("repodigests", `["ghcr.io/acme/weather@`+digest+`"]`+"\n")
	path := "PATH=" + fake + string(os.PathListSeparator) + os.Getenv("PATH")
	server := []string{"--server", "--", "docker", "run", "-i", "--rm", "ghcr.io/acme/weather:1.0"}
	r := runEtdi(t, p.dir, []string{path}, append([]string{"manifest", "init", "--provider", "acme"}, server...)...)
	if r.code != 0 || !strings.Contains(r.stdout, `{"digest":"`+digest+`","name":"ghcr.io/acme/weather","type":"oci","version":"1.0"}`) {
		t.Fatalf("manifest init: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	p.write("o.manifest.json", r.stdout)
	p.ok("sign", "--key", "acme.key", "--out", "o.etdi.json", "o.manifest.json")
	pins := "pins.db"
	check := func(extra ...string) result {
		args := append([]string{"check", "--trust", "trust.json", "--pins", pins, "--bundle", "o.etdi.json"}, extra...)
		return runEtdi(t, p.dir, []string{path}, append(args, server...)...)
	}
	if r := check("--yes"); r.code != 0 {
		t.Fatalf("the bound image: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	p.write("repodigests", `["ghcr.io/acme/weather@sha256:`+strings.Repeat("cd", 32)+`"]`+"\n")
	if r := check(); r.code != 12 {
		t.Fatalf("another image under the same tag: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Not pulled: where the tools were approved served by the image, a
	// rug pull (what runs cannot be told any more); elsewhere unresolved,
	// a warning by default, an error under require.
	os.Remove(filepath.Join(p.dir, "repodigests"))
	if r := check(); r.code != 11 {
		t.Fatalf("an approved image no longer present: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pins = "fresh.db"
	if r := check("--json"); r.code != 13 || !strings.Contains(r.stdout, `"kind": "artifact_unresolved"`) || !strings.Contains(r.stdout, `"severity": "warning"`) {
		t.Fatalf("an image not present (warn): %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	p.ok("trust", "artifacts", "--policy", "trust.json", "require")
	if r := check(); r.code != 12 {
		t.Fatalf("an image not present (require): %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// check warns about a command that runs a moving target, and not about a
// pinned one.
func TestMovingTargetWarning(t *testing.T) {
	s := newSecretEnv(t)
	fake := filepath.Join(s.dir, "fakebin")
	os.MkdirAll(fake, 0o755)
	if err := os.WriteFile(filepath.Join(fake, "docker"), []byte("#!/bin/sh\n[ \"$1\" = run ] && exec "+echoServer(t)+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.env = append(s.env, "PATH="+fake+string(os.PathListSeparator)+os.Getenv("PATH"))
	cfg := filepath.Join(s.dir, "mcp.json")
	writeText(t, cfg, `{"mcpServers": {"pinned": {"command": "docker", "args": ["run", "-i", "ghcr.io/acme/weather:1.2"]},
  "latest": {"command": "docker", "args": ["run", "-i", "ghcr.io/acme/weather:latest"]}}}`, 0o600)
	r := s.check(0, "--config", cfg, "--json", "--yes")
	var out struct {
		Servers []struct {
			Target   string `json:"target"`
			Findings []struct{ Kind, Severity, Message string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Servers) != 2 {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	for _, srv := range out.Servers {
		moving := false
		for _, f := range srv.Findings {
			moving = moving || (f.Kind == "moving_target" && f.Severity == "warning" && strings.Contains(f.Message, "latest"))
		}
		if moving != strings.HasPrefix(srv.Target, "latest") {
			t.Errorf("%s: moving_target %v\n%s", srv.Target, moving, r.stdout)
		}
	}
}

// A signed bundle that names no artifact: the pins still record what
// served its tools, so a replaced binary is a rug pull at check and etdi
// run does not start it.
func TestBindSignedUnboundReplaced(t *testing.T) {
	p := newPinEnv(t)
	bin := buildWeather(t, p.dir, "weather", "")
	other := buildWeather(t, p.dir, "weather-other", "other")
	r := p.ok("manifest", "init", "--no-bind", "--provider", "acme", "--server", "--", bin)
	if strings.Contains(r.stdout, "artifacts") {
		t.Fatalf("--no-bind bound the manifest:\n%s", r.stdout)
	}
	p.write("w.manifest.json", r.stdout)
	p.ok("sign", "--key", "acme.key", "--out", "w.etdi.json", "w.manifest.json")
	run := filepath.Join(p.dir, "bin", "weather")
	os.MkdirAll(filepath.Dir(run), 0o755)
	copyFile(t, bin, run)
	if r := p.liveCheck(nil, "--yes", "--bundle", "w.etdi.json", "--server", "--", run); r.code != 0 {
		t.Fatalf("approve: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	copyFile(t, other, run)
	if r := p.liveCheck(nil, "--bundle", "w.etdi.json", "--server", "--", run); r.code != 11 {
		t.Fatalf("a replaced binary under a signed bundle: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	gate := exec.Command(etdiBin, p.gated([]string{"--bundle", "w.etdi.json"}, run)[1:]...)
	gate.Dir = p.dir
	gate.Env = append(os.Environ(), "HOME="+p.dir)
	if out, _ := gate.CombinedOutput(); gate.ProcessState.ExitCode() != 11 || !strings.Contains(string(out), "not starting the server") {
		t.Fatalf("etdi run of a replaced signed server: %d\n%s", gate.ProcessState.ExitCode(), out)
	}
}
