// Tests of the operator files in this directory (docs/etcd.md): the shell
// scripts pass shellcheck, and, with real etcd, etcdctl and etcdutl
// binaries of the version go.mod requires, gen-certs.sh, local-cluster.sh,
// roles.sh and backup.sh do what the guide says, and the settings of
// docker-compose.yml run a TLS cluster that takes one etdi approval as
// one transaction. Without binaries on $ETDI_ETCD_BIN (a directory), the
// tests build them from the Go module proxy into a temporary directory
// (a few seconds once the build cache holds them). -short skips them.
package etcddeploy_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/internal/etcdtest"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.yaml.in/yaml/v3"
	"golang.org/x/mod/modfile"
)

var scripts = []string{"gen-certs.sh", "local-cluster.sh", "roles.sh", "backup.sh"}

func TestMain(m *testing.M) {
	code := m.Run()
	if tools.temp && os.Getenv("ETDI_ETCD_BIN") == "" {
		os.RemoveAll(tools.dir)
	}
	os.Exit(code)
}

func needPOSIX(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the scripts are POSIX shell scripts")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
}

func TestScriptsLint(t *testing.T) {
	needPOSIX(t)
	sc, err := exec.LookPath("shellcheck")
	for _, s := range scripts {
		var cmd *exec.Cmd
		if err == nil {
			cmd = exec.Command(sc, "--shell=sh", s)
		} else {
			cmd = exec.Command("sh", "-n", s)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", cmd, err, out)
		}
	}
	if err != nil {
		t.Log("shellcheck not installed: checked the syntax only (sh -n)")
	}
}

// tools are the etcd binaries, found or built once for every test.
var tools struct {
	once sync.Once
	dir  string
	temp bool // dir is removed when the tests end
	err  error
}

// etcdVersion is the etcd server module version go.mod requires.
func etcdVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Require {
		if r.Mod.Path == "go.etcd.io/etcd/server/v3" {
			return r.Mod.Version
		}
	}
	t.Fatal("go.mod requires no go.etcd.io/etcd/server/v3")
	return ""
}

// etcdBin is the directory holding etcd, etcdctl and etcdutl.
func etcdBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a real etcd cluster")
	}
	needPOSIX(t)
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("no openssl for gen-certs.sh")
	}
	version := etcdVersion(t)
	tools.once.Do(func() {
		if d := os.Getenv("ETDI_ETCD_BIN"); d != "" {
			tools.dir = d
			return
		}
		tools.dir, tools.temp, tools.err = buildTools(version)
	})
	if tools.err != nil {
		t.Fatalf("building etcd %s: %v", version, tools.err)
	}
	out, err := exec.Command(filepath.Join(tools.dir, "etcd"), "--version").Output()
	if err != nil {
		t.Fatalf("etcd --version: %v", err)
	}
	if want := "etcd Version: " + strings.TrimPrefix(version, "v"); !strings.Contains(string(out), want) {
		t.Fatalf("%s/etcd --version says %q, want %q", tools.dir, out, want)
	}
	return tools.dir
}

