package guard

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/trust"
)

// ServerEnv removes every ETDI_* variable and every variable etdi read a
// secret from; it keeps what the host configuration sets on purpose, and
// never the --listen token.
func TestServerEnv(t *testing.T) {
	env := []string{"PATH=/bin", "ETDI_PASSWORD=pw", "ETDI_LISTEN_TOKEN=tok", "etdi_etcd_password=x", "ETDI_ETCD_USER=u",
		"IDP_SECRET=s", "HEADER_TOKEN=h", "GITHUB_TOKEN=g", "ETDI_KEEP=k", "=C:=C:\\", "NOEQUALS", "ETDI=1", "XETDI_Y=1"}
	got := ServerEnv(env, []string{"IDP_SECRET", "HEADER_TOKEN"}, []string{"ETDI_KEEP", "ETDI_LISTEN_TOKEN", "HEADER_TOKEN"})
	// HEADER_TOKEN is a secret set on purpose too: kept.
	want := []string{"PATH=/bin", "HEADER_TOKEN=h", "GITHUB_TOKEN=g", "ETDI_KEEP=k", "=C:=C:\\", "NOEQUALS", "ETDI=1", "XETDI_Y=1"}
	if !slices.Equal(got, want) {
		t.Fatalf("ServerEnv:\n got %q\nwant %q", got, want)
	}
	if got := ServerEnv([]string{"A=1", "A=2", "ETDI_X=1", "ETDI_X=2"}, nil, nil); !slices.Equal(got, []string{"A=1", "A=2"}) {
		t.Fatalf("repeated names: %q", got)
	}
	// A variable that carries a removed one's value (a configuration's
	// "X": "${ETDI_PASSWORD}") goes too, kept or not; a short value is
	// not matched.
	got = ServerEnv([]string{"ETDI_PASSWORD=hunter22", "X=hunter22", "KEPT=hunter22", "ETDI_N=1", "N=1", "ETDI_PASSED=passed-on"},
		nil, []string{"KEPT", "ETDI_PASSED"})
	if want := []string{"N=1", "ETDI_PASSED=passed-on"}; !slices.Equal(got, want) {
		t.Fatalf("values of removed variables:\n got %q\nwant %q", got, want)
	}
	// A value holding a secret's value (a configuration's "X": "Bearer
	// ${ETDI_PASSWORD}") goes, kept or not; one holding another removed
	// value (a path) stays.
	got = ServerEnv([]string{"ETDI_PASSWORD=hunter22", "AUTH=Bearer hunter22", "KEPT=x-hunter22-y", "ETDI_LISTEN_TOKEN=tok-123456",
		"U=http://h/?t=tok-123456", "IDP_SECRET=s3cr3t-value", "Y=pre s3cr3t-value", "ETDI_TRUST=/home/u", "PATH=/home/u/bin:/bin"},
		[]string{"IDP_SECRET"}, []string{"KEPT"})
	if want := []string{"PATH=/home/u/bin:/bin"}; !slices.Equal(got, want) {
		t.Fatalf("values holding a secret:\n got %q\nwant %q", got, want)
	}
	// A name Windows takes for ETDI_PASSWORD (it upper-cases names, and
	// "ı" is "I") is removed, on every system, with its value's copies.
	got = ServerEnv([]string{"ETD\u0131_PASSWORD=hunter22", "eTdI_X=1", "X=hunter22", "ETD\u0130_Y=1"}, nil, nil)
	if want := []string{"ETD\u0130_Y=1"}; !slices.Equal(got, want) {
		t.Fatalf("names Windows reads as ETDI_*:\n got %q\nwant %q", got, want)
	}
	p := &trust.Policy{Providers: []trust.Provider{{ID: "a"}, {ID: "b", IDP: &trust.IDP{Introspection: &trust.Introspection{ClientSecretEnv: "IDP_SECRET"}}}}}
	if got := SecretEnv(p); !slices.Equal(got, []string{"IDP_SECRET"}) {
		t.Fatalf("SecretEnv: %q", got)
	}
}

// envDump is a server command that writes its environment to a file and
// its command line's parent's, then waits for its standard input to end.
func envDump(t *testing.T) (string, []string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("a shell script server")
	}
	out := filepath.Join(t.TempDir(), "env")
	return out, []string{"/bin/sh", "-c", `env > "$1.tmp" && mv "$1.tmp" "$1"; cat >/dev/null`, "dump", out}
}

func readDump(t *testing.T, path string) []string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(path)
		if err == nil {
			return strings.Split(strings.TrimSpace(string(b)), "\n")
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server wrote no environment: %v", err)
		}
	}
}

// Every path that starts a server (the gate's, and a fetch) starts it
// with ServerEnv's environment: a real child process sees no ETDI_*
// variable, no secret etdi read, and what was set for it on purpose.
func TestServerEnvOfStartedServer(t *testing.T) {
	t.Setenv("ETDI_LISTEN_TOKEN", "listen-token-1234567")
	t.Setenv("ETDI_PASSWORD", "key-password-1234567")
	t.Setenv("ETDI_ETCD_USER", "etcd-user")
	t.Setenv("ETDI_ETCD_PASSWORD", "etcd-password-1234567")
	t.Setenv("IDP_CLIENT_SECRET", "idp-secret-1234567")
	t.Setenv("SERVER_SETTING", "kept")
	check := func(what string, env []string) {
		t.Helper()
		joined := strings.Join(env, "\n")
		for _, secret := range []string{"listen-token-1234567", "key-password-1234567", "etcd-user", "etcd-password-1234567", "idp-secret-1234567", "ETDI_"} {
			if strings.Contains(joined, secret) {
				t.Errorf("%s: the server was given %q:\n%s", what, secret, joined)
			}
		}
		for _, kept := range []string{"SERVER_SETTING=kept", "HOST_SET=on purpose", "IDP_KEPT=configured"} {
			if !slices.Contains(env, kept) {
				t.Errorf("%s: the server lacks %s:\n%s", what, kept, joined)
			}
		}
	}
	secret := []string{"IDP_CLIENT_SECRET", "IDP_KEPT"}
	keep := []string{"HOST_SET", "IDP_KEPT"}

	// The gate's path, with etdi's own environment (Env nil) and what a
	// configuration adds.
	out, argv := envDump(t)
	t.Setenv("HOST_SET", "on purpose")
	t.Setenv("IDP_KEPT", "configured")
	c, err := StartServer(Launch{Command: argv, SecretEnv: secret, KeepEnv: keep}, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("StartServer", readDump(t, out))
	c.Close()

	// A fetch, with an environment given.
	out, argv = envDump(t)
	env := append(os.Environ(), "ETDI_TRUST=/x")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	Fetch(ctx, Launch{Command: argv, Env: env, SecretEnv: secret, KeepEnv: keep}, FetchOptions{StartTimeout: 2 * time.Second, Timeout: 5 * time.Second})
	check("Fetch", readDump(t, out))
}
