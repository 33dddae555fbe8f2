//go:build unix

package guard

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
)

// listServer is a stdio server in sh that offers two pages of tools,
// prompts, resources and resource templates, instructions, and a _meta on
// its tools/list result; %DESC% is the description of its last tool.
const listServer = `while IFS= read -r line; do
	id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\("[^"]*"\|[0-9][0-9]*\).*/\1/p')
	case "$line" in
	*'"initialize"'*) r='{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"prompts":{},"resources":{}},"serverInfo":{"name":"sh","version":"1"},"instructions":"Use   b.%INSTR%"}' ;;
	*'"tools/list"'*'"cursor"'*) r='{"tools":[{"name":"b","description":"%DESC%","inputSchema":{"type":"object","properties":{"z":{},"a":{}}}}]}' ;;
	*'"tools/list"'*) r='{"tools":[{"name":"a","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}],"nextCursor":"2","_meta":{"x":1}}' ;;
	*'"prompts/list"'*) r='{"prompts":[{"name":"p","description":"é%PDESC%"}]}' ;;
	*'"resources/list"'*) r='{"resources":[]}' ;;
	*'"resources/templates/list"'*) r='{"resourceTemplates":[{"uriTemplate":"x://{id}","name":"t"}]}' ;;
	*) continue ;;
	esac
	printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$id" "$r"
done
`

func listServerCmd(t *testing.T, desc string, instr ...string) Launch {
	return listServerWith(t, "%DESC%", desc, "%INSTR%", strings.Join(instr, ""))
}

// listServerWith starts listServer with its placeholders replaced as
// oldnew says (those not named are left empty).
func listServerWith(t *testing.T, oldnew ...string) Launch {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.sh")
	if err := os.WriteFile(path, []byte(strings.NewReplacer(append(oldnew, "%DESC%", "", "%INSTR%", "", "%PDESC%", "")...).Replace(listServer)), 0o644); err != nil {
		t.Fatal(err)
	}
	return Launch{Command: []string{"/bin/sh", path}}
}

