package verify_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/vectors"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
)

var update = flag.Bool("update", false, "regenerate testdata/vectors from the fixed keys")

const vectorDir = "../testdata/vectors"

var vectorsAt = vectors.At

// TestVectors runs every case under testdata/vectors through Verify and
// checks the verdict, the error finding kinds and the evidence.
func TestVectors(t *testing.T) {
	if *update {
		k, err := vectors.LoadKeys("../testdata/keys", true)
		if err != nil {
			t.Fatal(err)
		}
		cases, err := vectors.Build(k)
		if err != nil {
			t.Fatal(err)
		}
		if err := vectors.Write(vectorDir, cases); err != nil {
			t.Fatal(err)
		}
	}
	dirs, err := os.ReadDir(vectorDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 30 {
		t.Fatalf("only %d vectors under %s", len(dirs), vectorDir)
	}
	for _, d := range dirs {
		t.Run(d.Name(), func(t *testing.T) {
			runVector(t, filepath.Join(vectorDir, d.Name()))
		})
	}
}

func runVector(t *testing.T, dir string) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return b
	}
	var w vectors.Want
	if err := json.Unmarshal(read("want.json"), &w); err != nil {
		t.Fatal(err)
	}
	p, err := trust.Parse(read("trust.json"))
	if err != nil {
		t.Fatal(err)
	}
	opts := verify.Options{Now: w.At}
	if tb := read("tools.json"); tb != nil {
		if opts.Live, err = etdi.ParseList(tb, etdi.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r := verify.Verify(read("bundle.etdi.json"), p, opts)
	var kinds []string
	var first *finding.Finding
	for i, f := range r.Findings {
		if f.Severity == finding.Error {
			kinds = append(kinds, string(f.Kind))
			if first == nil {
				first = &r.Findings[i]
			}
		}
	}
	if kinds == nil {
		kinds = []string{}
	}
	if !slices.Equal(kinds, w.Kinds) {
		t.Fatalf("%s\nerror kinds = %v, want %v\nfindings: %+v", w.Description, kinds, w.Kinds, r.Findings)
	}
	if r.Verified != w.Verified {
		t.Errorf("verified = %v, want %v", r.Verified, w.Verified)
	}
	if r.OK() != (w.ExitCode == 0) {
		t.Errorf("OK() = %v, want exit code %d", r.OK(), w.ExitCode)
	}
	if w.Tool != "" && (first == nil || first.Tool != w.Tool) {
		t.Errorf("first error finding names tool %v, want %q", first, w.Tool)
	}
	if w.Fields != nil && (first == nil || !slices.Equal(first.Fields, w.Fields)) {
		t.Errorf("first error finding names fields %v, want %v", first.Fields, w.Fields)
	}
	if first != nil && first.Message == "" {
		t.Error("error finding without a message")
	}
	// Whenever the statement could be read, every error finding names a
	// tool: by its Tool field or in its message.
	for _, f := range r.Findings {
		if f.Severity == finding.Error && len(r.Tools) > 0 && f.Tool == "" &&
			!strings.Contains(f.Message, etdi.SubjectName(r.Tools[0].Name, r.Tools[0].Version)) {
			t.Errorf("%s finding names no tool: %s", f.Kind, f.Message)
		}
	}
	if first != nil && first.Kind == finding.DefinitionChanged && len(first.Changes) == 0 {
		t.Error("definition_changed without changes")
	}
}

// TestVectorsRegenerate rebuilds the vectors from the checked-in keys and
// requires the deterministic (Ed25519-only) ones to match byte for byte, so
// the files cannot drift from the generator.
func TestVectorsRegenerate(t *testing.T) {
	if testing.Short() {
		t.Skip("decrypting the test keys takes a second")
	}
	k, err := vectors.LoadKeys("../testdata/keys", false)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := vectors.Build(k)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cases {
		if !c.Deterministic {
			continue
		}
		n++
		for name, want := range c.Files {
			got, err := os.ReadFile(filepath.Join(vectorDir, c.Name, name))
			if err != nil {
				t.Fatalf("%s: %v (run go test ./verify -run TestVectors -update)", c.Name, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s/%s differs from the generator's output (run go test ./verify -run TestVectors -update)", c.Name, name)
			}
		}
	}
	if n < 25 {
		t.Fatalf("only %d deterministic cases", n)
	}
}
