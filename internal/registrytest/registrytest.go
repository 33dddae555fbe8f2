// Package registrytest runs the official MCP Registry server for tests:
// the registry of github.com/modelcontextprotocol/registry at the version
// testdata/registry pins, on a PostgreSQL server of its own, both real
// programs started on this machine.
//
// The registry is built from testdata/registry (its own module, outside
// etdi's) once, into the user's cache directory, and reused until that
// module changes. PostgreSQL's server programs come from the system
// (Debian: apt-get install postgresql; they are looked for on PATH and in
// /usr/lib/postgresql/*/bin); when the tests run as root, PostgreSQL runs
// as the user postgres (or nobody), as it refuses to run as root. Its
// cluster lives in a temporary directory and serves only a Unix socket
// there; the registry listens on 127.0.0.1 on a free port, with anonymous
// publishing on (/v0.1/auth/none), registry validation off (no package
// registry is asked whether a package exists: the tests have no
// internet) and a random key for its tokens.
//
// Start gives a test its own registry, stopped when the test ends;
// Shared gives the tests of one test binary one registry between them,
// for tests that publish distinct server names. Publish, PublishMany and
// SetStatus go through the registry's own API with a token the fixture
// mints with the registry's key, allowed to publish and edit any name.
// Provider is provider acme publishing to it: it signs bundles for
// registry names, hosts them on 127.0.0.1 (Files) and writes the
// server.json documents that name them.
//
// Testing against a real registry: tests of etdi's registry features
// publish server.json documents to a registry of this package and point
// etdi at its URL, as a host or an organisation would point it at theirs.
// Two rules of the registry shape those documents: a remote's URL must
// be https and not localhost or 127.0.0.1, and one remote URL belongs to
// one server name. When PostgreSQL is not installed or the registry
// cannot be built, a test that needs the fixture is skipped with the
// reason and how to install what is missing, except under CI=true, where
// it fails.
//
// Neither program outlives the test binary that started it: both are
// started with a parent-death signal (Linux only; elsewhere the fixture
// skips).
package registrytest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Registry is a running MCP Registry.
type Registry struct {
	// URL is the registry's base URL, http://127.0.0.1:PORT (no trailing
	// slash); its API is under URL + "/v0.1".
	URL string
	// LogDir holds the registry's and PostgreSQL's output.
	LogDir string

	key  ed25519.PrivateKey
	http *http.Client
	// How long PostgreSQL (initdb included) and then the registry took
	// to start.
	pgStart, regStart time.Duration

	pg     *postgres
	ownDir bool // LogDir is the registry's own, removed by Stop
	shared bool // the test binary's: Stop leaves it running
	cmd    *exec.Cmd
	done   chan struct{}
	err    error

	tokenMu  sync.Mutex
	token    string
	tokenExp time.Time
}

// startTimeout bounds starting PostgreSQL and the registry (not building
// the registry: see buildTimeout).
const startTimeout = 3 * time.Minute

// Start starts a registry of the test's own, stopped when the test ends.
// It skips the test when the fixture cannot run here (no PostgreSQL, a
// registry that cannot be built), or fails it under CI=true.
func Start(t testing.TB) *Registry {
	t.Helper()
	bin := need(t)
	logDir := t.TempDir()
	r, err := start(bin, logDir)
	if err != nil {
		t.Fatalf("registrytest: %v", err)
	}
	t.Cleanup(func() {
		r.Stop()
		if t.Failed() {
			r.dumpLogs(t)
		}
	})
	return r
}

var shared struct {
	once sync.Once
	r    *Registry
	err  error
}

// Shared returns the registry of the test binary, started on first use
// and stopped when the binary exits. Its tests share its content: they
// must publish distinct server names, and must not count what the whole
// registry lists. It skips or fails the test as Start does.
func Shared(t testing.TB) *Registry {
	t.Helper()
	r, err := SharedRegistry()
	var u *UnavailableError
	if errors.As(err, &u) {
		skip(t, u.Reason)
	}
	if err != nil {
		t.Fatalf("registrytest: the shared registry: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("registrytest: the output of the shared registry and its PostgreSQL is in %s (until the next test run starts a registry)", r.LogDir)
		}
	})
	return r
}

