package redact

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

const (
	pat = "ghp_R3alLook1ngT0kenValue0123456789abcd"
	pw  = "hunter2-correct-horse"
)

func TestSetString(t *testing.T) {
	var s Set
	s.Add(pat, "Bearer sk-live-0123456789abcdefXYZ", "on", "")
	s.AddURL("https://alice:" + pw + "@h.example/mcp?token=q%2Fvalue-42&flag#frag-secret")
	s.AddArgs([]string{"docker", "run", "-e", "API_KEY=k3y-value-777", "--password", "plainpass", "img"})
	text := fmt.Sprintf("stderr: token %s; auth %q; q/value-42 q%%2Fvalue-42 %s alice %s frag-secret k3y-value-777 plainpass; sk-live-0123456789abcdefXYZ; on",
		pat, pat+"\n", pw, base64.StdEncoding.EncodeToString([]byte("alice:"+pw)))
	got := s.String(text)
	for _, secret := range []string{pat, pw, "q/value-42", "q%2Fvalue-42", "alice", "frag-secret", "k3y-value-777", "plainpass", "sk-live-0123456789abcdefXYZ", base64.StdEncoding.EncodeToString([]byte("alice:" + pw))} {
		if strings.Contains(got, secret) {
			t.Errorf("%q left in %q", secret, got)
		}
	}
	// Short values are left: masking "on" everywhere would garble text.
	var short Set
	short.AddURL("http://bob:" + pw + "@h/x")
	if got := short.String(`Post "http://bob:***@h/x": refused`); strings.Contains(got, "bob") {
		t.Errorf("short user name left: %q", got)
	}
	if !strings.HasSuffix(got, "; on") || !strings.Contains(got, "stderr: token "+Mask) {
		t.Errorf("got %q", got)
	}
}

// The last bytes of a stream may begin inside a secret.
func TestSetTail(t *testing.T) {
	var s Set
	s.Add(pat)
	for _, cut := range []int{1, 10, len(pat) - MinLen} {
		got := s.Tail(pat[cut:] + " then " + pat)
		if got != Mask+" then "+Mask {
			t.Errorf("cut %d: %q", cut, got)
		}
	}
	if got := s.Tail("ordinary text"); got != "ordinary text" {
		t.Errorf("%q", got)
	}
}

func TestSetError(t *testing.T) {
	var s Set
	s.Add(pat)
	base := fmt.Errorf("server said %s: %w", pat, fs.ErrPermission)
	err := s.Error(base)
	if strings.Contains(err.Error(), pat) || !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), Mask) {
		t.Fatalf("%v", err)
	}
	plain := errors.New("nothing secret here")
	if s.Error(plain) != plain || s.Error(nil) != nil {
		t.Fatal("an error without secrets is changed")
	}
	var empty *Set
	if empty.String("x "+pat) != "x "+pat {
		t.Fatal("nil set changes text")
	}
}

func TestURL(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"https://alice:" + pw + "@h.example:8443/mcp?token=" + pat + "&v=1#x", "https://h.example:8443/mcp?token=[redacted]&v=[redacted]"},
		{"https://actions.example.com/mcp/" + pat + "/sse", "https://actions.example.com/mcp/[redacted]/sse"},
		{"http://127.0.0.1:3001/mcp", "http://127.0.0.1:3001/mcp"},
		{"http://h/x?" + pat, "http://h/x?[redacted]=[redacted]"},
		{"%zz://bad", Mask},
	} {
		if got := URL(tc.raw); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}

func TestArgs(t *testing.T) {
	in := []string{"docker", "run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN=" + pat, "--api-key", "short", "--port=3000", pat, "https://u:" + pw + "@h/x", "img"}
	want := "docker run -i --rm -e GITHUB_PERSONAL_ACCESS_TOKEN=[redacted] --api-key [redacted] --port=[redacted] [redacted] https://h/x img"
	if got := strings.Join(Args(in), " "); got != want {
		t.Errorf("Args = %q\nwant   %q", got, want)
	}
	in = []string{"mcp-remote", "https://u:" + pw + "@h/x?token=" + pat, "--url=https://u:" + pw + "@h/y?k=v"}
	want = "mcp-remote https://h/x?token=[redacted] --url=https://h/y?k=[redacted]"
	if got := strings.Join(Args(in), " "); got != want {
		t.Errorf("Args = %q\nwant   %q", got, want)
	}
}