// FetchSave writes, page by page, exactly what Fetch and Saver write of
// the same server: every list, the instructions, the _meta.
func TestFetchSaveMatchesSaver(t *testing.T) {
	s := listServerCmd(t, "forecast")
	l, err := Fetch(context.Background(), s, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	write, err := l.Saver()
	if err != nil {
		t.Fatal(err)
	}
	var want, got bytes.Buffer
	if err := write(&want); err != nil {
		t.Fatal(err)
	}
	saved, fs, err := FetchSave(context.Background(), s, FetchOptions{}, nil, &got)
	if err != nil || len(fs) > 0 {
		t.Fatalf("%v %v", err, fs)
	}
	if got.String() != want.String() {
		t.Fatalf("FetchSave wrote\n%s\nSaver writes\n%s", got.String(), want.String())
	}
	if saved.Pages != 2 || saved.Entries["tools"] != 2 || saved.Entries["prompts"] != 1 || saved.Entries["resources"] != 0 || saved.Entries["resourceTemplates"] != 1 {
		t.Fatalf("saved %+v", saved)
	}
	for _, w := range []string{`"prompts": [`, `"resources": [`, `"resourceTemplates": [`, `"instructions": "Use   b."`} {
		if !strings.Contains(got.String(), w) {
			t.Fatalf("no %s in\n%s", w, got.String())
		}
	}
	back, err := ReadListing(got.Bytes())
	if err != nil || len(back.Tools) != 2 || back.Tools[1].Digest != l.Tools[1].Digest || len(back.Listed) != 3 {
		t.Fatalf("read back: %v %+v", err, back)
	}
}

// A server that shows a configured credential on its last page is
// reported, whatever page it is on, and the caller is told not to keep
// what was written.
func TestFetchSaveCredentialShown(t *testing.T) {
	secret := "sk-live-0123456789abcdef"
	// Larger than the writer's buffer, so a page written would reach w.
	s := listServerCmd(t, "key "+secret+strings.Repeat(" x", 64<<10))
	var written bytes.Buffer
	saved, fs, err := FetchSave(context.Background(), s, FetchOptions{}, []Credential{{Where: "env API_KEY", Value: secret}}, &written)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(written.String(), secret) {
		t.Fatalf("the page that shows the credential was written:\n%s", written.String())
	}
	if len(fs) != 1 || fs[0].Kind != finding.SecretInDefinition || fs[0].Tool != "b" || strings.Contains(fs[0].Message, secret) {
		t.Fatalf("findings %+v", fs)
	}
	if saved == nil {
		t.Fatal("no counts")
	}
	// In the instructions, known only once the listing ended.
	s2 := listServerCmd(t, "forecast", " "+secret)
	if _, fs, err := FetchSave(context.Background(), s2, FetchOptions{}, []Credential{{Where: "env API_KEY", Value: secret}}, &bytes.Buffer{}); err != nil || len(fs) != 1 || !strings.Contains(fs[0].Message, "instructions") {
		t.Fatalf("instructions: %v %+v", err, fs)
	}
	// In a prompt: the finding names the prompt.
	s3 := listServerWith(t, "%PDESC%", " "+secret)
	if _, fs, err := FetchSave(context.Background(), s3, FetchOptions{}, []Credential{{Where: "env API_KEY", Value: secret}}, &bytes.Buffer{}); err != nil || len(fs) != 1 || fs[0].Item != "prompt" || fs[0].Tool != "p" {
		t.Fatalf("prompt: %v %+v", err, fs)
	}
	// The same server without that credential configured is saved.
	if _, fs, err := FetchSave(context.Background(), s, FetchOptions{}, []Credential{{Where: "env OTHER", Value: "another-secret-value-42"}}, &bytes.Buffer{}); err != nil || len(fs) > 0 {
		t.Fatalf("%v %v", err, fs)
	}
}

// An entry whose canonical form does not give its digest is refused
// before anything of it is written.
func TestCheckReadsBack(t *testing.T) {
	l, err := ReadListing([]byte(`{"tools":[` + atkTool + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkReadsBack(l.Tools); err != nil {
		t.Fatal(err)
	}
	bad := l.Tools[0]
	bad.Canonical = append([]byte(nil), bad.Canonical...)
	bad.Canonical[len(bad.Canonical)-2] ^= 1
	if err := checkReadsBack([]etdi.LiveTool{l.Tools[0], bad}); err == nil {
		t.Fatal("an entry that does not read back with its digest passed")
	}
	bad.Canonical = []byte("{")
	if err := checkReadsBack([]etdi.LiveTool{bad}); err == nil {
		t.Fatal("an entry that does not parse passed")
	}
}

// What served a listing is written by FetchSave with the binding Saver
// writes, and reads back: approving from a fetched file records it.
func TestFetchSaveServedBinding(t *testing.T) {
	s := listServerCmd(t, "forecast")
	const served = "program /usr/bin/forecast sha256:00"
	l, err := Fetch(context.Background(), s, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Served = served
	write, err := l.Saver()
	if err != nil {
		t.Fatal(err)
	}
	var want, got bytes.Buffer
	if err := write(&want); err != nil {
		t.Fatal(err)
	}
	if _, fs, err := FetchSave(context.Background(), s, FetchOptions{Served: served}, nil, &got); err != nil || len(fs) > 0 {
		t.Fatalf("%v %v", err, fs)
	}
	if got.String() != want.String() {
		t.Fatalf("FetchSave wrote\n%s\nSaver writes\n%s", got.String(), want.String())
	}
	back, err := ReadListing(got.Bytes())
	if err != nil || back.Served != served {
		t.Fatalf("read back: %v served %q", err, back.Served)
	}
	// The binding covers what served it: another program named there is
	// refused.
	edited := strings.Replace(got.String(), served, "program /tmp/other sha256:00", 1)
	if _, err := ReadListing([]byte(edited)); !errors.Is(err, ErrServedBinding) {
		t.Fatalf("an edited served read back: %v", err)
	}
}
