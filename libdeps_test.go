package etdi_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// cloudModules are the module path prefixes of the cloud KMS providers and
// their SDKs. Only the etdi command links them, in builds with the kms tag.
var cloudModules = []string{
	"cloud.google.com/",
	"github.com/Azure/",
	"github.com/AzureAD/",
	"github.com/aws/",
	"github.com/hashicorp/vault/",
	"github.com/googleapis/gax-go/",
	"google.golang.org/api",
	"github.com/sigstore/sigstore/pkg/signature/kms/",
}

// TestLibraryLinksNoCloudKMS fails when a library package (every package
// of the module but the etdi command) depends on a cloud KMS module, under
// any build tag. go mod tidy reads every build tag, so a single tagged
// import in a library package puts the cloud SDKs into the go.mod of every
// module that imports that package. The imports are read from the source
// of every file whatever its build constraint, then followed through their
// dependencies with go list for each operating system etdi ships for.
func TestLibraryLinksNoCloudKMS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	external := libraryImports(t)
	if len(external) == 0 {
		t.Fatal("found no imports outside the standard library: the walk is broken")
	}
	pkgs := make([]string, 0, len(external))
	for p, files := range external {
		pkgs = append(pkgs, p)
		if isCloud(p) {
			t.Errorf("%s imports the cloud KMS package %s", strings.Join(files, ", "), p)
		}
	}
	sort.Strings(pkgs)
	for _, goos := range []string{"linux", "darwin", "windows"} {
		args := append([]string{"list", "-e", "-deps", "-tags", "kms", "-f", "{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}"}, pkgs...)
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOFLAGS=-mod=readonly")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("GOOS=%s go list: %v", goos, err)
		}
		n := 0
		for line := range strings.Lines(string(out)) {
			pkg, mod, _ := strings.Cut(strings.TrimSpace(line), " ")
			n++
			if isCloud(pkg) || isCloud(mod) {
				t.Errorf("GOOS=%s: a library package depends on %s (module %s)", goos, pkg, mod)
			}
		}
		if n < len(pkgs) {
			t.Fatalf("GOOS=%s: go list listed %d packages for %d imports", goos, n, len(pkgs))
		}
	}
}

func isCloud(path string) bool {
	for _, p := range cloudModules {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// TestModelDoesNoIO fails when the data model (the root package) or the
// formats beside it (strictjson, release) depend on a package that runs
// programs, resolves launches, opens a pin database or talks HTTP: the model is imported
// by every other package of etdi and by Go hosts. internal/artifact, which
// runs "docker image inspect" and reads lock files, imports the model for
// Artifact; never the other way round.
func TestModelDoesNoIO(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	forbidden := []string{
		"github.com/etdi-dev/etdi/internal/artifact",
		"os/exec",
		"net/http",
		"go.etcd.io/bbolt",
	}
	for _, pkg := range []string{".", "./strictjson", "./release"} {
		for _, goos := range []string{"linux", "darwin", "windows"} {
			cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg)
			cmd.Env = append(os.Environ(), "GOOS="+goos, "GOFLAGS=-mod=readonly")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("GOOS=%s go list %s: %v", goos, pkg, err)
			}
			deps := strings.Fields(string(out))
			if len(deps) < 3 {
				t.Fatalf("GOOS=%s go list %s: %q", goos, pkg, out)
			}
			for _, d := range deps {
				for _, f := range forbidden {
					if d == f {
						t.Errorf("GOOS=%s: %s depends on %s", goos, pkg, d)
					}
				}
			}
		}
	}
}

// libraryImports returns the imports from outside the standard library
// and this module of every library package (all but the etdi command),
// read from the source of every file whatever its build constraint: import
// path -> the files importing it.
func libraryImports(t *testing.T) map[string][]string {
	external := map[string][]string{} // import path -> files importing it
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if filepath.ToSlash(path) == "cmd/etdi" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != "." {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(p, "/")
			if !strings.Contains(first, ".") || p == "github.com/etdi-dev/etdi" || strings.HasPrefix(p, "github.com/etdi-dev/etdi/") {
				continue // standard library or this module, whose files are read here too
			}
			external[p] = append(external[p], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return external
}