func TestLooksSecret(t *testing.T) {
	for _, s := range []string{pat, "github_pat_11ABCDEFG0123456789_abcdefghijkl", "sk-proj-Abc123def456GHI789jkl", "xoxb-1234567890-abcdefghijklmnop",
		"AKIAIOSFODNN7EXAMPLE1", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln", strings.Repeat("0a", 16), "aB3dE5fG7hJ9kL1mN3pQ5rS7"} {
		if !LooksSecret(s) {
			t.Errorf("LooksSecret(%q) = false", s)
		}
	}
	for _, s := range []string{"@modelcontextprotocol/server-everything", "ghcr.io/github/github-mcp-server", "mcp-server-fetch",
		"asia-weather-server", "sk-learn-mcp", "index", "weather_mcp.server", "127.0.0.1:3001/mcp", "GITHUB_PERSONAL_ACCESS_TOKEN", "FIXTURE_MODE"} {
		if LooksSecret(s) {
			t.Errorf("LooksSecret(%q) = true", s)
		}
	}
}

// Holds finds a value in each form it takes in JSON (as encoding/json and
// as canonical JSON write it), a Go quoted string and a URL; a nil or
// empty Set holds nothing.
func TestSetHolds(t *testing.T) {
	var s Set
	v := "a<b>&c\"d\\e\n/f g"
	s.Add(v)
	for _, text := range []string{v, `{"k":"a<b>&c\"d\\e\n/f g"}`, `"a\u003cb\u003e\u0026c\"d\\e\n/f g"`, "x=a%3Cb%3E%26c%22d%5Ce%0A%2Ff+g"} {
		if !s.Holds(text) {
			t.Errorf("Holds(%q) = false", text)
		}
	}
	if s.Holds("a<b>&c") {
		t.Error("Holds: a part of the value")
	}
	var empty Set
	var nilSet *Set
	if empty.Holds(v) || nilSet.Holds(v) {
		t.Error("an empty set holds a value")
	}
}

// The value of a runner's package flag is not a secret unless it looks
// like one; a URL in it still gives its credentials.
func TestAddArgsPackageFlag(t *testing.T) {
	var s Set
	s.AddArgs([]string{"npx", "--package=weather-mcp@1", "weather", "--from=git+https://u:pw-secret-1@h/r.git", "--spec=ghp_R3alLook1ngT0kenValue0123456789abcd", "--other=value-x"})
	if s.Holds("weather-mcp@1") {
		t.Error("the --package value is a secret")
	}
	for _, v := range []string{"pw-secret-1", "ghp_R3alLook1ngT0kenValue0123456789abcd", "value-x"} {
		if !s.Holds(v) {
			t.Errorf("%q is not a secret", v)
		}
	}
}

func TestCredentialName(t *testing.T) {
	for _, n := range []string{"API_KEY", "GITHUB_TOKEN", "Authorization", "X-Api-Key", "password", "--token", "DB_PASSWORD", "PRIVATE_KEY", "Cookie"} {
		if !CredentialName(n) {
			t.Errorf("CredentialName(%q) = false", n)
		}
	}
	for _, n := range []string{"LOG_LEVEL", "PORT", "HOME", "ECHO_TOOL", "Accept", "--package", "keyboard"} {
		if CredentialName(n) {
			t.Errorf("CredentialName(%q) = true", n)
		}
	}
}

// FuzzString: after redaction no added value of MinLen bytes or more is
// left in the text (unless it spans the brackets of a Mask put in).
func FuzzString(f *testing.F) {
	f.Add("token abcd here", "abcd", "https://u:pw12@h/?q=zzzz")
	f.Add("aaaa", "aaa", "")
	f.Fuzz(func(t *testing.T, text, secret, rawURL string) {
		var s Set
		s.Add(secret)
		s.AddURL(rawURL)
		got := s.String(text + secret)
		if len(secret) >= MinLen && !strings.ContainsAny(secret, "[]") && strings.Contains(got, secret) {
			t.Fatalf("%q left in %q", secret, got)
		}
		_ = URL(rawURL)
		// The end of a secret at the start of a tail is masked as well.
		if len(secret) > MinLen && !strings.ContainsAny(secret, "[]") {
			end := secret[len(secret)/2:]
			if len(end) >= MinLen && strings.HasPrefix(s.Tail(end+text), end) {
				t.Fatalf("tail starts with %q", end)
			}
		}
	})
}
