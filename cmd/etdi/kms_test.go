package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// TestKMSPlugin builds etdi with -tags kms and signs with a key held by a
// KMS plugin process (sigstore's plugin protocol), then verifies the bundle
// with the default build.
func TestKMSPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	build := func(out string, args ...string) {
		cmd := exec.Command("go", append([]string{"build", "-o", out}, args...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", args, err, b)
		}
	}
	build(filepath.Join(bin, "sigstore-kms-etditest"), "./testdata/kmsplugin")
	build(filepath.Join(bin, "etdi-kms"), "-tags", "kms", ".")

	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keyPEM, _ := cryptoutils.MarshalPrivateKeyToPEM(priv)
	pubPEM, _ := cryptoutils.MarshalPublicKeyToPEM(priv.Public())
	os.WriteFile(filepath.Join(dir, "kms-held.pem"), keyPEM, 0o600)
	os.WriteFile(filepath.Join(dir, "kms.pub"), pubPEM, 0o644)
	manifest, _ := os.ReadFile("demodata/weather.manifest.json")
	os.WriteFile(filepath.Join(dir, "weather.manifest.json"), manifest, 0o644)

	cmd := exec.Command(filepath.Join(bin, "etdi-kms"), "sign", "--key", "etditest://projects/p/keys/acme", "--out", "b.json", "weather.manifest.json")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + dir,
		"ETDI_TEST_KMS_KEY=" + filepath.Join(dir, "kms-held.pem"), "ETDI_TEST_KMS_LOG=" + filepath.Join(dir, "kms.log")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sign with a KMS key: %v\n%s", err, out)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "kms.log"))
	if !strings.Contains(string(log), "signMessage projects/p/keys/acme") {
		t.Fatalf("the plugin did not sign: log %q", log)
	}
	if r := runEtdi(t, dir, nil, "trust", "add", "--policy", "trust.json", "--provider", "acme", "--key", "kms.pub"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := runEtdi(t, dir, nil, "verify", "--trust", "trust.json", "b.json"); r.code != 0 || !strings.Contains(r.stdout, "ecdsa-p256-sha256") {
		t.Fatalf("verify KMS-signed bundle: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A missing plugin is a clear error, not a crash.
	cmd = exec.Command(filepath.Join(bin, "etdi-kms"), "sign", "--key", "nosuchkms://k", "--out", "c.json", "weather.manifest.json")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + bin, "HOME=" + dir}
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no kms provider found") {
		t.Fatalf("missing plugin: %v %s", err, out)
	}
}
