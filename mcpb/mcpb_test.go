package mcpb

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadUnsigned(t *testing.T) {
	data := goodZip(t)
	f, err := read(t, data)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if f.Digest != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("digest %s", f.Digest)
	}
	if f.Signature != nil {
		t.Errorf("unsigned file has a signature: %+v", f.Signature)
	}
	m := f.Manifest
	if m.Name != "weather" || m.Version != "1.2.0" || m.Server.Type != TypeNode || len(m.Tools) != 2 {
		t.Errorf("manifest %+v", m)
	}
	if tl, ok := m.Tool("get_forecast"); !ok || tl.Description != "Get a daily forecast for up to 7 days." {
		t.Errorf("tool %+v", tl)
	}
}

func TestSignedVerifies(t *testing.T) {
	c, key := testCert(t, "ACME Weather")
	data := sign(t, goodZip(t), c, key)
	f, err := read(t, data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Signature == nil || f.Signature.Err != nil {
		t.Fatalf("signature %+v", f.Signature)
	}
	s := f.Signature.Signer
	fp := sha256.Sum256(c.Raw)
	if s.CommonName != "ACME Weather" || !s.SelfSigned || s.Fingerprint != hex.EncodeToString(fp[:]) {
		t.Errorf("signer %+v", s)
	}
	if got := s.String(); got != "CN=ACME Weather (self-signed)" {
		t.Errorf("String = %q", got)
	}
	whole := sha256.Sum256(data)
	if f.Digest != "sha256:"+hex.EncodeToString(whole[:]) {
		t.Error("the digest is not the whole signed file's")
	}
}

// TestTamperedAfterSigning: a byte changed anywhere in the signed part
// (here inside a stored entry, so the zip still reads) fails.
func TestTamperedAfterSigning(t *testing.T) {
	c, key := testCert(t, "ACME Weather")
	content := buildZip(t, zentry{name: "manifest.json", body: []byte(manifestJSON)}, zentry{name: "README", body: []byte("hello world"), stored: true})
	data := sign(t, content, c, key)
	i := bytes.Index(data, []byte("hello world"))
	if i < 0 {
		t.Fatal("stored entry not found")
	}
	bad := append([]byte{}, data...)
	bad[i] = 'j'
	f, err := read(t, bad)
	if err != nil {
		// the CRC no longer matches only when the entry is read; the
		// archive itself still opens
		t.Fatal(err)
	}
	if f.Signature == nil || !errors.Is(f.Signature.Err, ErrSignatureInvalid) || !strings.Contains(f.Signature.Err.Error(), "changed after it was signed") {
		t.Fatalf("tampered file: signature %+v", f.Signature)
	}
	if f.Signature.Signer == nil || f.Signature.Signer.CommonName != "ACME Weather" {
		t.Error("the claimed signer is not reported")
	}
	// A byte changed in the signature itself fails too.
	bad = append([]byte{}, data...)
	bad[len(bad)-len(sigFooter)-10] ^= 1
	if f, err := read(t, bad); err != nil || f.Signature == nil || f.Signature.Err == nil {
		t.Fatalf("changed signature: %v %+v", err, f.Signature)
	}
}

// TestSignatureBlockMalformed: a footer without a consistent block is an
// invalid signature, never "unsigned".
func TestSignatureBlockMalformed(t *testing.T) {
	z := goodZip(t)
	for name, data := range map[string][]byte{
		"footer only":    append(append([]byte{}, z...), sigFooter...),
		"wrong length":   append(append(append([]byte{}, z...), sigHeader+"\x05\x00\x00\x00ab"...), sigFooter...),
		"garbage DER":    block(z, []byte("not der at all")),
		"attached":       nil,
		"signer missing": nil,
	} {
		if data == nil {
			continue
		}
		f, err := read(t, data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f.Signature == nil || !errors.Is(f.Signature.Err, ErrSignatureInvalid) {
			t.Errorf("%s: signature %+v", name, f.Signature)
		}
	}
}

// TestSignatureOfOtherContent: a valid block cut from another file does
// not verify here.
func TestSignatureOfOtherContent(t *testing.T) {
	c, key := testCert(t, "ACME Weather")
	other := buildZip(t, zentry{name: "manifest.json", body: []byte(manifestJSON)}, zentry{name: "x", body: []byte("other")})
	signed := sign(t, other, c, key)
	data := append(goodZip(t), signed[len(other):]...)
	f, err := read(t, data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Signature == nil || f.Signature.Err == nil {
		t.Fatal("a signature of other content verifies")
	}
}

func TestHostileArchives(t *testing.T) {
	mf := zentry{name: "manifest.json", body: []byte(manifestJSON)}
	bomb := bytes.Repeat([]byte{0}, 8<<20)
	noise := make([]byte, MaxManifestSize/2+10)
	rand.Read(noise)
	big := []byte(`{"pad":"` + hex.EncodeToString(noise) + `",` + manifestJSON[1:])
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"zip-slip":          {buildZip(t, mf, zentry{name: "../../evil.sh", body: []byte("x")}), `".." element`},
		"zip-slip inner":    {buildZip(t, mf, zentry{name: "server/../../evil", body: []byte("x")}), `".." element`},
		"absolute":          {buildZip(t, mf, zentry{name: "/etc/passwd", body: []byte("x")}), "absolute"},
		"drive":             {buildZip(t, mf, zentry{name: "C:/x", body: []byte("x")}), "absolute"},
		"backslash":         {buildZip(t, mf, zentry{name: `..\evil`, body: []byte("x")}), "backslash"},
		"symlink":           {buildZip(t, mf, zentry{name: "server/link", body: []byte("/etc/passwd"), mode: fs.ModeSymlink | 0o777}), "symbolic link"},
		"device":            {buildZip(t, mf, zentry{name: "dev", body: nil, mode: fs.ModeDevice | 0o644}), "not a regular file"},
		"duplicate":         {buildZip(t, mf, zentry{name: "a", body: []byte("1")}, zentry{name: "a", body: []byte("2")}), "given twice"},
		"duplicate case":    {buildZip(t, mf, zentry{name: "A", body: []byte("1")}, zentry{name: "a", body: []byte("2")}), "given twice"},
		"duplicate mani":    {buildZip(t, mf, mf), "given twice"},
		"file as dir":       {buildZip(t, mf, zentry{name: "a", body: []byte("1")}, zentry{name: "a/b", body: []byte("2")}), "which is a file"},
		"zip bomb":          {buildZip(t, mf, zentry{name: "bomb", body: bomb}), "compressed more than"},
		"no manifest":       {buildZip(t, zentry{name: "x", body: []byte("1")}), "no manifest.json"},
		"nested manifest":   {buildZip(t, zentry{name: "sub/manifest.json", body: []byte(manifestJSON)}), "no manifest.json"},
		"manifest too big":  {buildZip(t, zentry{name: "manifest.json", body: big}), "larger than"},
		"control char":      {buildZip(t, mf, zentry{name: "a\nb", body: []byte("1")}), "control character"},
		"not a zip":         {[]byte("hello"), "not a zip"},
		"manifest dup keys": {buildZip(t, zentry{name: "manifest.json", body: []byte(`{"name":"a","name":"b"}`)}), "manifest.json"},
	} {
		_, err := read(t, tc.data)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
}

// TestHarmlessManifestChanges: key order and whitespace do not change
// what is read.
func TestHarmlessManifestChanges(t *testing.T) {
	a, err := ParseManifest([]byte(manifestJSON))
	if err != nil {
		t.Fatal(err)
	}
	reordered := `{"tools":[{"description":"Get the current weather for a city.","name":"get_weather"},
	{"description":"Get a daily forecast for up to 7 days.","name":"get_forecast"}],"user_config":{"units":{"default":"metric","type":"string","title":"Units","description":"Units"}},
	"server":{"mcp_config":{"env":{"UNITS":"${user_config.units}"},"args":["${__dirname}/server/index.mjs"],"command":"node"},"entry_point":"server/index.mjs","type":"node"},
	"version":"1.2.0","name":"weather","manifest_version":"0.3","author":{"name":"ACME"},"description":"Weather","x_unknown":{"kept":true}}`
	b, err := ParseManifest([]byte(reordered))
	if err != nil {
		t.Fatal(err)
	}
	la, err := a.Launch("/ext", nil)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.Launch("/ext", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != b.Name || a.Version != b.Version || len(a.Tools) != len(b.Tools) || strings.Join(a.ToolNames(), ",") != strings.Join(b.ToolNames(), ",") ||
		la.Command != lb.Command || strings.Join(la.Args, " ") != strings.Join(lb.Args, " ") || la.Env["UNITS"] != lb.Env["UNITS"] {
		t.Errorf("reordered manifest reads differently:\n%+v\n%+v", a, b)
	}
}

func TestParseManifestRefuses(t *testing.T) {
	for _, m := range []string{
		`{"manifest_version":"9.9","name":"a","version":"1","server":{"type":"node","mcp_config":{"command":"node"}}}`,
		`{"name":"a","version":"1","server":{"type":"node","mcp_config":{"command":"node"}}}`,
		`{"manifest_version":"0.3","name":"a","version":"1","server":{"type":"ruby","mcp_config":{"command":"x"}}}`,
		`{"manifest_version":"0.3","name":"a","version":"1","server":{"type":"node"}}`,
		`{"manifest_version":"0.3","name":"a","version":"1","server":{"type":"node","mcp_config":{"command":"node","args":"x"}}}`,
		`{"manifest_version":"0.3","name":"a","version":"1","server":{"type":"node","mcp_config":{"command":"node"}},"tools":[{"name":"t"},{"name":"t"}]}`,
		`{"manifest_version":"0.3","name":"a","version":"1","server":{"type":"node","mcp_config":{"command":"node"}},"tools_generated":"yes"}`,
		`{"manifest_version":"0.3","name":"a","version":"1","server":{"type":"node","mcp_config":{"command":"node","env":{"A=B":"x"}}}}`,
	} {
		if _, err := ParseManifest([]byte(m)); err == nil {
			t.Errorf("accepted %s", m)
		}
	}
}

func TestLaunch(t *testing.T) {
	m, err := ParseManifest([]byte(manifestJSON))
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Launch("/opt/ext", map[string]string{"units": "imperial"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Command != "node" || len(l.Args) != 1 || l.Args[0] != "/opt/ext/server/index.mjs" || l.Env["UNITS"] != "imperial" {
		t.Errorf("launch %+v", l)
	}
	l, err = m.Launch("/opt/ext", nil)
	if err != nil || l.Env["UNITS"] != "metric" {
		t.Errorf("default not used: %+v %v", l, err)
	}
	req := `{"manifest_version":"0.3","name":"a","version":"1","server":{"type":"binary","mcp_config":{"command":"server/run","args":["--key","${user_config.api_key}","${user_config.dirs}","${UNKNOWN}"]}},
	"user_config":{"api_key":{"type":"string","required":true},"dirs":{"type":"directory","multiple":true,"default":["/a","/b"]}}}`
	m, err = ParseManifest([]byte(req))
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Launch("/opt/ext", nil)
	var ce *ConfigError
	if !errors.As(err, &ce) || len(ce.Keys) != 1 || ce.Keys[0] != "api_key" {
		t.Fatalf("missing required option: %v", err)
	}
	l, err = m.Launch("/opt/ext", map[string]string{"api_key": "k"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Command != "/opt/ext/server/run" || strings.Join(l.Args, " ") != "--key k /a /b ${UNKNOWN}" {
		t.Errorf("launch %+v", l)
	}
	// A value is substituted once: a value naming a variable stays as given.
	l, err = m.Launch("/opt/ext", map[string]string{"api_key": "${__dirname}"})
	if err != nil || l.Args[1] != "${__dirname}" {
		t.Errorf("value substituted twice: %+v %v", l, err)
	}
	// An unknown user_config variable is an error naming it.
	m, _ = ParseManifest([]byte(`{"manifest_version":"0.3","name":"a","version":"1","server":{"type":"node","mcp_config":{"command":"node","args":["--x=${user_config.nope}"]}}}`))
	if _, err := m.Launch("/opt/ext", nil); !errors.As(err, &ce) || ce.Keys[0] != "nope" {
		t.Errorf("unknown option: %v", err)
	}
	// A required option without a value stops the launch even when the
	// command line does not name it: the host does not start the server.
	m, _ = ParseManifest([]byte(`{"manifest_version":"0.3","name":"a","version":"1","server":{"type":"node","mcp_config":{"command":"node"}},"user_config":{"token":{"type":"string","required":true}}}`))
	if _, err := m.Launch("/opt/ext", nil); !errors.As(err, &ce) || ce.Keys[0] != "token" {
		t.Errorf("required option: %v", err)
	}
	if _, err := m.Launch("/opt/ext", map[string]string{"token": "t"}); err != nil {
		t.Errorf("required option given: %v", err)
	}
	// A command that leaves the directory is refused.
	for _, cmd := range []string{"../../bin/sh", "${__dirname}/../../bin/sh"} {
		m, _ = ParseManifest([]byte(`{"manifest_version":"0.3","name":"a","version":"1","server":{"type":"binary","mcp_config":{"command":"` + cmd + `"}}}`))
		if _, err := m.Launch("/opt/ext", nil); err == nil {
			t.Errorf("command %s accepted", cmd)
		}
	}
}

func TestExtract(t *testing.T) {
	f, err := read(t, goodZip(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ext")
	if err := f.Extract(dir); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v %v", st.Mode(), err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "server", "index.mjs"))
	if err != nil || string(b) != "console.log('hi')\n" {
		t.Fatalf("extracted %q %v", b, err)
	}
	st, _ = os.Stat(filepath.Join(dir, "bin", "run"))
	if st.Mode().Perm() != 0o700 {
		t.Errorf("executable mode %v", st.Mode())
	}
	st, _ = os.Stat(filepath.Join(dir, "manifest.json"))
	if st.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v", st.Mode())
	}
	// An existing directory is refused: nothing is extracted into a place
	// someone else prepared.
	if err := f.Extract(dir); err == nil {
		t.Error("extracted into an existing directory")
	}
}

// TestSignerIssuedByCA: a certificate issued by another is not
// self-signed, and the signer names its issuer.
func TestSignerIssuedByCA(t *testing.T) {
	ca, caKey := testCert(t, "ACME Root")
	leafKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7),
		Subject:      pkix.Name{CommonName: "ACME Weather"},
		NotBefore:    ca.NotBefore,
		NotAfter:     ca.NotAfter,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	f, err := read(t, sign(t, goodZip(t), leaf, leafKey))
	if err != nil {
		t.Fatal(err)
	}
	if f.Signature == nil || f.Signature.Err != nil {
		t.Fatalf("signature %+v", f.Signature)
	}
	if s := f.Signature.Signer; s.SelfSigned || s.String() != "CN=ACME Weather, issued by CN=ACME Root" {
		t.Errorf("signer %+v %q", s, s.String())
	}
	// A certificate naming itself as issuer whose key did not sign it is
	// not self-signed either.
	tmpl.Issuer = tmpl.Subject
	tmpl.Subject = pkix.Name{CommonName: "ACME Root"}
	der, err = x509.CreateCertificate(rand.Reader, tmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	forged, _ := x509.ParseCertificate(der)
	if describe(forged, 0).SelfSigned {
		t.Error("a certificate its own key did not sign is self-signed")
	}
}

// A platform's override of the command is held inside the extension's
// directory as the command itself is.
func TestLaunchOverrideStaysInside(t *testing.T) {
	doc := `{"manifest_version":"0.3","name":"a","version":"1","server":{"type":"binary","mcp_config":{"command":"server/run",
	"platform_overrides":{"` + Platform() + `":{"command":"${__dirname}/../../../bin/sh"}}}}}`
	m, err := ParseManifest([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if l, err := m.Launch("/opt/ext", nil); err == nil || !strings.Contains(err.Error(), "leaves the extension's directory") {
		t.Fatalf("override outside the directory: %+v %v", l, err)
	}
}
