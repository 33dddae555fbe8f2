package main

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// etdi run --listen with its token in a file: the session takes the
// token, while the server (a real child process) is given no ETDI_*
// variable and no secret etdi read, keeps what was passed on purpose,
// and no command line of any process holds the token. The same with the
// token in $ETDI_LISTEN_TOKEN.
//
// A Go test: it reads the address etdi prints while it runs, posts to it
// and reads every process's command line while the gate and its server
// run, none of which a script can wait for. The environment etdi check
// gives a server and the refused tokens are the scripts
// testdata/script/env_*.txtar.
func TestServerEnvAndListenToken(t *testing.T) {
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	bin := buildWeather(t, p.dir, "weather", "")
	const token = "listen-token-7c0ffee-abcdef0123456789"
	secrets := []string{token, "key-password-31337", "etcd-user-31337", "etcd-password-31337", "header-secret-31337"}
	dump := filepath.Join(p.dir, "server.env")
	script := filepath.Join(p.dir, "server.sh")
	os.WriteFile(script, []byte("#!/bin/sh\nenv > \""+dump+".tmp\" && mv \""+dump+".tmp\" \""+dump+"\"\nexec "+bin+"\n"), 0o755)
	base := []string{"HOME=" + p.dir, "XDG_CONFIG_HOME=" + filepath.Join(p.dir, ".config"), "PATH=" + os.Getenv("PATH"),
		"ETDI_PASSWORD=key-password-31337", "ETDI_ETCD_USER=etcd-user-31337", "ETDI_ETCD_PASSWORD=etcd-password-31337",
		"HEADER_VALUE=header-secret-31337", "ETDI_PASSED=on-purpose", "SERVER_SETTING=kept"}
	tokenFile := filepath.Join(p.dir, "listen.token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	serverEnv := func(what string) {
		t.Helper()
		var env []byte
		for deadline := time.Now().Add(30 * time.Second); env == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			env, _ = os.ReadFile(dump)
		}
		for _, s := range append(secrets, "ETDI_LISTEN_TOKEN", "ETDI_PASSWORD", "ETDI_ETCD") {
			if bytes.Contains(env, []byte(s)) {
				t.Errorf("%s: the server was given %q:\n%s", what, s, env)
			}
		}
		for _, kept := range []string{"SERVER_SETTING=kept", "ETDI_PASSED=on-purpose"} {
			if !bytes.Contains(env, []byte(kept+"\n")) {
				t.Errorf("%s: the server lacks %s:\n%s", what, kept, env)
			}
		}
		os.Remove(dump)
	}
	for _, c := range []struct {
		name  string
		flags []string
		env   []string
	}{
		{"token file", []string{"--listen-token-file", tokenFile}, nil},
		{"token in the environment", nil, []string{"ETDI_LISTEN_TOKEN=" + token}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"run", "--trust", "trust.json", "--pins", "pins.db", "--name", "weather", "--listen", "127.0.0.1:0",
				"--header-env", "X-Unused=HEADER_VALUE", "--pass-env", "ETDI_PASSED"}, c.flags...)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, etdiBin, append(args, "--", script)...)
			cmd.Dir, cmd.Env = p.dir, append(append([]string{}, base...), c.env...)
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
			url := make(chan string, 1)
			go func() {
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					if u, ok := strings.CutPrefix(sc.Text(), "etdi: listening on "); ok {
						url <- u
					}
				}
				close(url)
			}()
			var endpoint string
			select {
			case endpoint = <-url:
			case <-ctx.Done():
				t.Fatal("etdi run never listened")
			}
			post := func(auth string) int {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(
					`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			if code := post(""); code != http.StatusUnauthorized {
				t.Fatalf("without the token: %d", code)
			}
			if code := post("Bearer " + token); code != http.StatusOK {
				t.Fatalf("with the token: %d", code)
			}
			serverEnv(c.name)
			// No process's command line holds the token, the server's and
			// etdi's included (both still run).
			procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
			seen := 0
			for _, f := range procs {
				b, err := os.ReadFile(f)
				if err != nil {
					continue
				}
				if bytes.Contains(b, []byte(bin)) || bytes.Contains(b, []byte(etdiBin)) {
					seen++
				}
				if bytes.Contains(b, []byte(token)) {
					t.Errorf("%s holds the token: %q", f, b)
				}
			}
			if seen < 2 {
				t.Fatalf("the gate and its server were not found among %d processes", len(procs))
			}
		})
	}
}
