package hostconfig

import (
	"strconv"
	"strings"
	"testing"
)

// outcomeOf returns the outcome of the entry name.
func outcomeOf(t *testing.T, res *Result, name string) Outcome {
	t.Helper()
	for _, o := range res.Outcomes {
		if o.Name == name {
			return o
		}
	}
	t.Fatalf("no outcome for %q: %+v", name, res.Outcomes)
	return Outcome{}
}

// TestReadRefusesMistypedMembers: a member of an entry that is not of
// its type is an error, never skipped or read as something else.
func TestReadRefusesMistypedMembers(t *testing.T) {
	for _, tc := range []struct{ path, data, want string }{
		{"/c/.mcp.json", `{"mcpServers": {"a": {"command": "node", "args": ["a.js", 1]}}}`, `server "a": args[1] is a number, not a string`},
		{"/c/config.toml", "[mcp_servers.a]\ncommand = 1\n", "mcp_servers.a.command is not a string"},
		{"/c/config.toml", "[mcp_servers.a]\ncommand = \"node\"\nargs = [\"a.js\", 1]\n", "mcp_servers.a.args[1] is not a string"},
	} {
		if _, err := loadData(tc.path, []byte(tc.data), "", Options{Gate: testGate()}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v does not contain %q", tc.data, err, tc.want)
		}
	}
}

// TestWrapRefusesWhatItCannotRestore: a remote entry with arguments
// beside its URL is refused and left as it is; a trust policy given by a
// relative path, which a host resolves from its own directory, is
// refused before anything is written.
func TestWrapRefusesWhatItCannotRestore(t *testing.T) {
	data := []byte(`{"mcpServers": {"r": {"type": "http", "url": "https://r.example/mcp", "args": ["x"]}}}`)
	res, err := Wrap("/c/.mcp.json", data, WrapOptions{Host: ClaudeCode, Etdi: testEtdi})
	if err != nil {
		t.Fatal(err)
	}
	if o := outcomeOf(t, res, "r"); o.Status != StatusRefused || !strings.Contains(o.Reason, "it has args or command next to its URL") || string(res.Data) != string(data) {
		t.Errorf("URL with args: %+v\n%s", o, res.Data)
	}
	for _, o := range []WrapOptions{{Trust: "trust.json"}, {Pins: "pins.db"}} {
		o.Host, o.Etdi = ClaudeCode, testEtdi
		if _, err := Wrap("/c/.mcp.json", data, o); err == nil || !strings.Contains(err.Error(), "absolute paths that a host configuration can hold") {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// TestUnwrapRefusesHeaderTwice: an etdi run that sends one header twice
// (from two variables) cannot be written back as one headers object: it
// is refused, not restored with one of the values dropped.
func TestUnwrapRefusesHeaderTwice(t *testing.T) {
	data := []byte(`{"mcpServers": {"r": {"command": ` + strconv.Quote(testEtdi) + `, "args": ["run", "--url", "https://r.example/mcp", "--header-env", "X-K=V1", "--header-env", "x-k=V2"], "env": {"V1": "a", "V2": "b"}}}}`)
	un, err := Unwrap("/c/.mcp.json", data, UnwrapOptions{Host: ClaudeCode, Gate: testGate()})
	if err != nil {
		t.Fatal(err)
	}
	if o := outcomeOf(t, un, "r"); o.Status != StatusRefused || !strings.Contains(o.Reason, "header x-k is given twice") || string(un.Data) != string(data) {
		t.Errorf("%+v\n%s", o, un.Data)
	}
}

// TestUnwrapRecordOnlyWhenUntouched: the original bytes Wrap recorded are
// put back only over the very text Wrap wrote; an entry edited since,
// even by as many bytes as it had, is restored from what it says now.
func TestUnwrapRecordOnlyWhenUntouched(t *testing.T) {
	orig := []byte(`{"mcpServers": {"a": {"command": "node", "args": ["a.js"]}}}`)
	res, err := Wrap("/c/.mcp.json", orig, WrapOptions{Host: ClaudeCode, Etdi: testEtdi})
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(res.Data), `"--", "node"`, `"--", "deno"`, 1)
	if edited == string(res.Data) {
		t.Fatal("the edit did not apply")
	}
	un, err := Unwrap("/c/.mcp.json", []byte(edited), UnwrapOptions{Host: ClaudeCode, Records: res.Records, Gate: testGate()})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"mcpServers": {"a": {"command": "deno", "args": ["a.js"]}}}`; string(un.Data) != want {
		t.Errorf("unwrapped\n%s\nwant\n%s", un.Data, want)
	}
}
