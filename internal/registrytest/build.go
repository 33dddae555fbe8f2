package registrytest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// The packages of the registry's module that the fixture builds.
const (
	registryPkg  = "github.com/modelcontextprotocol/registry/cmd/registry"
	publisherPkg = "github.com/modelcontextprotocol/registry/cmd/publisher"
)

// programName is the name of the program of a package, as the registry's
// own release names it.
var programName = map[string]string{registryPkg: "registry", publisherPkg: "mcp-publisher"}

// moduleDir is testdata/registry of the repository: the module that pins
// the registry's version. It is found from this file's own path, as the
// tests that use the fixture run in their own package's directory.
func moduleDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot tell where the registrytest package's source is")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "registry")
	if _, err := os.Stat(filepath.Join(dir, "go.sum")); err != nil {
		return "", fmt.Errorf("the registry's module is missing: %w", err)
	}
	return dir, nil
}

// cacheKey names a build of the registry's module: its go.mod, its go.sum
// and the Go release the tests are built with (the go command that builds
// the registry is the one on PATH, normally the same).
func cacheKey(dir string) (string, error) {
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	fmt.Fprintf(h, "%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
}

// buildTimeout bounds one build of a program of the registry's module,
// modules downloaded included, on a loaded two-core machine.
const buildTimeout = 30 * time.Minute

// loaded is about when the test binary started.
var loaded = time.Now()

// buildDeadline is when a build must end: buildTimeout from now, and
// half a minute before the test binary's -timeout would end it with a
// panic and no word of why (a cold build takes minutes on a busy
// machine: see docs/benchmarks.md).
func buildDeadline() (time.Time, time.Duration) {
	d := time.Now().Add(buildTimeout)
	if f := flag.Lookup("test.timeout"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			if timeout, ok := g.Get().(time.Duration); ok && timeout > 0 {
				if end := loaded.Add(timeout - 30*time.Second); end.Before(d) {
					return end, timeout
				}
			}
		}
	}
	return d, 0
}

var builds sync.Map // package path -> *builtProgram

type builtProgram struct {
	once sync.Once
	path string
	err  error
}

// program returns the path of the program pkg of the registry's module,
// built once into the user's cache directory (a directory per cacheKey)
// and reused by later test runs, or why it could not be built.
func program(pkg string) (string, error) {
	v, _ := builds.LoadOrStore(pkg, &builtProgram{})
	b := v.(*builtProgram)
	b.once.Do(func() { b.path, b.err = build(pkg) })
	return b.path, b.err
}

func build(pkg string) (string, error) {
	dir, err := moduleDir()
	if err != nil {
		return "", err
	}
	key, err := cacheKey(dir)
	if err != nil {
		return "", err
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	out := filepath.Join(base, "etdi-registrytest", key)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(out, programName[pkg])
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return bin, nil
	}
	// Build beside the program and rename: test binaries of several
	// packages may build at once, and none may run a half-written file.
	tmp, err := os.CreateTemp(out, programName[pkg]+".build-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	deadline, testTimeout := buildDeadline()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", tmp.Name(), pkg)
	cmd.Dir = dir
	// The registry's module is built as its own module, whatever the
	// environment of etdi's tests says about etdi's.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if b, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() != nil && testTimeout > 0 {
			return "", fmt.Errorf("go build %s did not end within the tests' -timeout %s; build it first with a longer one: go test ./internal/registrytest -run '^TestBuild$' -timeout 40m", pkg, testTimeout)
		}
		if len(b) > 4000 {
			b = append(b[:4000], "..."...)
		}
		return "", fmt.Errorf("go build %s in %s: %v\n%s", pkg, dir, err, b)
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return "", err
	}
	return bin, nil
}

var source struct {
	once sync.Once
	dir  string
	err  error
}

// SourceDir returns the directory of the registry module's source at the
// version testdata/registry pins, in the module cache (read-only): its
// published API document, docs/reference/api/openapi.yaml, is the one
// other registries implement, and its server.json schema is
// internal/validators/schemas/2025-12-11.json (the one it validates
// published documents against).
func SourceDir() (string, error) {
	source.once.Do(func() {
		dir, err := moduleDir()
		if err != nil {
			source.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/modelcontextprotocol/registry")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
		out, err := cmd.Output()
		if err != nil {
			source.err = fmt.Errorf("go list -m github.com/modelcontextprotocol/registry in %s: %v", dir, err)
			return
		}
		source.dir = strings.TrimSpace(string(out))
		if source.dir == "" {
			source.err = fmt.Errorf("the registry's module is not downloaded (cd %s && go mod download)", dir)
		}
	})
	return source.dir, source.err
}
