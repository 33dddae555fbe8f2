package mcpb

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	mcpbToolOnce sync.Once
	mcpbToolErr  error
)

// mcpbTool returns the mcpb command of testdata/mcpb (@anthropic-ai/mcpb
// from npm), installing it with npm ci once per test run.
func mcpbTool(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs npm and node")
	}
	dir, err := filepath.Abs("../testdata/mcpb")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "node_modules", ".bin", "mcpb")
	mcpbToolOnce.Do(func() {
		if _, err := os.Stat(bin); err == nil {
			return
		}
		if _, err := exec.LookPath("npm"); err != nil {
			mcpbToolErr = err
			return
		}
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			mcpbToolErr = &exec.Error{Name: "npm ci in " + dir + ": " + string(out), Err: err}
		}
	})
	if mcpbToolErr != nil {
		if _, err := exec.LookPath("npm"); err != nil {
			t.Skipf("npm is not installed, so @anthropic-ai/mcpb cannot be: %v", err)
		}
		t.Fatal(mcpbToolErr)
	}
	return bin
}

// writeCert writes an RSA certificate and key as PEM (node-forge, which
// mcpb sign uses, reads only RSA keys).
func writeCert(t *testing.T, dir, cn string) (certPath, keyPath string, cert *x509.Certificate) {
	c, key := testCert(t, cn)
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath, c
}

func run(t *testing.T, env []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestRealMCPB packs a directory with mcpb pack, signs it with mcpb sign
// and a self-signed certificate, and checks that etdi reads the archive,
// verifies the signature and names the signer with the fingerprint mcpb
// verify computes (testdata/mcpb/inspect.mjs); a byte changed after
// signing fails for both.
func TestRealMCPB(t *testing.T) {
	mcpb := mcpbTool(t)
	dir := t.TempDir()
	ext := filepath.Join(dir, "ext")
	if err := os.MkdirAll(filepath.Join(ext, "server"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ext, "manifest.json"), []byte(manifestJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ext, "server", "index.mjs"), []byte("console.log('weather')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "weather.mcpb")
	if out, err := run(t, nil, mcpb, "pack", ext, file); err != nil {
		t.Fatalf("mcpb pack: %v\n%s", err, out)
	}
	f, err := Open(file)
	if err != nil {
		t.Fatal(err)
	}
	if f.Signature != nil || f.Manifest.Name != "weather" || len(f.Manifest.Tools) != 2 {
		t.Fatalf("packed file: %+v %+v", f.Signature, f.Manifest)
	}
	certPath, keyPath, cert := writeCert(t, dir, "ACME Weather")
	if out, err := run(t, nil, mcpb, "sign", file, "--cert", certPath, "--key", keyPath); err != nil {
		t.Fatalf("mcpb sign: %v\n%s", err, out)
	}
	// mcpb verify 2.1.2 reports every signed file as unsigned: node-forge
	// has no PKCS#7 verification (its verify() throws, and mcpb reads the
	// exception as "unsigned"). etdi verifies the signature itself;
	// inspect.mjs runs the steps of mcpb verify that work (mcpb's own
	// extractSignatureBlock, forge's parse, the messageDigest comparison).
	if out, err := run(t, nil, mcpb, "verify", file); err == nil || !strings.Contains(out, "not signed") {
		t.Fatalf("mcpb verify now verifies (update this test and docs/registry.md#mcpb-files): %v\n%s", err, out)
	}
	mcpbView := inspect(t, file)
	if !mcpbView.Signed || !mcpbView.DigestMatches {
		t.Fatalf("mcpb's view of the signed file: %+v", mcpbView)
	}
	f, err = Open(file)
	if err != nil {
		t.Fatal(err)
	}
	if f.Signature == nil || f.Signature.Err != nil {
		t.Fatalf("etdi: signature of the mcpb-signed file: %+v", f.Signature)
	}
	s := f.Signature.Signer
	if s.Fingerprint != mcpbView.Fingerprint || s.CommonName != mcpbView.Subject || !s.SelfSigned || s.CommonName != cert.Subject.CommonName {
		t.Errorf("etdi signer %+v, mcpb's view %+v", s, mcpbView)
	}

	// A byte changed after signing: mcpb verify and etdi both refuse.
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(data), "manifest.json")
	data[i] = 'M' // the local header's name: the archive still reads by its directory
	tampered := filepath.Join(dir, "tampered.mcpb")
	if err := os.WriteFile(tampered, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if v := inspect(t, tampered); !v.Signed || v.DigestMatches {
		t.Fatalf("mcpb's view of the tampered file: %+v", v)
	}
	f, err = Open(tampered)
	if err != nil {
		t.Fatal(err)
	}
	if f.Signature == nil || f.Signature.Err == nil {
		t.Fatal("etdi accepted the tampered file's signature")
	}
}

// mcpbView is what testdata/mcpb/inspect.mjs prints.
type mcpbView struct {
	Signed        bool   `json:"signed"`
	Fingerprint   string `json:"fingerprint"`
	Subject       string `json:"subject"`
	DigestMatches bool   `json:"digestMatches"`
}

func inspect(t *testing.T, file string) mcpbView {
	t.Helper()
	script, _ := filepath.Abs("../testdata/mcpb/inspect.mjs")
	cmd := exec.Command("node", script, file)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("inspect.mjs: %v", err)
	}
	var v mcpbView
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("inspect.mjs: %v: %s", err, out)
	}
	return v
}
