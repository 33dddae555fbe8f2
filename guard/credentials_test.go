package guard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/redact"
)

// The credentials of a configuration: named like one, or looking like
// one; never where ordinary values are.
func TestCredentialsOf(t *testing.T) {
	argv := []string{"npx", "-y", "@acme/srv", "--api-key", "value-after-flag", "--token=value-of-flag", "--port=8080", "--db", "plainname",
		"ghp_R3alLook1ngT0kenValue0123456789abcd", "https://u:url-password@h.example/x?key=query-key-value&page=2"}
	var got []string
	for _, c := range CommandCredentials(argv) {
		got = append(got, c.Value)
		if strings.Contains(c.Where, c.Value) {
			t.Errorf("where %q holds the value", c.Where)
		}
	}
	want := "value-after-flag,value-of-flag,ghp_R3alLook1ngT0kenValue0123456789abcd,url-password,query-key-value"
	if strings.Join(got, ",") != want {
		t.Errorf("credentials: %s\nwant %s", strings.Join(got, ","), want)
	}
	h := http.Header{"Authorization": {"Bearer tok-value-1234"}, "Accept": {"application/json"}, "X-Trace": {"trace-id-000001"}}
	got = nil
	for _, c := range URLCredentials("http://h.example/mcp?page=abcdefgh", h) {
		got = append(got, c.Where+"="+c.Value)
	}
	if want := `header "Authorization"=Bearer tok-value-1234,header "Authorization"=tok-value-1234`; strings.Join(got, ",") != want {
		t.Errorf("credentials of headers: %s\nwant %s", strings.Join(got, ","), want)
	}
	tg := newCredentialSearch(CommandCredentials(argv))
	for _, text := range []string{`{"description":"Serve on 8080 from plainname, page 2."}`, `{"name":"acme"}`} {
		if w := tg.shown(text); w != nil {
			t.Errorf("shown(%q) = %q", text, w)
		}
	}
	for _, text := range []string{`{"description":"use value-after-flag"}`, `"url-password"`, fmt.Sprintf("%q", "x\nquery-key-value")} {
		if w := tg.shown(text); w == nil {
			t.Errorf("shown(%q): not found", text)
		}
	}
}

// FuzzShownCredentials: whatever a server lists, a credential of
// MinCredential bytes or more in a tool's name, description or the
// instructions is found, and no finding carries it.
func FuzzShownCredentials(f *testing.F) {
	f.Add("echo", "Send the key.", "Use it.", "desc-api-key-value-6620-lamp")
	f.Add("x", "key is \"secret-v\u00e9lue\"\n", "", "secret-v\u00e9lue\"\n")
	f.Add("desc-api-key", "a<b>&c", "desc-api-key", "desc-api-key")
	f.Add("t", "k\u2028ey\"<x>\x01", "", "k\u2028ey\"<x>\x01")
	f.Fuzz(func(t *testing.T, name, desc, instr, secret string) {
		// A configured value comes from a JSON file or the command line:
		// valid UTF-8.
		if len(secret) < MinCredential || strings.Contains(secret, redact.Mask) || !utf8.ValidString(secret) {
			return
		}
		b, _ := json.Marshal(map[string]any{"tools": []any{map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}}}})
		tl, err := etdi.ParseList(b, etdi.ListOptions{})
		if err != nil {
			return
		}
		fs := CredentialFindings(&Listing{Tools: tl.Tools, Instructions: &instr}, []Credential{{"env API_KEY", secret}})
		want := strings.Contains(name, secret) || strings.Contains(desc, secret) || strings.Contains(instr, secret)
		if want && len(fs) == 0 {
			t.Fatalf("secret %q not found in %s / %q", secret, tl.Tools[0].Canonical, instr)
		}
		// etdi's own words may hold the secret ("secret_in_definition").
		words := string(finding.SecretInDefinition) + " tool (in description, name, inputSchema) shows the model a secret the server is configured with (env API_KEY): it is not compared, approved or recorded; take the secret out of what the server shows the server's instructions the _meta of the server's tools/list" + redact.Mask
		if strings.Contains(words, secret) {
			return
		}
		for _, f := range fs {
			if strings.Contains(f.Message+"\x00"+f.Tool+"\x00"+strings.Join(f.Fields, "\x00"), secret) {
				t.Fatalf("the finding carries the secret: %+v", f)
			}
		}
	})
}

// BenchmarkShownCredentials: looking for 10 configured credentials in a
// listing of 100 tools of ~450 bytes each, none shown (the common case).
func BenchmarkShownCredentials(b *testing.B) {
	var tools []any
	for i := range 100 {
		tools = append(tools, map[string]any{"name": fmt.Sprintf("tool_%d", i),
			"description": strings.Repeat("Read a file from the workspace and return its text. ", 6),
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}})
	}
	data, _ := json.Marshal(map[string]any{"tools": tools})
	tl, err := etdi.ParseList(data, etdi.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var argv []string
	for i := range 10 {
		argv = append(argv, fmt.Sprintf("--token%d", i), fmt.Sprintf("credential-value-%d-abcdef", i))
	}
	creds := CommandCredentials(argv)
	instr := "Use the tools."
	l := &Listing{Tools: tl.Tools, Instructions: &instr}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if fs := CredentialFindings(l, creds); len(fs) != 0 {
			b.Fatal(fs)
		}
	}
}