// buildTools builds etcd, etcdctl and etcdutl at version in a module of
// their own, outside this one: their go.mod files carry replace
// directives, so go install MODULE@VERSION refuses them. They are kept
// between runs in the user's cache, a folder per checkout and version (temp reports a
// temporary folder instead, when there is no cache): a go build -o onto a
// program that is up to date does not link it again, as the go command
// compares the build ID it recorded in the program.
func buildTools(version string) (dir string, temp bool, err error) {
	root, rerr := filepath.Abs("../..")
	if base, cerr := os.UserCacheDir(); cerr == nil && rerr == nil {
		sum := sha256.Sum256([]byte(root))
		dir = filepath.Join(base, "etdi-test-builds", hex.EncodeToString(sum[:8]), "etcd-"+version)
		if os.MkdirAll(dir, 0o755) != nil {
			dir = ""
		}
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "etdi-etcd-tools-"); err != nil {
			return "", false, err
		}
		temp = true
	}
	mod := filepath.Join(dir, "mod")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return dir, temp, err
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module etdi-etcd-tools\n\ngo 1.26\n"), 0o644); err != nil {
		return dir, temp, err
	}
	run := func(args ...string) error {
		cmd := exec.Command("go", args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	pkgs := map[string]string{
		"etcd":    "go.etcd.io/etcd/server/v3",
		"etcdctl": "go.etcd.io/etcd/etcdctl/v3",
		"etcdutl": "go.etcd.io/etcd/etcdutl/v3",
	}
	get := []string{"get"}
	for _, p := range pkgs {
		get = append(get, p+"@"+version)
	}
	if err := run(get...); err != nil {
		return dir, temp, err
	}
	// The three builds share most packages (built once, in the build
	// cache) and are linked side by side.
	var wg sync.WaitGroup
	errs := make(chan error, len(pkgs))
	for name, p := range pkgs {
		wg.Go(func() { errs <- run("build", "-o", filepath.Join(dir, name), p) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return dir, temp, err
		}
	}
	return dir, temp, nil
}

func words(ports []int) string {
	var s []string
	for _, p := range ports {
		s = append(s, strconv.Itoa(p))
	}
	return strings.Join(s, " ")
}

// script runs a script of this directory with env added to the test's
// environment and fails the test when it fails.
func script(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	out, err := scriptErr(env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func scriptErr(env []string, name string, args ...string) (string, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return "", err
	}
	cmd := exec.Command("sh", append([]string{abs}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// waitHealthy polls each member's /health on its metrics port until all
// say healthy, alive reports a member gone, or a minute passes.
func waitHealthy(metricsPorts []int, alive func() error) error {
	deadline := time.Now().Add(60 * time.Second)
	for _, p := range metricsPorts {
		u := fmt.Sprintf("http://127.0.0.1:%d/health", p)
		for {
			resp, err := http.Get(u)
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if strings.Contains(string(body), `"health":"true"`) {
					break
				}
				err = errors.New(string(body))
			}
			if err := alive(); err != nil {
				return err
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: not healthy after 60 s: %v", u, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

// bindFailed reports whether a member's log says a port was taken.
func bindFailed(logs ...string) bool {
	for _, f := range logs {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), "address already in use") {
			return true
		}
	}
	return false
}

// pidsAlive is alive for local-cluster.sh: every pid file names a running
// process.
func pidsAlive(data string) func() error {
	return func() error {
		for _, n := range []string{"etcd1", "etcd2", "etcd3"} {
			b, err := os.ReadFile(filepath.Join(data, n+".pid"))
			if err != nil {
				return err
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				return err
			}
			p, err := os.FindProcess(pid)
			if err == nil {
				err = p.Signal(syscall.Signal(0))
			}
			if err != nil {
				return fmt.Errorf("%s (pid %d) exited: %v", n, pid, err)
			}
		}
		return nil
	}
}

// client is a client of endpoints presenting user's certificate from
// certs, and with a password when one is given.
func client(t *testing.T, certs string, endpoints []string, certUser, user, password string) (*clientv3.Client, error) {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(certs, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	tc := &tls.Config{RootCAs: pool}
	if certUser != "" {
		kp, err := tls.LoadX509KeyPair(filepath.Join(certs, certUser+".pem"), filepath.Join(certs, certUser+"-key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{kp}
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:          endpoints,
		TLS:                tc,
		DialTimeout:        5 * time.Second,
		Username:           user,
		Password:           password,
		MaxCallSendMsgSize: 64 << 20,
		Logger:             zap.NewNop(),
	})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { cli.Close() })
	return cli, nil
}

func mustClient(t *testing.T, certs string, endpoints []string, certUser, user, password string) *clientv3.Client {
	t.Helper()
	cli, err := client(t, certs, endpoints, certUser, user, password)
	if err != nil {
		t.Fatalf("client as %s/%s: %v", certUser, user, err)
	}
	return cli
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func put(cli *clientv3.Client, t *testing.T, key string) error {
	_, err := cli.Put(timeout(t, 10*time.Second), key, "v")
	return err
}

func getErr(cli *clientv3.Client, t *testing.T, key string) error {
	_, err := cli.Get(timeout(t, 10*time.Second), key)
	return err
}

// approval writes one transaction of n keys of size bytes under prefix.
func approval(t *testing.T, cli *clientv3.Client, prefix string, n, size int) error {
	var ops []clientv3.Op
	v := strings.Repeat("x", size)
	for i := range n {
		ops = append(ops, clientv3.OpPut(fmt.Sprintf("%s%06d", prefix, i), v))
	}
	_, err := cli.Txn(timeout(t, 60*time.Second)).Then(ops...).Commit()
	return err
}

// TestLocalClusterRolesBackupRestore walks the guide on real binaries:
// certificates, three members, roles and auth, the roles' limits, a
// backup, a restore.
func TestLocalClusterRolesBackupRestore(t *testing.T) {
	t.Parallel()
	bin := etcdBin(t)
	work := t.TempDir()
	certs := filepath.Join(work, "certs")
	data := filepath.Join(work, "data")
	script(t, nil, "gen-certs.sh", certs)
	// Again: keeps what exists, makes nothing new.
	if out := script(t, nil, "gen-certs.sh", certs); strings.Contains(out, "made") {
		t.Errorf("second gen-certs.sh run made files:\n%s", out)
	}

	var env []string
	var metricsPorts []int
	t.Cleanup(func() { stopLocal(t, env, data) })
	// Ports are free when picked, not always when etcd binds them: start
	// again on new ones when a member could not bind.
	for attempt := 1; ; attempt++ {
		ports := etcdtest.FreePorts(t, 9)
		metricsPorts = ports[6:9]
		env = []string{
			"ETCD=" + filepath.Join(bin, "etcd"),
			"ETCDUTL=" + filepath.Join(bin, "etcdutl"),
			"ETCDCTL=" + filepath.Join(bin, "etcdctl"),
			"CERTS=" + certs,
			"DATA=" + data,
			"CLIENT_PORTS=" + words(ports[0:3]),
			"PEER_PORTS=" + words(ports[3:6]),
			"METRICS_PORTS=" + words(metricsPorts),
		}
		script(t, env, "local-cluster.sh", "start")
		err := waitHealthy(metricsPorts, pidsAlive(data))
		if err == nil {
			break
		}
		logs, _ := filepath.Glob(filepath.Join(data, "*.log"))
		if attempt == 3 || !bindFailed(logs...) {
			t.Fatal(err)
		}
		t.Logf("attempt %d: %v; a port was taken, starting on other ports", attempt, err)
		stopLocal(t, env, data)
		if err := os.RemoveAll(data); err != nil {
			t.Fatal(err)
		}
	}
	eps := strings.Split(strings.TrimSpace(script(t, env, "local-cluster.sh", "endpoints")), ",")
	if len(eps) != 3 {
		t.Fatalf("endpoints: %q", eps)
	}

	// Before roles.sh, auth is off: the root certificate writes a key
	// outside the prefix for the checks below.
	root := mustClient(t, certs, eps, "root", "", "")
	if err := put(root, t, "other/x"); err != nil {
		t.Fatal(err)
	}

	ctlEnv := append(env,
		"ETCDCTL_ENDPOINTS="+strings.Join(eps, ","),
		"ETCDCTL_CACERT="+filepath.Join(certs, "ca.pem"),
		"ETCDCTL_CERT="+filepath.Join(certs, "root.pem"),
		"ETCDCTL_KEY="+filepath.Join(certs, "root-key.pem"),
		"ROOT_PASSWORD=root-secret",
		"CLIENT_PASSWORD=client-secret",
	)
	script(t, ctlEnv, "roles.sh", "/etdi/") // slashes trimmed: prefix "etdi/"
	out := script(t, ctlEnv, "roles.sh", "etdi")
	for _, want := range []string{"role etdi-client exists", "user etdi-approver exists", "Authentication Enabled"} {
		if !strings.Contains(out, want) {
			t.Errorf("second roles.sh run does not say %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"", "/", "a b", "../x", "x/../y"} {
		if out, err := scriptErr(ctlEnv, "roles.sh", bad); err == nil {
			t.Errorf("roles.sh %q succeeded:\n%s", bad, out)
		}
	}

	refusedWithoutCert(t, certs, eps)

	appr := mustClient(t, certs, eps, "etdi-approver", "", "")
	for _, k := range []string{"etdi/pins/acme:weather\x00get_weather", "etdi/servers/acme:weather", "etdi/meta/schema", "etdi/meta/logSize", "etdi/log/records/0"} {
		if err := put(appr, t, k); err != nil {
			t.Errorf("approver put %q: %v", k, err)
		}
	}
	// The approver writes an approval as one transaction of thousands of
	// keys and several MB.
	if err := approval(t, appr, "etdi/pins/bulk/", 5000, 2000); err != nil {
		t.Errorf("approval of 5000 keys, 10 MB: %v", err)
	}
	for _, k := range []string{"other/x", "etdi0", "etdj/x"} {
		if err := put(appr, t, k); !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Errorf("approver put %q: err = %v, want permission denied", k, err)
		}
	}
	if err := getErr(appr, t, "other/x"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("approver get other/x: err = %v, want permission denied", err)
	}

	cl := mustClient(t, certs, eps, "etdi-client", "", "")
	for _, k := range []string{"etdi/spools/m1/0001", "etdi/spools/m2/0001"} {
		if err := put(cl, t, k); err != nil {
			t.Errorf("client put %q: %v", k, err)
		}
	}
	if err := getErr(cl, t, "etdi/pins/acme:weather\x00get_weather"); err != nil {
		t.Errorf("client reads a pin: %v", err)
	}
	for _, k := range []string{"etdi/log/records/1", "etdi/log/hashes/1", "etdi/meta/logSize", "etdi/pins/x", "etdi/revoked/x", "etdi/meta/schema", "etdi/meta/logSize2", "etdi/logx", "other/x"} {
		if err := put(cl, t, k); !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Errorf("client put %q: err = %v, want permission denied", k, err)
		}
	}
	if err := getErr(cl, t, "other/x"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("client get other/x: err = %v, want permission denied", err)
	}
	// A password names the user even over another user's certificate:
	// etdi-client's password with the approver's certificate is the client.
	pw := mustClient(t, certs, eps, "etdi-approver", "etdi-client", "client-secret")
	if err := put(pw, t, "etdi/pins/x"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("password client put a pin: err = %v, want permission denied", err)
	}
	if err := put(pw, t, "etdi/spools/m1/0002"); err != nil {
		t.Errorf("password client put a spool entry: %v", err)
	}
	if _, err := client(t, certs, eps, "etdi-client", "etdi-client", "wrong"); !errors.Is(err, rpctypes.ErrAuthFailed) {
		t.Errorf("wrong password: err = %v, want %v", err, rpctypes.ErrAuthFailed)
	}
	// The root password signs in too (a JWT token, --auth-token jwt).
	rootPw := mustClient(t, certs, eps, "etdi-client", "root", "root-secret")
	if err := put(rootPw, t, "other/y"); err != nil {
		t.Errorf("root by password: %v", err)
	}
	// The members run with the settings of the guide.
	st, err := root.Status(timeout(t, 10*time.Second), eps[0])
	if err != nil {
		t.Fatal(err)
	}
	if st.DbSizeQuota != 8<<30 {
		t.Errorf("quota %d, want 8 GiB", st.DbSizeQuota)
	}

	// Backup, then a change, then restore: the change is gone, the rest
	// (auth included) is back.
	backups := filepath.Join(work, "backups")
	bEnv := append(ctlEnv, "KEEP=2")
	for range 3 {
		script(t, bEnv, "backup.sh", backups)
		time.Sleep(1100 * time.Millisecond) // names are per second
	}
	snaps, _ := filepath.Glob(filepath.Join(backups, "etdi-pins-*.db"))
	if len(snaps) != 2 {
		t.Fatalf("KEEP=2 left %d snapshots: %q", len(snaps), snaps)
	}
	if err := put(appr, t, "etdi/pins/after-backup"); err != nil {
		t.Fatal(err)
	}
	if out, err := scriptErr(env, "local-cluster.sh", "restore", snaps[1]); err == nil {
		t.Fatalf("restore with members running succeeded:\n%s", out)
	}
	script(t, env, "local-cluster.sh", "stop")
	script(t, env, "local-cluster.sh", "restore", snaps[1])
	script(t, env, "local-cluster.sh", "start")
	if err := waitHealthy(metricsPorts, pidsAlive(data)); err != nil {
		t.Fatal(err)
	}
	appr = mustClient(t, certs, eps, "etdi-approver", "", "")
	resp, err := appr.Get(timeout(t, 10*time.Second), "etdi/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	if slices.Contains(keys, "etdi/pins/after-backup") {
		t.Error("the key written after the backup survived the restore")
	}
	if !slices.Contains(keys, "etdi/meta/logSize") || len(keys) < 5000 {
		t.Errorf("restored %d keys under etdi/, want the backup's", len(keys))
	}
	cl = mustClient(t, certs, eps, "etdi-client", "", "")
	if err := put(cl, t, "etdi/pins/x"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("after restore client put a pin: err = %v, want permission denied", err)
	}
}

// stopLocal stops the members local-cluster.sh started; should the script
// fail, it signals the processes of its pid files.
func stopLocal(t *testing.T, env []string, data string) {
	out, err := scriptErr(env, "local-cluster.sh", "stop")
	if err == nil {
		return
	}
	t.Logf("local-cluster.sh stop: %v\n%s", err, out)
	pids, _ := filepath.Glob(filepath.Join(data, "*.pid"))
	for _, f := range pids {
		b, _ := os.ReadFile(f)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
			}
		}
	}
}

type compose struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Ports       []string          `yaml:"ports"`
		Volumes     []string          `yaml:"volumes"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

func readCompose(t *testing.T) compose {
	t.Helper()
	data, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// The settings docs/etcd.md asks for, as etcd environment variables.
var wantSettings = map[string]string{
	"ETCD_MAX_TXN_OPS":               "100000",
	"ETCD_MAX_REQUEST_BYTES":         "67108864",
	"ETCD_QUOTA_BACKEND_BYTES":       "8589934592",
	"ETCD_AUTO_COMPACTION_MODE":      "periodic",
	"ETCD_AUTO_COMPACTION_RETENTION": "24h",
	"ETCD_CLIENT_CERT_AUTH":          "true",
	"ETCD_PEER_CLIENT_CERT_AUTH":     "true",
}

// TestComposeFile checks the compose file's structure: three members that
// name each other, their certificates as gen-certs.sh names them, and the
// settings of the guide, which local-cluster.sh uses too.
func TestComposeFile(t *testing.T) {
	c := readCompose(t)
	names := []string{"etcd1", "etcd2", "etcd3"}
	if len(c.Services) != 3 {
		t.Fatalf("%d services, want 3", len(c.Services))
	}
	var cluster []string
	for _, n := range names {
		cluster = append(cluster, n+"=https://"+n+":2380")
	}
	local, err := os.ReadFile("local-cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		s, ok := c.Services[n]
		if !ok {
			t.Fatalf("no service %s", n)
		}
		if !strings.HasPrefix(s.Image, "gcr.io/etcd-development/etcd:v3.6.") {
			t.Errorf("%s: image %q is not etcd v3.6", n, s.Image)
		}
		e := s.Environment
		want := map[string]string{
			"ETCD_NAME":                        n,
			"ETCD_INITIAL_CLUSTER":             strings.Join(cluster, ","),
			"ETCD_ADVERTISE_CLIENT_URLS":       "https://" + n + ":2379",
			"ETCD_INITIAL_ADVERTISE_PEER_URLS": "https://" + n + ":2380",
			"ETCD_CERT_FILE":                   "/certs/" + n + ".pem",
			"ETCD_KEY_FILE":                    "/certs/" + n + "-key.pem",
			"ETCD_PEER_CERT_FILE":              "/certs/" + n + ".pem",
			"ETCD_PEER_KEY_FILE":               "/certs/" + n + "-key.pem",
			"ETCD_TRUSTED_CA_FILE":             "/certs/ca.pem",
			"ETCD_PEER_TRUSTED_CA_FILE":        "/certs/ca.pem",
		}
		for k, v := range wantSettings {
			want[k] = v
		}
		for k, v := range want {
			if e[k] != v {
				t.Errorf("%s: %s = %q, want %q", n, k, e[k], v)
			}
		}
		for _, u := range []string{"ETCD_LISTEN_CLIENT_URLS", "ETCD_LISTEN_PEER_URLS"} {
			if !strings.HasPrefix(e[u], "https://") {
				t.Errorf("%s: %s = %q: not TLS", n, u, e[u])
			}
		}
		if !slices.Contains(s.Volumes, "./certs:/certs:ro") {
			t.Errorf("%s: certificates not mounted read-only from ./certs: %q", n, s.Volumes)
		}
		if !slices.ContainsFunc(s.Volumes, func(v string) bool { return strings.HasSuffix(v, ":"+e["ETCD_DATA_DIR"]) }) {
			t.Errorf("%s: no volume on the data dir %q: %q", n, e["ETCD_DATA_DIR"], s.Volumes)
		}
	}
	// local-cluster.sh runs the same settings by default.
	for k, v := range wantSettings {
		flag := "--" + strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(k, "ETCD_")), "_", "-")
		if !strings.Contains(string(local), flag) {
			t.Errorf("local-cluster.sh has no %s", flag)
		}
		env := strings.TrimPrefix(k, "ETCD_")
		if strings.HasSuffix(env, "CERT_AUTH") {
			continue
		}
		if !strings.Contains(string(local), "${"+env+":-"+v+"}") {
			t.Errorf("local-cluster.sh: %s does not default to %s", flag, v)
		}
	}
}

var composeURL = regexp.MustCompile(`(https?)://(etcd[0-9]|0\.0\.0\.0):(2379|2380|2381)`)

// TestComposeSettingsOnRealEtcd runs the three members of the compose
// file as processes on 127.0.0.1, with the compose file's environment
// translated (host names and ports to local ones, /certs and the data dir
// to temporary directories): etcd accepts every variable, the members
// form a TLS cluster that requires client certificates, takes an
// approval of thousands of keys as one transaction, and with roles.sh
// knows a client by its certificate.
func TestComposeSettingsOnRealEtcd(t *testing.T) {
	t.Parallel()
	bin := etcdBin(t)
	c := readCompose(t)
	work := t.TempDir()
	certs := filepath.Join(work, "certs")
	script(t, nil, "gen-certs.sh", certs)
	names := []string{"etcd1", "etcd2", "etcd3"}
	var eps []string
	// Ports are free when picked, not always when etcd binds them: start
	// again on new ones when a member could not bind.
	for attempt := 1; ; attempt++ {
		var err error
		eps, err = startCompose(t, c, bin, filepath.Join(work, strconv.Itoa(attempt)), certs, names)
		if err == nil {
			break
		}
		if attempt == 3 || !errors.Is(err, errPortTaken) {
			t.Fatal(err)
		}
		t.Logf("attempt %d: %v; starting on other ports", attempt, err)
	}

	root := mustClient(t, certs, eps, "root", "", "")
	if err := approval(t, root, "etdi/pins/", 5000, 2000); err != nil {
		t.Errorf("approval of 5000 keys, 10 MB: %v", err)
	}
	if err := approval(t, root, "etdi/too-many/", 100001, 1); !errors.Is(err, rpctypes.ErrTooManyOps) {
		t.Errorf("transaction of 100001 operations: err = %v, want %v", err, rpctypes.ErrTooManyOps)
	}
	st, err := root.Status(timeout(t, 10*time.Second), eps[1])
	if err != nil {
		t.Fatal(err)
	}
	if st.DbSizeQuota != 8<<30 {
		t.Errorf("quota %d, want 8 GiB", st.DbSizeQuota)
	}
	refusedWithoutCert(t, certs, eps)

	// With auth on (roles.sh), the client certificate's common name is
	// the user (ETCD_CLIENT_CERT_AUTH).
	script(t, []string{
		"ETCDCTL=" + filepath.Join(bin, "etcdctl"),
		"ETCDCTL_ENDPOINTS=" + strings.Join(eps, ","),
		"ETCDCTL_CACERT=" + filepath.Join(certs, "ca.pem"),
		"ETCDCTL_CERT=" + filepath.Join(certs, "root.pem"),
		"ETCDCTL_KEY=" + filepath.Join(certs, "root-key.pem"),
	}, "roles.sh", "etdi")
	cl := mustClient(t, certs, eps, "etdi-client", "", "")
	if err := put(cl, t, "etdi/spools/m1/0001"); err != nil {
		t.Errorf("etdi-client by certificate: put a spool entry: %v", err)
	}
	if err := put(cl, t, "etdi/log/records/0"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("etdi-client by certificate: put a record: err = %v, want permission denied", err)
	}
	if err := put(cl, t, "etdi/pins/x"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("etdi-client by certificate: put a pin: err = %v, want permission denied", err)
	}
}

// refusedWithoutCert: a client trusting the CA but presenting no
// certificate fails the TLS handshake (it waits out its deadline).
func refusedWithoutCert(t *testing.T, certs string, eps []string) {
	t.Helper()
	cli, err := client(t, certs, eps, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Get(timeout(t, 2*time.Second), "etdi/x"); err == nil {
		t.Error("client without certificate read a key")
	}
}

var errPortTaken = errors.New("a member could not bind its port")

// startCompose starts the compose file's members as processes with their
// environment translated to work (data) and certs, on new ports, and
// waits until they are healthy. On failure it stops them; the error is
// errPortTaken when a member could not bind.
func startCompose(t *testing.T, c compose, bin, work, certs string, names []string) ([]string, error) {
	ports := map[string][]int{}
	all := etcdtest.FreePorts(t, 9)
	for i, n := range names {
		ports[n] = all[3*i : 3*i+3]
	}
	local := func(self string) func(string) string {
		return func(m string) string {
			sub := composeURL.FindStringSubmatch(m)
			host := sub[2]
			if host == "0.0.0.0" {
				host = self
			}
			idx := map[string]int{"2379": 0, "2380": 1, "2381": 2}[sub[3]]
			return fmt.Sprintf("%s://127.0.0.1:%d", sub[1], ports[host][idx])
		}
	}
	var (
		eps   []string
		logs  []string
		stops []func()
		exits []chan struct{}
	)
	stopAll := func() {
		for _, stop := range stops {
			stop()
		}
	}
	for _, n := range names {
		s := c.Services[n]
		if len(s.Command) == 0 || filepath.Base(s.Command[0]) != "etcd" {
			t.Fatalf("%s: command %q does not run etcd", n, s.Command)
		}
		env := []string{"PATH=" + os.Getenv("PATH")}
		for k, v := range s.Environment {
			v = composeURL.ReplaceAllStringFunc(v, local(n))
			v = strings.ReplaceAll(v, "/certs/", certs+"/")
			v = strings.ReplaceAll(v, "/var/lib/etcd", filepath.Join(work, n))
			env = append(env, k+"="+v)
		}
		if err := os.MkdirAll(work, 0o700); err != nil {
			t.Fatal(err)
		}
		logf, err := os.Create(filepath.Join(work, n+".log"))
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, logf.Name())
		cmd := exec.Command(filepath.Join(bin, "etcd"))
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			stopAll()
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		exits = append(exits, exited)
		var once sync.Once
		stop := func() {
			once.Do(func() {
				cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(30 * time.Second):
					cmd.Process.Kill()
					<-exited
				}
				logf.Close()
				if t.Failed() {
					b, _ := os.ReadFile(logf.Name())
					t.Logf("%s log:\n%s", n, tail(string(b), 40))
				}
			})
		}
		stops = append(stops, stop)
		t.Cleanup(stop)
		eps = append(eps, fmt.Sprintf("127.0.0.1:%d", ports[n][0]))
	}
	alive := func() error {
		for i, e := range exits {
			select {
			case <-e:
				return fmt.Errorf("%s exited", names[i])
			default:
			}
		}
		return nil
	}
	var metrics []int
	for _, n := range names {
		metrics = append(metrics, ports[n][2])
	}
	if err := waitHealthy(metrics, alive); err != nil {
		stopAll()
		if bindFailed(logs...) {
			return nil, fmt.Errorf("%w: %v", errPortTaken, err)
		}
		return nil, err
	}
	for i, f := range logs {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), "unrecognized environment variable") {
			t.Errorf("%s: etcd did not recognise a variable:\n%s", names[i], tail(string(b), 40))
		}
	}
	return eps, nil
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
