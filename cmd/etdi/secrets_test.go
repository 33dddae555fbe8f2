package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	echoOnce sync.Once
	echoBin  string
	echoErr  error
)

// echoServer builds testdata/echoserver: an MCP server that writes its
// arguments and environment to stderr first.
func echoServer(t *testing.T) string {
	t.Helper()
	bin, err := buildEchoServer()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// buildEchoServer builds testdata/echoserver once per test binary.
func buildEchoServer() (string, error) {
	echoOnce.Do(func() {
		// Kept between runs beside etdiBin: go build -o onto a program
		// that is up to date does not link it again.
		dir := filepath.Join(buildCache(testTmp), "echoserver")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			echoErr = err
			return
		}
		echoBin = filepath.Join(dir, "echoserver")
		if out, err := exec.Command("go", "build", "-o", echoBin, "./testdata/echoserver").CombinedOutput(); err != nil {
			echoErr = fmt.Errorf("building echoserver: %v\n%s", err, out)
		}
	})
	return echoBin, echoErr
}

// httpEcho serves one tool over Streamable HTTP on 127.0.0.1, named
// echo_<first path segment> (httpEchoHandler), until the test ends.
func httpEcho(t *testing.T) string {
	t.Helper()
	ts := httptest.NewServer(httpEchoHandler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// httpEchoHandler serves one tool over Streamable HTTP, named
// echo_<first path segment>. Requests to /fail are answered 401 with the
// request's URL and headers in the body, as a careless server might.
func httpEchoHandler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		server := mcp.NewServer(&mcp.Implementation{Name: "echo-http", Version: "1.0.0"}, nil)
		seg, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		mcp.AddTool(server, &mcp.Tool{Name: "echo_" + seg, Description: "Echo the text back."},
			func(ctx context.Context, req *mcp.CallToolRequest, args echoArgs) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: args.Text}}}, nil, nil
			})
		return server
	}, &mcp.StreamableHTTPOptions{JSONResponse: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/fail") {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, "denied %s %s %v", r.URL.String(), r.Header.Get("Authorization"), r.Header)
			return
		}
		h.ServeHTTP(w, r)
	})
}

type echoArgs struct {
	Text string `json:"text"`
}

// secretEnvT is a directory with a trust policy that warns on unsigned
// tools, and the runner of the built etdi in it.
type secretEnvT struct {
	t   *testing.T
	dir string
	env []string
	// outputs collects every stdout and stderr seen.
	outputs []string
}

func newSecretEnv(t *testing.T) *secretEnvT {
	s := &secretEnvT{t: t, dir: t.TempDir()}
	s.run(0, "trust", "unsigned", "--policy", "trust.json", "warn")
	return s
}

func (s *secretEnvT) run(want int, args ...string) result {
	s.t.Helper()
	r := runEtdi(s.t, s.dir, s.env, args...)
	s.outputs = append(s.outputs, fmt.Sprintf("[etdi %s]\n%s\n%s", args[0], r.stdout, r.stderr))
	if r.code != want {
		s.t.Fatalf("etdi %q: exit %d, want %d\n%s\n%s", args, r.code, want, r.stdout, r.stderr)
	}
	return r
}

func (s *secretEnvT) check(want int, args ...string) result {
	s.t.Helper()
	return s.run(want, append([]string{"check", "--trust", "trust.json", "--pins", "pins.db", "--start-timeout", "20s", "--timeout", "60s"}, args...)...)
}
