package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
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
