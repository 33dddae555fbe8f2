package mcpb

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"io/fs"
	"math/big"
	"testing"
	"time"

	"github.com/digitorus/pkcs7"
)

// manifestJSON is a manifest of a node server with two declared tools.
const manifestJSON = `{
  "manifest_version": "0.3",
  "name": "weather",
  "version": "1.2.0",
  "description": "Weather",
  "author": {"name": "ACME"},
  "server": {
    "type": "node",
    "entry_point": "server/index.mjs",
    "mcp_config": {"command": "node", "args": ["${__dirname}/server/index.mjs"], "env": {"UNITS": "${user_config.units}"}}
  },
  "tools": [
    {"name": "get_weather", "description": "Get the current weather for a city."},
    {"name": "get_forecast", "description": "Get a daily forecast for up to 7 days."}
  ],
  "user_config": {"units": {"type": "string", "title": "Units", "description": "Units", "default": "metric"}}
}`

type zentry struct {
	name   string
	body   []byte
	mode   fs.FileMode
	stored bool
}

// buildZip writes a zip of the entries, in order.
func buildZip(t testing.TB, entries ...zentry) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		if e.stored {
			h.Method = zip.Store
		}
		if e.mode != 0 {
			h.SetMode(e.mode)
		}
		fw, err := w.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// goodZip is a small MCPB archive.
func goodZip(t testing.TB) []byte {
	return buildZip(t,
		zentry{name: "manifest.json", body: []byte(manifestJSON)},
		zentry{name: "server/", mode: fs.ModeDir | 0o755},
		zentry{name: "server/index.mjs", body: []byte("console.log('hi')\n"), mode: 0o644},
		zentry{name: "bin/run", body: []byte("#!/bin/sh\n"), mode: 0o755},
	)
}

// testCert makes a self-signed RSA certificate for code signing, as
// mcpb sign --self-signed does.
func testCert(t testing.TB, cn string) (*x509.Certificate, *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(42),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

// sign appends an mcpb signature block over content, made as mcpb sign
// makes it (detached SignedData, SHA-256, authenticated attributes).
func sign(t testing.TB, content []byte, c *x509.Certificate, key *rsa.PrivateKey) []byte {
	t.Helper()
	sd, err := pkcs7.NewSignedData(content)
	if err != nil {
		t.Fatal(err)
	}
	sd.SetDigestAlgorithm(pkcs7.OIDDigestAlgorithmSHA256)
	if err := sd.AddSigner(c, key, pkcs7.SignerInfoConfig{}); err != nil {
		t.Fatal(err)
	}
	sd.Detach()
	der, err := sd.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return block(content, der)
}

func block(content, der []byte) []byte {
	out := append([]byte{}, content...)
	out = append(out, sigHeader...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(der)))
	out = append(out, der...)
	return append(out, sigFooter...)
}

func read(t testing.TB, data []byte) (*File, error) {
	t.Helper()
	return Read(bytes.NewReader(data), int64(len(data)))
}
