package main

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/etdi-dev/etdi/mcpb"
	"github.com/rogpeppe/go-internal/testscript"
)

// The fixtures of the mcpb_ scripts (MCPB files, etdi check --mcpb).
//
// Commands:
//
//	needmcpb                  installs the npm packages of testdata/mcpb
//	                          (@anthropic-ai/mcpb) and testdata/mcp once per run
//	mcpb ARGS...              runs mcpb of testdata/mcpb (pack, sign, ...)
//	mcpbserver DIR            writes DIR/server/index.mjs, which runs the
//	                          fixture server ($FIXTURE)
//	mcpbcert CN               writes a self-signed RSA code signing
//	                          certificate cert.pem and its key key.pem
//	mcpbbind MANIFEST FILE OUT  writes to OUT the etdi manifest MANIFEST
//	                          with server.artifacts naming the MCPB FILE
//	mcpbhostile FILE KIND     writes an MCPB archive (with the manifest of
//	                          ext/manifest.json) that also holds a hostile
//	                          entry: slip (../../escaped.txt), symlink
//	                          (server/index.mjs linking to /etc/passwd) or
//	                          bomb (64 MiB of zeros, deflated about 1000 to 1)
//	mcpbflip FILE             changes one byte of FILE's signed content
//	                          (a local header's name), as after signing
var mcpbNpm *npmFolder

func init() {
	dir, _ := filepath.Abs("../../testdata/mcpb")
	mcpbNpm = &npmFolder{dir: dir, marker: filepath.Join("node_modules", ".bin", "mcpb")}
	scriptCmds["needmcpb"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 0 {
			ts.Fatalf("usage: needmcpb")
		}
		ts.Check(mcpNpm.ensure())
		ts.Check(mcpbNpm.ensure())
	}
	scriptCmds["mcpb"] = func(ts *testscript.TestScript, neg bool, args []string) {
		cmd := exec.Command(filepath.Join(mcpbNpm.dir, "node_modules", ".bin", "mcpb"), args...)
		cmd.Dir = ts.Getenv("WORK")
		out, err := cmd.CombinedOutput()
		ts.Logf("%s", out)
		if err == nil && neg {
			ts.Fatalf("mcpb %v succeeded", args)
		}
		if err != nil && !neg {
			ts.Fatalf("mcpb %v: %v", args, err)
		}
	}
	scriptCmds["mcpbserver"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: mcpbserver DIR")
		}
		dir := filepath.Join(ts.MkAbs(args[0]), "server")
		ts.Check(os.MkdirAll(dir, 0o755))
		js := fmt.Sprintf("// Runs etdi's fixture server.\nawait import(%q);\n", "file://"+fixtureJS)
		ts.Check(os.WriteFile(filepath.Join(dir, "index.mjs"), []byte(js), 0o644))
	}
	scriptCmds["mcpbcert"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: mcpbcert CN")
		}
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		ts.Check(err)
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(1),
			Subject:               pkix.Name{CommonName: args[0]},
			NotBefore:             time.Now().Add(-time.Hour),
			NotAfter:              time.Now().Add(24 * time.Hour),
			ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
			BasicConstraintsValid: true,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs("cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
		ts.Check(os.WriteFile(ts.MkAbs("key.pem"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600))
	}
	scriptCmds["mcpbbind"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 3 {
			ts.Fatalf("usage: mcpbbind MANIFEST FILE OUT")
		}
		var m map[string]any
		ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &m))
		f, err := mcpb.Open(ts.MkAbs(args[1]))
		ts.Check(err)
		a := f.Artifact()
		m["server"].(map[string]any)["artifacts"] = []any{map[string]any{"type": a.Type, "name": a.Name, "version": a.Version, "digest": a.Digest}}
		b, err := json.MarshalIndent(m, "", "  ")
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs(args[2]), b, 0o644))
	}
	scriptCmds["mcpbhostile"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: mcpbhostile FILE slip|symlink|bomb")
		}
		var buf bytes.Buffer
		w := zip.NewWriter(&buf)
		add := func(name string, mode fs.FileMode, body []byte) {
			h := &zip.FileHeader{Name: name, Method: zip.Deflate}
			h.SetMode(mode)
			fw, err := w.CreateHeader(h)
			ts.Check(err)
			_, err = fw.Write(body)
			ts.Check(err)
		}
		add("manifest.json", 0o644, []byte(ts.ReadFile("ext/manifest.json")))
		switch args[1] {
		case "slip":
			add("../../escaped.txt", 0o644, []byte("escaped\n"))
		case "symlink":
			add("server/index.mjs", fs.ModeSymlink|0o777, []byte("/etc/passwd"))
		case "bomb":
			add("server/index.mjs", 0o644, make([]byte, 64<<20))
		default:
			ts.Fatalf("mcpbhostile: unknown kind %q", args[1])
		}
		ts.Check(w.Close())
		ts.Check(os.WriteFile(ts.MkAbs(args[0]), buf.Bytes(), 0o644))
	}
	scriptCmds["mcpbflip"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: mcpbflip FILE")
		}
		path := ts.MkAbs(args[0])
		b, err := os.ReadFile(path)
		ts.Check(err)
		// The zip's central directory names each entry; change the name
		// in the local header of manifest.json: the archive still reads
		// (by its central directory), the signed bytes differ.
		i := indexOf(b, "manifest.json")
		if i < 0 {
			ts.Fatalf("no manifest.json in %s", path)
		}
		b[i] = 'M'
		ts.Check(os.WriteFile(path, b, 0o644))
	}
}

func indexOf(b []byte, s string) int {
	for i := 0; i+len(s) <= len(b); i++ {
		if string(b[i:i+len(s)]) == s {
			return i
		}
	}
	return -1
}
