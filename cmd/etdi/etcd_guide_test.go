//go:build !windows

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fromZeroSteps returns the shell block of docs/etcd.md's "From zero"
// section, as an operator pastes it.
func fromZeroSteps(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/etcd.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "<!-- from-zero:")
	if !ok {
		t.Fatal("docs/etcd.md has no from-zero steps")
	}
	_, block, _ = strings.Cut(block, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	return block
}

// The guide's "From zero, without docker" runs as written with bash in a
// fresh directory standing for a clone of etdi (deploy/ linked into it):
// etcd and etcdctl built from etcd's modules, one member, the roles, the
// approver's first check creating the store, then a client's check. What
// the test changes, and only that: the ports 2379 and 2380 become free
// ones; Go takes modules from the local module cache only (GOPROXY=off,
// GOSUMDB=off: no network); the etdi built for the tests is on the PATH;
// .vscode/mcp.json holds the fixture server; and, before the approver's
// step, a client's check is run to show that it cannot create the store.
// It stays Go: it runs the guide's shell block as docs/etcd.md writes it,
// so the guide cannot drift from what works.
func TestEtcdGuideFromZero(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs etcd")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	mcpNpm.need(t)
	dir := t.TempDir()
	repo, _ := filepath.Abs("../..")
	if err := os.Symlink(filepath.Join(repo, "deploy"), filepath.Join(dir, "deploy")); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"servers": map[string]any{"notes": map[string]any{
		"command": "node", "args": []string{fixtureJS, "notes"}, "env": map[string]string{"FIXTURE_MODE": "workspace"}}}})
	os.MkdirAll(filepath.Join(dir, ".vscode"), 0o755)
	os.WriteFile(filepath.Join(dir, ".vscode", "mcp.json"), cfg, 0o644)

	steps := fromZeroSteps(t)
	for _, want := range []string{"go install", "docker"} {
		if strings.Contains(steps, want) {
			t.Errorf("the guide's steps use %q", want)
		}
	}
	approver := strings.Index(steps, "# 4. FIRST the approver")
	if approver < 0 || strings.Index(steps, "etdi-client") < approver {
		t.Fatalf("the approver's step does not come before the clients':\n%s", steps)
	}
	clientFirst := `if ETDI_ETCD_USER=etdi-client ETDI_ETCD_PASSWORD=client-pw etdi check --config .vscode/mcp.json >client-first.out 2>&1; then exit 99; fi` + "\n"
	script := steps[:approver] + clientFirst + steps[approver:]
	cport, pport := strconv.Itoa(freePort(t)), strconv.Itoa(freePort(t))
	script = strings.ReplaceAll(strings.ReplaceAll(script, "2379", cport), "2380", pport)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// A script file, as pasted lines run: "bash -c" would exec the last
	// command in place of the shell, which would then be etcd's parent.
	scriptFile := filepath.Join(t.TempDir(), "from-zero.sh")
	if err := os.WriteFile(scriptFile, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-eo", "pipefail", scriptFile)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ETDI_") || strings.HasPrefix(k, "ETCDCTL") || k == "HOME" || k == "PATH" || k == "GOFLAGS" || k == "XDG_CONFIG_HOME" || k == "XDG_CACHE_HOME" {
			continue
		}
		env = append(env, kv)
	}
	gocache, _ := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	lines := strings.Fields(string(gocache))
	env = append(env, "HOME="+dir, "PATH="+filepath.Dir(etdiBin)+":"+os.Getenv("PATH"),
		"GOPROXY=off", "GOSUMDB=off", "GOWORK=off", "GOCACHE="+lines[0], "GOMODCACHE="+lines[1])
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Start()
	if err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) }) // etcd, started in the background
	err = cmd.Wait()
	first, _ := os.ReadFile(filepath.Join(dir, "client-first.out"))
	etcdLog, _ := os.ReadFile(filepath.Join(dir, "etcd.log"))
	if err != nil {
		if strings.Contains(out.String(), "module lookup disabled by GOPROXY=off") {
			t.Skipf("etcd's modules are not in the module cache:\n%s", out.String())
		}
		t.Fatalf("the guide's steps: %v\n%s\nclient first:\n%s\netcd.log (end):\n%s", err, out.String(), first, tail(etcdLog, 12000))
	}
	if !strings.Contains(string(first), "creating the pin store etcd://127.0.0.1:"+cport+"/etdi") || !strings.Contains(string(first), "permission denied") {
		t.Errorf("a client's check on a store no approver created:\n%s", first)
	}
	// What the approver approved is in the store, for the client too.
	r := runEtdi(t, dir, []string{"ETDI_PINS=etcd://127.0.0.1:" + cport + "/etdi", "ETDI_ETCD_USER=etdi-client", "ETDI_ETCD_PASSWORD=client-pw"}, "pin", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "notes") {
		t.Fatalf("pin list as the client: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
