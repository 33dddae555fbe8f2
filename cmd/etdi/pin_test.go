package main

import (
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/internal/testgen"
	"github.com/etdi-dev/etdi/keys"
	"github.com/secure-systems-lab/go-securesystemslib/encrypted"
)

// pinEnv is a client and provider setup in one temporary directory.
type pinEnv struct {
	t   *testing.T
	dir string
}

func newPinEnv(t *testing.T) *pinEnv {
	t.Helper()
	p := &pinEnv{t, t.TempDir()}
	manifest, _ := os.ReadFile("demodata/weather.manifest.json")
	p.write("v1.manifest.json", string(manifest))
	for _, f := range []string{"live-ok.json", "live-rugpull.json"} {
		b, _ := os.ReadFile("demodata/" + f)
		p.write(f, string(b))
	}
	if err := copyPinKeys(p.dir); err != nil {
		t.Fatal(err)
	}
	return p
}

// copyPinKeys copies the keys and trust policy of pinKeys into dir.
func copyPinKeys(dir string) error {
	pinKeys.once.Do(func() { pinKeys.dir, pinKeys.err = makePinKeys() })
	if pinKeys.err != nil {
		return pinKeys.err
	}
	for _, name := range pinKeyFiles {
		src := filepath.Join(pinKeys.dir, name)
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		fi, _ := os.Stat(src)
		if err := os.WriteFile(filepath.Join(dir, name), b, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

// pinKeys holds the keys and trust policy every pinEnv starts with:
// acme (keys acme and acme2) and evil (key evil) trusted, unsigned tools
// blocked. They are made once per test run and copied.
//
// Every signature with a key file costs its scrypt derivation, and the
// tests and scripts sign a few hundred times with these keys: they are
// encrypted with cosign's legacy scrypt parameters (N=2^15), which etdi
// reads like its own (N=2^16) in half the time. The tests of the key file
// itself (key_generate.txtar, sign_key.txtar) use keys etdi key generate
// wrote.
var pinKeys struct {
	once sync.Once
	dir  string
	err  error
}

var pinKeyFiles = []string{"acme.key", "acme.pub", "acme2.key", "acme2.pub", "evil.key", "evil.pub", "trust.json"}

func makePinKeys() (string, error) {
	dir, err := os.MkdirTemp(testTmp, "pinkeys-")
	if err != nil {
		return "", err
	}
	for _, name := range []string{"acme", "acme2", "evil"} {
		if err := writeLegacyKey(filepath.Join(dir, name)); err != nil {
			return "", err
		}
	}
	for _, args := range [][]string{
		{"trust", "add", "--policy", "trust.json", "--provider", "acme", "--key", "acme.pub", "--key", "acme2.pub"},
		{"trust", "add", "--policy", "trust.json", "--provider", "evil", "--key", "evil.pub"},
	} {
		cmd := exec.Command(etdiBin, args...)
		cmd.Dir = dir
		cmd.Env = append([]string{"HOME=" + dir}, pwEnv...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("etdi %v: %v\n%s", args, err, out)
		}
	}
	return dir, nil
}

// writeLegacyKey writes an Ed25519 key pair as etdi key generate does
// (PREFIX.key mode 0600, PREFIX.pub), the private key encrypted with the
// password of the tests and cosign's legacy scrypt parameters.
func writeLegacyKey(prefix string) error {
	priv, err := keys.Generate(keys.Ed25519)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	sealed, err := encrypted.EncryptWithCustomKDFParameters(der, []byte(testPassword), encrypted.Legacy)
	if err != nil {
		return err
	}
	pub, err := keys.MarshalPublicKey(priv.Public())
	if err != nil {
		return err
	}
	if err := os.WriteFile(prefix+".key", pem.EncodeToMemory(&pem.Block{Type: keys.PrivateKeyPEMType, Bytes: sealed}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(prefix+".pub", pub, 0o644)
}

func (p *pinEnv) write(name, content string) {
	if err := os.WriteFile(filepath.Join(p.dir, name), []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func (p *pinEnv) run(args ...string) result {
	p.t.Helper()
	return runEtdi(p.t, p.dir, append(pwEnv, "ETDI_AUDIT_PASSWORD=audit-"+testPassword), args...)
}

func (p *pinEnv) ok(args ...string) result {
	p.t.Helper()
	r := p.run(args...)
	if r.code != 0 {
		p.t.Fatalf("etdi %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

// expect runs etdi and checks the exit code and that the output names want.
func (p *pinEnv) expect(code int, want string, args ...string) result {
	p.t.Helper()
	r := p.run(args...)
	if r.code != code || !strings.Contains(r.stdout+r.stderr, want) {
		p.t.Fatalf("etdi %v: exit %d (want %d), output lacks %q:\n%s%s", args, r.code, code, want, r.stdout, r.stderr)
	}
	return r
}

var pinArgs = []string{"--trust", "trust.json", "--pins", "pins.db"}

func (p *pinEnv) check(bundle, tools string, extra ...string) []string {
	args := append([]string{"check"}, pinArgs...)
	if bundle != "" {
		args = append(args, "--bundle", bundle)
	}
	if tools != "" {
		args = append(args, "--tools", tools)
	}
	return append(append(args, extra...), "--json")
}

// kindsOf returns the error finding kinds of a check --json output of
// one server.
func kindsOf(t *testing.T, out string) []string {
	var co checkOutput
	if err := json.Unmarshal([]byte(out), &co); err != nil || len(co.Servers) != 1 {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	var k []string
	for _, f := range co.Servers[0].Findings {
		if f.Severity == "error" {
			if f.Item != "" { // a prompt, resource or resource template
				k = append(k, string(f.Kind)+":"+f.Item)
				continue
			}
			k = append(k, string(f.Kind))
		}
	}
	return k
}

func readFile(t *testing.T, dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func be(n uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return b[:]
}

// Ten processes check and approve on one database at once: every one
// finishes with a verdict, and the database and its history stay intact.
// It stays Go: which process comes first decides whether each ends with 0
// or 13, and a script's background command expects one exit status.
func TestCLIConcurrentProcesses(t *testing.T) {
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "allow")
	p.ok("sign", "--key", "acme.key", "--out", "v1.etdi.json", "v1.manifest.json")
	var wg sync.WaitGroup
	results := make([]result, 10)
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var args []string
			if i%2 == 0 {
				args = append([]string{"pin", "approve"}, append(pinArgs, "--bundle", "v1.etdi.json", "--tools", "live-ok.json", "--lock-timeout", "30s")...)
			} else {
				args = append([]string{"check"}, append(pinArgs, "--bundle", "v1.etdi.json", "--tools", "live-ok.json", "--lock-timeout", "30s")...)
			}
			results[i] = runEtdi(t, p.dir, pwEnv, args...)
		}(i)
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 && r.code != 13 {
			t.Errorf("process %d: exit %d\n%s%s", i, r.code, r.stdout, r.stderr)
		}
	}
	p.expect(0, "history intact", "audit", "verify", "--pins", "pins.db")
	p.expect(0, `"exitCode": 0`, p.check("v1.etdi.json", "live-ok.json")...)
	r := p.ok("pin", "history", "--pins", "pins.db", "--json")
	var recs []map[string]any
	json.Unmarshal([]byte(r.stdout), &recs)
	approvals := 0
	for _, rec := range recs {
		if rec["type"] == "approve" {
			approvals++
		}
	}
	if approvals != 2 {
		t.Errorf("%d approval records, want 2 (each tool once)", approvals)
	}
}

// A process killed while approving 3,000 tools leaves the database as it
// was before or after the approval, never in between, the history still
// verifies, and the next approval completes. It stays Go: the kills are placed at fractions of a
// measured approval, which a script cannot time.
func TestCLIKilledMidWrite(t *testing.T) {
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "allow")
	// Each server gets its own tool names: the same names on two servers
	// would be refused as shadowing and nothing would be written.
	approve := func(name string) *exec.Cmd {
		list := strings.ReplaceAll(string(testgen.ToolsList(3000)), `"tool_`, `"`+name+`_`)
		p.write(name+".json", list)
		cmd := exec.Command(etdiBin, append([]string{"pin", "approve"}, append(pinArgs, "--name", name, "--tools", name+".json", "--lock-timeout", "30s")...)...)
		cmd.Dir = p.dir
		cmd.Env = testEnv("HOME="+p.dir, "PATH="+os.Getenv("PATH"))
		return cmd
	}
	// Measure a whole approval, then kill others at points across it.
	base := approve("baseline")
	start := time.Now()
	if out, err := base.CombinedOutput(); err != nil || !strings.Contains(string(out), "approved unsigned:baseline/baseline_02999") {
		t.Fatalf("baseline approval: %v %.300s", err, out)
	}
	full := time.Since(start)
	t.Logf("approving 3,000 tools takes %v", full)
	complete := 0
	// The last round is not killed: an approval into the database the
	// kills left behind completes. Where the kills land depends on the
	// machine's load, so how many of them landed after the write is
	// reported, not asserted.
	fracs := []float64{0.2, 0.4, 0.6, 0.8, 0.9, 0.95, 1.5, 0}
	for round, frac := range fracs {
		cmd := approve(fmt.Sprintf("big%d", round))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if frac > 0 {
			time.Sleep(time.Duration(frac * float64(full)))
			cmd.Process.Signal(syscall.SIGKILL)
		}
		cmd.Wait()
		p.expect(0, "history intact", "audit", "verify", "--pins", "pins.db")
		l := p.ok("pin", "list", "--pins", "pins.db", "--json")
		var list struct{ Pins []map[string]any }
		json.Unmarshal([]byte(l.stdout), &list)
		n := 0
		for _, row := range list.Pins {
			if strings.HasPrefix(row["ref"].(string), fmt.Sprintf("unsigned:big%d/", round)) {
				n++
			}
		}
		if n != 0 && n != 3000 {
			t.Fatalf("round %d: %d of 3000 pins written: a partial approval", round, n)
		}
		if frac == 0 {
			if n != 3000 {
				t.Fatalf("the approval not killed wrote %d of 3000 pins", n)
			}
			break
		}
		if n == 3000 {
			complete++
		}
		t.Logf("killed at %.0f%%: %d pins", frac*100, n)
	}
	t.Logf("%d of %d killed approvals had completed", complete, len(fracs)-1)
}