// SharedRegistry is Shared for code without a test at hand (a script's
// condition): it returns an *UnavailableError when the fixture cannot
// run here. Under CI=true the caller should fail rather than skip.
func SharedRegistry() (*Registry, error) {
	shared.once.Do(func() {
		bin, why := find()
		if why != "" {
			shared.err = &UnavailableError{Reason: why}
			return
		}
		dir, err := os.MkdirTemp("", fmt.Sprintf("etdi-registrytest-%d-", os.Getpid()))
		if err != nil {
			shared.err = err
			return
		}
		shared.r, shared.err = start(bin, dir)
		if shared.r != nil {
			shared.r.shared = true
		}
	})
	return shared.r, shared.err
}

// UnavailableError says why the fixture cannot run here (PostgreSQL not
// installed, a registry that does not build) and how to install what is
// missing.
type UnavailableError struct{ Reason string }

func (e *UnavailableError) Error() string {
	return "the MCP Registry fixture cannot run here: " + e.Reason
}

// InCI says whether the tests run in CI (CI=true), where a fixture that
// cannot run fails the tests instead of skipping them.
func InCI() bool { return os.Getenv("CI") == "true" }

// StartOwn starts a registry as Start does, for code without a test at
// hand (a script's command): the caller stops it with Stop, which also
// removes its output. It returns an *UnavailableError when the fixture
// cannot run here.
func StartOwn() (*Registry, error) {
	bin, why := find()
	if why != "" {
		return nil, &UnavailableError{Reason: why}
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("etdi-registrytest-%d-", os.Getpid()))
	if err != nil {
		return nil, err
	}
	r, err := start(bin, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r.ownDir = true
	return r, nil
}

// sweep removes the directories of registries whose test binary has
// exited: nothing stops a shared registry but the exit of its test
// binary, after which no cleanup runs.
func sweep() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "etdi-registrytest-*"))
	for _, d := range dirs {
		f := strings.SplitN(filepath.Base(d), "-", 4)
		if len(f) != 4 {
			continue
		}
		if pid, err := strconv.Atoi(f[2]); err == nil && pid != os.Getpid() && !alive(pid) {
			os.RemoveAll(d)
		}
	}
}

// need returns the registry program, or skips (fails under CI=true) the
// test saying what is missing.
func need(t testing.TB) string {
	t.Helper()
	bin, why := find()
	if why != "" {
		skip(t, why)
	}
	return bin
}

func skip(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatalf("registrytest: the MCP Registry fixture is needed in CI: %s", why)
	}
	t.Skipf("registrytest: the MCP Registry fixture cannot run here: %s", why)
}

// find returns the registry program, or why the fixture cannot run.
func find() (bin, why string) {
	if ok, why := supported(); !ok {
		return "", why
	}
	if _, err := pgBinDir(); err != nil {
		return "", err.Error()
	}
	if _, err := postgresUser(); err != nil {
		return "", err.Error()
	}
	bin, err := program(registryPkg)
	if err != nil {
		return "", fmt.Sprintf("the registry cannot be built (cd testdata/registry && go build %s): %v", registryPkg, err)
	}
	return bin, ""
}

// Binary returns the path of the registry program, building it if need
// be, or skips the test as Start does.
func Binary(t testing.TB) string {
	t.Helper()
	return need(t)
}

