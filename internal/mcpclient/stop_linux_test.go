package mcpclient

import (
	"context"
	"os"
	"strings"
	"testing"
)

// lastWords is what a server writes when its stdin ends, before it exits
// by itself: a notification of 1 MiB (more than a pipe holds, so it is
// written only if etdi reads it), then a mark. A server whose stdout etdi
// no longer read would get EPIPE (SIGPIPE for sh) and never write "clean".
const lastWordsAtEOF = `{ printf '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"'
	head -c 1048576 /dev/zero | tr '\0' x
	printf '"}}\n'; } || exit 3
echo clean > "$MARKFILE"; exit 0`

// A server that writes once more when its stdin ends, and then exits, is
// read to its end and not signalled: in a listing and in a session whose
// reader is waiting for the next message.
func TestServerLastWordsRead(t *testing.T) {
	argv, _, markFile, env := writeSh(t, "", lastWordsAtEOF)
	l, err := Stdio(context.Background(), argv, env, "", Options{})
	if err != nil || len(l.Tools) != 1 {
		t.Fatalf("listing: %v %+v", err, l)
	}
	if b, err := os.ReadFile(markFile); err != nil || string(b) != "clean\n" {
		t.Fatalf("listing: mark file %q (%v): the server's last write failed", b, err)
	}
	os.Remove(markFile)

	s, err := StartStdio(argv, env, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx); err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := s.Read(ctx) // waits: the server says nothing more
		read <- err
	}()
	s.Close()
	if err := <-read; err != errStopped {
		t.Fatalf("a Read under way at Close: %v, want %v", err, errStopped)
	}
	if _, err := s.Read(ctx); err != errStopped {
		t.Fatalf("a Read after Close: %v", err)
	}
	if b, err := os.ReadFile(markFile); err != nil || string(b) != "clean\n" {
		t.Fatalf("session: mark file %q (%v): the server's last write failed", b, err)
	}
	if got := s.Exit(); got != "exit status 0" {
		t.Fatalf("session: server exit %q, want exit status 0", got)
	}
}

// A server that goes on after its stdin ends sees that end first and is
// signalled only after it: SIGTERM, which it handles.
func TestServerIgnoringEOFTerminated(t *testing.T) {
	argv, _, markFile, env := writeSh(t, "", `echo eof >> "$MARKFILE"; while :; do sleep 0.05; done`)
	s, err := StartStdio(argv, env, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if b, err := os.ReadFile(markFile); err != nil || string(b) != "eof\nterm\n" {
		t.Fatalf("mark file %q (%v), want the end of stdin, then SIGTERM", b, err)
	}
	if got := s.Exit(); got != "exit status 1" {
		t.Fatalf("server exit %q, want exit status 1 (its SIGTERM trap)", got)
	}
}

// What a stopping server writes is read only up to one message's worth:
// one that goes on writing (here 80 MiB) has its stdout closed, and its
// write fails rather than being read for the whole grace period.
func TestStoppingServerOutputBounded(t *testing.T) {
	argv, _, markFile, env := writeSh(t, "", `head -c 83886080 /dev/zero || { echo cut > "$MARKFILE"; exit 3; }
echo all > "$MARKFILE"; exit 0`)
	s, err := StartStdio(argv, env, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if b, err := os.ReadFile(markFile); err != nil || string(b) != "cut\n" {
		t.Fatalf("mark file %q (%v): more than %d bytes were read from a stopping server", b, err, maxDrain)
	}
}

// Once the server is being stopped, Read returns errStopped, not a
// message it had read ahead before.
func TestReadAfterCloseStopped(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/server.sh"
	script := `read -r line
printf '{"jsonrpc":"2.0","method":"n1"}\n{"jsonrpc":"2.0","method":"n2"}\n'
cat >/dev/null`
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := StartStdio([]string{"/bin/sh", path}, nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"go"}`)); err != nil {
		t.Fatal(err)
	}
	if m, err := s.Read(ctx); err != nil || !strings.Contains(string(m), "n1") {
		t.Fatalf("first message %s %v", m, err)
	}
	s.Close()
	if m, err := s.Read(ctx); err != errStopped {
		t.Fatalf("Read after Close: %s %v, want %v", m, err, errStopped)
	}
}