// Publisher returns the path of the registry's mcp-publisher, built from
// the same module, or skips (fails under CI=true) the test when it cannot
// be built.
func Publisher(t testing.TB) string {
	t.Helper()
	bin, err := PublisherProgram()
	var u *UnavailableError
	if errors.As(err, &u) {
		skip(t, u.Reason)
	}
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// PublisherProgram is Publisher for code without a test at hand: it
// returns an *UnavailableError when mcp-publisher cannot be built.
func PublisherProgram() (string, error) {
	if ok, why := supported(); !ok {
		return "", &UnavailableError{Reason: why}
	}
	bin, err := program(publisherPkg)
	if err != nil {
		return "", &UnavailableError{Reason: fmt.Sprintf("mcp-publisher cannot be built (cd testdata/registry && go build %s): %v", publisherPkg, err)}
	}
	return bin, nil
}

// start starts PostgreSQL in a directory of its own under the system's
// temporary directory (reachable by PostgreSQL's user, which the test's
// temporary directories are not) and the registry on it, with their
// output in logDir.
func start(bin, logDir string) (*Registry, error) {
	sweep()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	pgDir, err := os.MkdirTemp("", fmt.Sprintf("etdi-registrytest-%d-pg-", os.Getpid()))
	if err != nil {
		return nil, err
	}
	pgLog, err := os.Create(filepath.Join(logDir, "postgres.log"))
	if err != nil {
		os.RemoveAll(pgDir)
		return nil, err
	}
	defer pgLog.Close()
	t0 := time.Now()
	pg, err := startPostgres(ctx, pgDir, pgLog)
	if err != nil {
		os.RemoveAll(pgDir)
		return nil, err
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		pg.stop()
		os.RemoveAll(pgDir)
		return nil, err
	}
	r := &Registry{
		LogDir:  logDir,
		key:     key,
		pg:      pg,
		http:    &http.Client{Timeout: time.Minute},
		pgStart: time.Since(t0),
	}
	// A port freed for the registry to bind can be taken in between: try
	// others when the registry exits without serving.
	t1 := time.Now()
	for try := 1; ; try++ {
		err = r.startRegistry(ctx, bin, try)
		if err == nil {
			r.regStart = time.Since(t1)
			return r, nil
		}
		if !errors.Is(err, errBind) || try == 5 {
			pg.stop()
			os.RemoveAll(pgDir)
			return nil, err
		}
	}
}

var errBind = errors.New("the registry could not listen on its port")

func (r *Registry) startRegistry(ctx context.Context, bin string, try int) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	logPath := filepath.Join(r.LogDir, fmt.Sprintf("registry-%d.log", try))
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(bin)
	cmd.Dir = r.LogDir
	cmd.Env = []string{
		"PATH=/usr/bin:/bin",
		"HOME=" + r.LogDir,
		"MCP_REGISTRY_SERVER_ADDRESS=" + addr,
		"MCP_REGISTRY_DATABASE_URL=" + r.pg.url(),
		"MCP_REGISTRY_DATABASE_MAX_CONNECTIONS=20",
		"MCP_REGISTRY_DATABASE_MIN_CONNECTIONS=2",
		"MCP_REGISTRY_JWT_PRIVATE_KEY=" + hex.EncodeToString(r.key.Seed()),
		"MCP_REGISTRY_ENABLE_ANONYMOUS_AUTH=true",
		"MCP_REGISTRY_ENABLE_REGISTRY_VALIDATION=false",
		"MCP_REGISTRY_VERSION=registrytest",
		// No OpenTelemetry exporter is reachable from a test.
		"OTEL_SDK_DISABLED=true",
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := spawn(cmd, syscall.SIGKILL, nil); err != nil {
		return fmt.Errorf("starting the registry: %w", err)
	}
	r.cmd, r.done, r.err = cmd, make(chan struct{}), nil
	done := r.done
	go func() { r.err = cmd.Wait(); close(done) }()
	r.URL = "http://" + addr
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if r.healthy(ctx) {
			return nil
		}
		select {
		case <-done:
			out, _ := os.ReadFile(logPath)
			if bytes.Contains(out, []byte("address already in use")) {
				return errBind
			}
			return fmt.Errorf("the registry exited before serving: %v; its output (%s):\n%s", r.err, logPath, tail(out, 3000))
		case <-ctx.Done():
			r.stopRegistry()
			out, _ := os.ReadFile(logPath)
			return fmt.Errorf("the registry did not serve /v0.1/health: %w; its output (%s):\n%s", ctx.Err(), logPath, tail(out, 3000))
		case <-tick.C:
		}
	}
}

func (r *Registry) healthy(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL+"/v0.1/health", nil)
	if err != nil {
		return false
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode == http.StatusOK
}

// Stop stops the registry and its PostgreSQL and removes PostgreSQL's
// directory. Start's cleanup calls it; calling it again does nothing, and
// so does calling it on the shared registry, which other tests use.
func (r *Registry) Stop() {
	if r.shared {
		return
	}
	r.stopRegistry()
	if r.pg != nil {
		r.pg.stop()
		os.RemoveAll(r.pg.dir)
		r.pg = nil
	}
	if r.ownDir {
		os.RemoveAll(r.LogDir)
		r.ownDir = false
	}
}

func (r *Registry) stopRegistry() {
	if r.cmd == nil {
		return
	}
	signalGroup(r.cmd, syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(15 * time.Second):
		signalGroup(r.cmd, syscall.SIGKILL)
		<-r.done
	}
	r.cmd = nil
}

func (r *Registry) dumpLogs(t testing.TB) {
	logs, _ := filepath.Glob(filepath.Join(r.LogDir, "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		t.Logf("registrytest: %s:\n%s", filepath.Base(l), tail(b, 4000))
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return append([]byte("..."), b[len(b)-n:]...)
	}
	return b
}

// Permission is one permission of a registry token: Action "publish" or
// "edit" on Resource, a server name, a prefix ending in "*" or "*" for
// every name.
type Permission struct {
	Action   string `json:"action"`
	Resource string `json:"resource"`
}

// Token mints a registry token (the registry's own JWT, signed with its
// key) for perms, valid for an hour, as the registry's login endpoints
// would after proving the caller owns the namespaces.
func (r *Registry) Token(perms ...Permission) string {
	now := time.Now()
	claims := map[string]any{
		"iss":             "mcp-registry",
		"iat":             now.Unix(),
		"nbf":             now.Add(-time.Minute).Unix(),
		"exp":             now.Add(time.Hour).Unix(),
		"auth_method":     "none",
		"auth_method_sub": "registrytest",
		"permissions":     perms,
	}
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"EdDSA","typ":"JWT"}`))
	body, err := json.Marshal(claims)
	if err != nil {
		panic(err)
	}
	signed := head + "." + enc.EncodeToString(body)
	return signed + "." + enc.EncodeToString(ed25519.Sign(r.key, []byte(signed)))
}

// adminToken is a token to publish and edit every name, minted anew when
// the last is close to expiring.
func (r *Registry) adminToken() string {
	r.tokenMu.Lock()
	defer r.tokenMu.Unlock()
	if r.token == "" || time.Until(r.tokenExp) < 10*time.Minute {
		r.token = r.Token(Permission{"publish", "*"}, Permission{"edit", "*"})
		r.tokenExp = time.Now().Add(time.Hour)
	}
	return r.token
}

// maxAnswer bounds what the fixture reads of one answer of the registry.
const maxAnswer = 16 << 20

// call sends a request to the registry's API and returns the answer's
// body, or an error for any status but 200.
func (r *Registry) call(ctx context.Context, method, path, token string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.URL+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxAnswer {
		return nil, fmt.Errorf("%s %s: answer over %d bytes", method, path, maxAnswer)
	}
	if resp.StatusCode != http.StatusOK {
		return b, &StatusError{Method: method, Path: path, Status: resp.StatusCode, Body: string(tail(b, 2000))}
	}
	return b, nil
}

// StatusError is an answer of the registry other than 200 OK.
type StatusError struct {
	Method, Path string
	Status       int
	Body         string // the answer's body (its last 2000 bytes)
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("registry: %s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), e.Body)
}

// Publish publishes the server.json document serverJSON through the
// registry's publish API (POST /v0.1/publish) with a token allowed to
// publish any name.
func (r *Registry) Publish(ctx context.Context, serverJSON []byte) error {
	_, err := r.call(ctx, http.MethodPost, "/v0.1/publish", r.adminToken(), serverJSON)
	return err
}

// PublishAnonymous publishes serverJSON as an anonymous publisher does:
// with the token of /v0.1/auth/none, which allows only the names under
// io.modelcontextprotocol.anonymous/.
func (r *Registry) PublishAnonymous(ctx context.Context, serverJSON []byte) error {
	b, err := r.call(ctx, http.MethodPost, "/v0.1/auth/none", "", nil)
	if err != nil {
		return err
	}
	var tok struct {
		RegistryToken string `json:"registry_token"`
	}
	if err := json.Unmarshal(b, &tok); err != nil || tok.RegistryToken == "" {
		return fmt.Errorf("registry: /v0.1/auth/none answered no token: %q", tail(b, 200))
	}
	_, err = r.call(ctx, http.MethodPost, "/v0.1/publish", tok.RegistryToken, serverJSON)
	return err
}

// PublishMany publishes docs with workers requests at a time (1 when
// workers < 1) and returns the first error. Versions of one server name
// are published in the order of docs only with one worker.
func (r *Registry) PublishMany(ctx context.Context, docs [][]byte, workers int) error {
	workers = max(1, min(workers, len(docs)))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan []byte)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for doc := range next {
				if err := r.Publish(ctx, doc); err != nil {
					cancel(err)
				}
			}
		}()
	}
feed:
	for _, d := range docs {
		select {
		case next <- d:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && err != context.Canceled {
		return err
	}
	return ctx.Err()
}

// Edit replaces a published version of a server with serverJSON (of the
// same name and version) through the registry's edit API (PUT
// /v0.1/servers/NAME/versions/VERSION), as a registry's operator can: the
// entry keeps its name and version and changes content under them.
func (r *Registry) Edit(ctx context.Context, serverJSON []byte) error {
	var id struct{ Name, Version string }
	if err := json.Unmarshal(serverJSON, &id); err != nil {
		return fmt.Errorf("registrytest: edit: %w", err)
	}
	if id.Name == "" || id.Version == "" {
		return errors.New("registrytest: edit: the document has no name or version")
	}
	_, err := r.call(ctx, http.MethodPut, VersionPath(id.Name, id.Version), r.adminToken(), serverJSON)
	return err
}

// SetStatus sets the status of one version of a server (active,
// deprecated or deleted) through the registry's API (PATCH
// /v0.1/servers/NAME/versions/VERSION/status).
func (r *Registry) SetStatus(ctx context.Context, name, version, status string) error {
	body, err := json.Marshal(map[string]string{"status": status})
	if err != nil {
		return err
	}
	_, err = r.call(ctx, http.MethodPatch, VersionPath(name, version)+"/status", r.adminToken(), body)
	return err
}

// VersionPath is the API path of one version of a server,
// /v0.1/servers/NAME/versions/VERSION, with the name and version escaped
// as the registry wants them ("/" as %2F).
func VersionPath(name, version string) string {
	return "/v0.1/servers/" + url.PathEscape(name) + "/versions/" + url.PathEscape(version)
}

// Get returns the registry's answer to GET
// /v0.1/servers/NAME/versions/VERSION: the entry of one version of a
// server ("latest" for its latest), or a *StatusError (404 when there is
// none).
func (r *Registry) Get(ctx context.Context, name, version string) ([]byte, error) {
	return r.call(ctx, http.MethodGet, VersionPath(name, version), "", nil)
}

// OpenAPI returns the OpenAPI document the registry serves for its own
// API (/openapi.json), the reference for any server that answers as a
// registry.
func (r *Registry) OpenAPI(ctx context.Context) ([]byte, error) {
	return r.call(ctx, http.MethodGet, "/openapi.json", "", nil)
}
