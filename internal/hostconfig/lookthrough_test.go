package hostconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// repo is a repository with a script of its own named etdi
// (tools/etdi), as an attacker writes one.
func repo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tools", "etdi"), []byte("#!/bin/sh\nexec node evil.js\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func loadOne(t *testing.T, path, data string, o Options) Entry {
	t.Helper()
	es, err := loadData(path, []byte(data), ClaudeCode, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 {
		t.Fatalf("%d entries", len(es))
	}
	return es[0]
}

func entryJSON(command string, args string, extra string) string {
	return `{"mcpServers": {"docs": {"command": ` + jsonString(command) + `, "args": [` + args + `]` + extra + `}}}`
}

// A program named etdi is wrapped only when it is the user's etdi, as
// the host finds it: a repository's script, a copy the user did not
// name, an etdi on the entry's own PATH, or one found through a PATH
// folder that depends on where the host starts are imitations, and the
// whole command is the server. A symbolic link to the user's etdi, a
// copy given in Gate.Etdi, or the user's etdi under another name are
// wrapped.
func TestWrappedOnlyWhenTheUsersEtdi(t *testing.T) {
	dir := repo(t)
	cfg := filepath.Join(dir, ".mcp.json")
	bin := filepath.Dir(testEtdi)
	link := filepath.Join(t.TempDir(), "etdi")
	if err := os.Symlink(testEtdi, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "gate")
	if err := os.Symlink(testEtdi, other); err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "etdi")
	if err := os.WriteFile(cp, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := `"run", "--name", "docs", "--", "node", "docs.js"`
	processPath := env0(map[string]string{"PATH": bin})
	for _, c := range []struct {
		name, command, extra string
		lookup               func(string) (string, bool)
		gate                 Gate
		wrapped              bool
		why                  string
	}{
		{"repository script", "./tools/etdi", "", processPath, testGate(), false, "tools/etdi, which is not the etdi you run"},
		{"repository script by absolute path", filepath.Join(dir, "tools", "etdi"), "", processPath, testGate(), false, "not the etdi you run"},
		{"entry PATH finds the script", "etdi", `, "env": {"PATH": ` + jsonString(filepath.Join(dir, "tools")) + `}`, processPath, testGate(), false, "tools/etdi"},
		{"relative PATH folder first", "etdi", `, "env": {"PATH": "tools:` + bin + `"}`, processPath, testGate(), false, "relative folder"},
		{"not on PATH", "etdi", "", env0(map[string]string{"PATH": "/nonexistent"}), testGate(), false, "not found on PATH"},
		{"unresolved variable", "${HOME}/etdi", "", processPath, testGate(), false, "placeholder"},
		{"no etdi known", testEtdi, "", processPath, Gate{}, false, "no etdi of yours"},
		{"a copy not given", cp, "", processPath, testGate(), false, "not the etdi you run"},
		{"the user's etdi", testEtdi, "", processPath, testGate(), true, ""},
		{"on the process PATH", "etdi", "", processPath, testGate(), true, ""},
		{"on the entry's PATH", "etdi", `, "env": {"PATH": ` + jsonString(bin) + `}`, env0(map[string]string{"PATH": filepath.Join(dir, "tools")}), testGate(), true, ""},
		{"a symbolic link to it", link, "", processPath, testGate(), true, ""},
		{"a copy given", cp, "", processPath, Gate{Etdi: []string{testEtdi, cp}}, true, ""},
		{"under another name", other, "", processPath, testGate(), true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := loadOne(t, cfg, entryJSON(c.command, run, c.extra), Options{Lookup: c.lookup, Gate: c.gate, Cwd: dir})
			if e.Wrapped != c.wrapped {
				t.Fatalf("wrapped %v, want %v: %+v", e.Wrapped, c.wrapped, e)
			}
			if c.wrapped {
				if e.Command != "node" || e.Imitation != "" {
					t.Fatalf("not seen through: %+v", e)
				}
				return
			}
			// The whole command is the server, and the entry says why.
			if e.Command != c.command && !strings.Contains(c.command, "${") || len(e.Args) != 6 || e.Args[0] != "run" {
				t.Fatalf("the command was not kept whole: %+v", e)
			}
			name := filepath.Base(c.command)
			if (name == "etdi") != (e.Imitation != "") || e.Imitation != "" && !strings.Contains(e.Imitation, c.why) {
				t.Fatalf("imitation %q, want one with %q", e.Imitation, c.why)
			}
		})
	}
}

// A relative program path counts only when it is the user's etdi from
// every folder the host may start it in.
func TestWrappedRelativePath(t *testing.T) {
	root := filepath.Dir(filepath.Dir(testEtdi))
	cfg := filepath.Join(root, "mcp.json")
	data := entryJSON("bin/etdi", `"run", "--", "node"`, "")
	if e := loadOne(t, cfg, data, Options{Cwd: root, Gate: testGate()}); !e.Wrapped {
		t.Errorf("bin/etdi from its own folder: %+v", e)
	}
	if e := loadOne(t, cfg, data, Options{Cwd: repo(t), Gate: testGate()}); e.Wrapped || e.Imitation == "" {
		t.Errorf("bin/etdi where the working directory holds another: %+v", e)
	}
	if e := loadOne(t, cfg, entryJSON("bin/etdi", `"run", "--", "node"`, `, "cwd": "/nonexistent"`), Options{Cwd: root, Gate: testGate()}); e.Wrapped {
		t.Errorf("bin/etdi with a cwd where there is none: %+v", e)
	}
}

// A wrapped entry whose etdi run uses another trust policy, pin store or
// lockfile than the user's says so, with both; one that names the user's
// own, or none, says nothing.
func TestGateOverrides(t *testing.T) {
	dir := repo(t)
	cfg := filepath.Join(dir, ".mcp.json")
	user := t.TempDir()
	trust, pins, lock := filepath.Join(user, "trust.json"), filepath.Join(user, "pins.db"), filepath.Join(user, "team.lock.json")
	for _, f := range []string{trust, pins, lock} {
		if err := os.WriteFile(f, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	trustLink := filepath.Join(t.TempDir(), "trust.json")
	if err := os.Symlink(trust, trustLink); err != nil {
		t.Fatal(err)
	}
	g := Gate{Etdi: []string{testEtdi}, Trust: trust, Pins: pins}
	theirs := filepath.Join(dir, "trust.json")
	lookup := env0(map[string]string{"HOME": user, "PATH": "/usr/bin"})
	for _, c := range []struct {
		name, args, extra string
		gate              Gate
		want              []GateOverride
	}{
		{"none", `"run", "--name", "docs", "--", "node"`, "", g, nil},
		{"the user's own", `"run", "--trust", ` + jsonString(trust) + `, "--pins=` + pins + `", "--", "node"`, "", g, nil},
		{"the user's own by a link", `"run", "--trust", ` + jsonString(trustLink) + `, "--", "node"`, "", g, nil},
		{"the user's own in env", `"run", "--", "node"`, `, "env": {"ETDI_TRUST": ` + jsonString(trust) + `, "HOME": ` + jsonString(user) + `}`, g, nil},
		{"the user's lockfile", `"run", "--lock", ` + jsonString(lock) + `, "--", "node"`, "", Gate{Etdi: g.Etdi, Trust: trust, Pins: pins, Lock: lock}, nil},
		{"repository trust", `"run", "--trust", "trust.json", "--", "node"`, "", g,
			[]GateOverride{{"trust policy", "--trust", "trust.json", trust}}},
		{"repository pins", `"run", "--pins", "./pins.db", "--url", "https://x/mcp"`, "", g,
			[]GateOverride{{"pin store", "--pins", "./pins.db", pins}}},
		{"etcd pins", `"run", "--pins", "etcd://127.0.0.1:2379/x", "--", "node"`, "", g,
			[]GateOverride{{"pin store", "--pins", "etcd://127.0.0.1:2379/x", pins}}},
		{"a lockfile", `"run", "--lock", "etdi.lock.json", "--", "node"`, "", g,
			[]GateOverride{{"lockfile", "--lock", "etdi.lock.json", ""}}},
		{"env ETDI_TRUST and ETDI_PINS", `"run", "--", "node"`, `, "env": {"ETDI_TRUST": ` + jsonString(theirs) + `, "ETDI_PINS": "p.db"}`, g,
			[]GateOverride{{"trust policy", "env ETDI_TRUST", theirs, trust}, {"pin store", "env ETDI_PINS", "p.db", pins}}},
		{"flag over env", `"run", "--trust", ` + jsonString(trust) + `, "--", "node"`, `, "env": {"ETDI_TRUST": ` + jsonString(theirs) + `}`, g, nil},
		{"snapshot folder", `"run", "--", "node"`, `, "env": {"ETDI_ETCD_SNAPSHOTS": "snaps"}`, g,
			[]GateOverride{{"pin store snapshot folder", "env ETDI_ETCD_SNAPSHOTS", "snaps", ""}}},
		{"code loaded into etdi", `"run", "--", "node"`, `, "env": {"LD_PRELOAD": "./evil.so", "SSL_CERT_FILE": "ca.pem", "PATH": "/usr/bin"}`, g,
			[]GateOverride{{"library loaded into etdi", "env LD_PRELOAD", "./evil.so", ""}, {"certificate authorities etdi trusts", "env SSL_CERT_FILE", "ca.pem", ""}}},
		{"a call-time policy", `"run", "--cedar", "permit-all.cedar", "--", "node"`, "", g,
			[]GateOverride{{"call-time policy", "--cedar", "permit-all.cedar", ""}}},
		{"another call-time policy than the user's", `"run", "--cedar", "permit-all.cedar", "--", "node"`, "", Gate{Etdi: g.Etdi, Trust: trust, Pins: pins, Cedar: []string{trust}},
			[]GateOverride{{"call-time policy", "--cedar", "permit-all.cedar", trust}}},
		{"the user's call-time policy", `"run", "--cedar=` + trust + `", "--", "node"`, "", Gate{Etdi: g.Etdi, Trust: trust, Pins: pins, Cedar: []string{trust}}, nil},
		{"env HOME", `"run", "--pins", ` + jsonString(pins) + `, "--", "node"`, `, "env": {"HOME": ` + jsonString(dir) + `}`, g,
			[]GateOverride{{"trust policy", "env HOME", "the default under " + dir, trust}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := loadOne(t, cfg, entryJSON(testEtdi, c.args, c.extra), Options{Lookup: lookup, Gate: c.gate, Cwd: dir})
			if !e.Wrapped || len(e.Problems) != 0 {
				t.Fatalf("not wrapped: %+v", e)
			}
			if !reflect.DeepEqual(e.GateOverrides, c.want) {
				t.Fatalf("overrides %+v, want %+v", e.GateOverrides, c.want)
			}
			for _, o := range e.GateOverrides {
				if s := o.String(); !strings.Contains(s, o.Entry) || !strings.Contains(s, o.User) && o.User != "" {
					t.Errorf("%q does not name both files", s)
				}
			}
		})
	}
	// A relative path is the user's only from every folder the host may
	// start etdi in.
	e := loadOne(t, filepath.Join(user, "mcp.json"), entryJSON(testEtdi, `"run", "--trust", "trust.json", "--", "node"`, ""), Options{Gate: g, Cwd: dir})
	if len(e.GateOverrides) != 1 {
		t.Errorf("relative trust from another working directory: %+v", e.GateOverrides)
	}
	e = loadOne(t, filepath.Join(user, "mcp.json"), entryJSON(testEtdi, `"run", "--trust", "trust.json", "--", "node"`, ""), Options{Gate: g, Cwd: user})
	if len(e.GateOverrides) != 0 {
		t.Errorf("relative trust, the user's own: %+v", e.GateOverrides)
	}
}

// Wrap refuses an entry that imitates etdi's gate (saying so and how to
// name an etdi of one's own) and one whose gate is not the user's; the
// user's own wrapped entry is already wrapped.
func TestWrapImitationAndOverride(t *testing.T) {
	dir := repo(t)
	cfg := filepath.Join(dir, ".mcp.json")
	for _, c := range []struct {
		name, data, status, reason string
	}{
		{"imitation", entryJSON("./tools/etdi", `"run", "--name", "docs", "--", "node", "docs.js"`, ""), StatusRefused, "is named etdi, but it resolves to " + filepath.Join(dir, "tools", "etdi")},
		{"imitation on the entry's PATH", entryJSON("etdi", `"run", "--", "node"`, `, "env": {"PATH": `+jsonString(filepath.Join(dir, "tools"))+`}`), StatusRefused, "--etdi"},
		{"repository trust", entryJSON(testEtdi, `"run", "--trust", "trust.json", "--", "node"`, ""), StatusRefused, "trust policy trust.json (--trust)"},
		{"the user's own", entryJSON(testEtdi, `"run", "--name", "docs", "--", "node"`, ""), StatusAlreadyWrapped, ""},
		{"another program", entryJSON("./tools/run-etdi", `"run", "--", "node"`, ""), StatusWrapped, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Wrap(cfg, []byte(c.data), WrapOptions{Host: ClaudeCode, Etdi: testEtdi, Gate: Gate{Trust: "/u/trust.json"}, Cwd: dir})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Outcomes) != 1 || res.Outcomes[0].Status != c.status || !strings.Contains(res.Outcomes[0].Reason, c.reason) {
				t.Fatalf("outcomes %+v, want %s with %q", res.Outcomes, c.status, c.reason)
			}
			if c.status != StatusWrapped && !bytes.Equal(res.Data, []byte(c.data)) {
				t.Fatalf("changed:\n%s", res.Data)
			}
		})
	}
}

// Every host's file: wrapped, then unwrapped without records, by the
// structure of the entries alone: every server is back as the host
// starts it, and nothing runs etdi any more.
func TestUnwrapByStructureEveryHost(t *testing.T) {
	for _, hf := range hostFiles {
		t.Run(hf.file, func(t *testing.T) {
			data, err := os.ReadFile("testdata/wrap/" + hf.file)
			if err != nil {
				t.Fatal(err)
			}
			path := "/cfg/" + hf.file
			res, err := Wrap(path, data, WrapOptions{Host: hf.host, Etdi: testEtdi, Cwd: "PROJECT"})
			if err != nil {
				t.Fatal(err)
			}
			un, err := Unwrap(path, res.Data, UnwrapOptions{Host: hf.host, Cwd: "PROJECT", Gate: testGate()})
			if err != nil {
				t.Fatal(err)
			}
			if un.Count(StatusUnwrapped) != res.Count(StatusWrapped) || un.Count(StatusRefused) != 0 {
				t.Fatalf("outcomes %+v", un.Outcomes)
			}
			o := Options{Cwd: "PROJECT", Gate: testGate()}
			before, _ := loadData(path, data, hf.host, o)
			after, err := loadData(path, un.Data, hf.host, o)
			if err != nil {
				t.Fatalf("%v\n%s", err, un.Data)
			}
			if len(before) != len(after) {
				t.Fatalf("%d entries, want %d", len(after), len(before))
			}
			for i := range before {
				b, a := before[i], after[i]
				if a.Wrapped || a.Command != b.Command || !reflect.DeepEqual(a.Args, b.Args) || a.URL != b.URL || !sameMap(a.Headers, b.Headers) || !sameMap(a.Env, b.Env) || a.Transport != b.Transport {
					t.Errorf("%s: %+v, want %+v\n%s", b.Name, a, b, un.Data)
				}
			}
			// Unwrapping again changes nothing.
			again, err := Unwrap(path, un.Data, UnwrapOptions{Host: hf.host, Cwd: "PROJECT", Gate: testGate()})
			if err != nil || !bytes.Equal(again.Data, un.Data) || len(again.Outcomes) != 0 {
				t.Fatalf("second unwrap: %v %+v", err, again)
			}
		})
	}
}

// Unwrap after the host edited the file: the wrapped entries come back
// as the servers they run, and every edit is kept: another server, other
// members, the entry's own members, comments elsewhere; JSON and TOML.
func TestUnwrapKeepsEdits(t *testing.T) {
	orig := []byte(`{"mcpServers": {"a": {"command": "node", "args": ["a.js"]}, "r": {"type": "http", "url": "https://r.example/mcp", "headers": {"Authorization": "Bearer t-1", "X-K": "${env:K}"}}}}`)
	res, err := Wrap("/c/.mcp.json", orig, WrapOptions{Host: ClaudeCode, Etdi: testEtdi})
	if err != nil {
		t.Fatal(err)
	}
	// The host's rewrite: its own layout and members, a new server, the
	// user's change to a's arguments and a variable of r's env.
	edited := strings.NewReplacer(`"mcpServers": {`, "\"theme\": \"dark\", // kept\n  \"mcpServers\": {\n    \"added\": {\"command\": \"uvx\", \"args\": [\"x\"]},\n    ",
		`"a.js"]`, `"a.js", "--v"], "timeout": 5`,
		`"env": {`, `"env": {"KEEP": "1", `).Replace(string(res.Data))
	un, err := Unwrap("/c/.mcp.json", []byte(edited), UnwrapOptions{Host: ClaudeCode, Records: res.Records, Gate: testGate(), Lookup: env0(map[string]string{"K": "k"})})
	if err != nil {
		t.Fatalf("%v\n%s", err, edited)
	}
	want := "{\"theme\": \"dark\", // kept\n  \"mcpServers\": {\n    \"added\": {\"command\": \"uvx\", \"args\": [\"x\"]},\n    " +
		`"a": {"command": "node", "args": ["a.js", "--v"], "timeout": 5}, "r": {"type": "http", "url": "https://r.example/mcp", "headers": {"Authorization": "Bearer t-1", "X-K": "${env:K}"}, "env": {"KEEP": "1"}}}}`
	if string(un.Data) != want || un.Count(StatusUnwrapped) != 2 || len(un.Records) != 0 {
		t.Fatalf("unwrap %+v:\n%s\nwant\n%s", un.Outcomes, un.Data, want)
	}

	toml := []byte("# mine\n[mcp_servers.docs]\ncommand = \"npx\" # launcher\nargs = [\"-y\", 'docs@1']\n\n[mcp_servers.remote]\nurl = \"https://m.example/mcp\"\n")
	res, err = Wrap("/c/config.toml", toml, WrapOptions{Host: Codex, Etdi: testEtdi})
	if err != nil {
		t.Fatal(err)
	}
	edited = strings.Replace(string(res.Data), "# mine\n", "# mine\nmodel = \"o3\"\n", 1) + "\n[mcp_servers.added]\ncommand = \"uvx\"\n"
	edited = strings.Replace(edited, "'docs@1']", "'docs@1', \"--v\"]\nstartup_timeout_sec = 9", 1)
	un, err = Unwrap("/c/config.toml", []byte(edited), UnwrapOptions{Host: Codex, Records: res.Records, Gate: testGate()})
	if err != nil {
		t.Fatalf("%v\n%s", err, edited)
	}
	want = "# mine\nmodel = \"o3\"\n[mcp_servers.docs]\ncommand = \"npx\" # launcher\nargs = [\"-y\", 'docs@1', \"--v\"]\nstartup_timeout_sec = 9\n\n[mcp_servers.remote]\nurl = \"https://m.example/mcp\"\n\n[mcp_servers.added]\ncommand = \"uvx\"\n"
	if string(un.Data) != want || un.Count(StatusUnwrapped) != 2 {
		t.Fatalf("codex unwrap %+v:\n%s\nwant\n%s", un.Outcomes, un.Data, want)
	}
}

// Unwrap never takes apart an entry whose program only imitates etdi,
// nor one it cannot restore faithfully: each is refused, left byte for
// byte, and its record kept; the user's own wrapped entry beside them is
// restored.
func TestUnwrapRefusals(t *testing.T) {
	dir := repo(t)
	cfg := filepath.Join(dir, ".mcp.json")
	mineEntry := `"mine": {"command": ` + jsonString(testEtdi) + `, "args": ["run", "--name", "mine", "--", "node", "m.js"]}`
	for _, c := range []struct {
		name, entry, reason string
	}{
		{"imitation", `"docs": {"command": "./tools/etdi", "args": ["run", "--name", "docs", "--", "node", "docs.js"]}`, "is named etdi, but it resolves to"},
		{"header from the process environment", `"r": {"command": ` + jsonString(testEtdi) + `, "args": ["run", "--url", "https://r/mcp", "--header-env", "Authorization=TOKEN"]}`, "environment variable TOKEN"},
		{"unknown argument", `"x": {"command": ` + jsonString(testEtdi) + `, "args": ["run", "--frobnicate", "--", "node"]}`, "--frobnicate"},
		{"nothing after --", `"x": {"command": ` + jsonString(testEtdi) + `, "args": ["run", "--"]}`, "nothing after --"},
		{"neither -- nor --url", `"x": {"command": ` + jsonString(testEtdi) + `, "args": ["run", "--name", "x"]}`, "neither -- CMD nor --url"},
		{"headers of its own", `"x": {"command": ` + jsonString(testEtdi) + `, "args": ["run", "--url", "https://r/mcp", "--header-env", "A=V"], "env": {"V": "v"}, "headers": {"B": "b"}}`, "headers of its own"},
		{"a header twice", `"x": {"command": ` + jsonString(testEtdi) + `, "args": ["run", "--url", "https://r/mcp", "--header-env", "A=V", "--header", "a: b"], "env": {"V": "v"}}`, "header a is given twice"},
		{"url beside", `"x": {"command": ` + jsonString(testEtdi) + `, "args": ["run", "--url", "https://r/mcp"], "httpUrl": "https://other/mcp"}`, "httpUrl"},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := []byte(`{"mcpServers": {` + c.entry + `, ` + mineEntry + `}}`)
			rec := Record{Path: []string{"mcpServers", strings.Split(c.entry, `"`)[1]}, WrappedSHA256: "stale"}
			un, err := Unwrap(cfg, data, UnwrapOptions{Host: ClaudeCode, Gate: testGate(), Cwd: dir, Records: []Record{rec}, Lookup: env0(map[string]string{"TOKEN": "t"})})
			if err != nil {
				t.Fatal(err)
			}
			st := statuses(un)
			if un.Count(StatusRefused) != 1 || st["mine"] != StatusUnwrapped || !strings.Contains(un.Outcomes[0].Reason, c.reason) {
				t.Fatalf("outcomes %+v", un.Outcomes)
			}
			if !bytes.Contains(un.Data, []byte(c.entry)) || !bytes.Contains(un.Data, []byte(`"mine": {"command": "node", "args": ["m.js"]}`)) {
				t.Fatalf("unwrap result:\n%s", un.Data)
			}
			if len(un.Records) != 1 || un.Records[0].Path[1] != rec.Path[1] {
				t.Fatalf("record not kept: %+v", un.Records)
			}
		})
	}
	// Codex: headers are not moved back.
	toml := "[mcp_servers.r]\ncommand = " + jsonString(testEtdi) + "\nargs = [\"run\", \"--url\", \"https://r/mcp\", \"--header\", \"A: b\"]\n"
	un, err := Unwrap("/c/config.toml", []byte(toml), UnwrapOptions{Host: Codex, Gate: testGate()})
	if err != nil || un.Count(StatusRefused) != 1 || string(un.Data) != toml {
		t.Fatalf("codex headers: %v %+v", err, un)
	}
}

// FuzzUnwrap: Unwrap by structure of any text never panics, and what it
// writes reads back with every restored entry no longer running etdi
// and starting the server its etdi run started (Unwrap checks it and
// fails otherwise, changing nothing).
func FuzzUnwrap(f *testing.F) {
	for _, hf := range hostFiles {
		if b, err := os.ReadFile("testdata/wrap/" + hf.file); err == nil {
			if res, err := Wrap("/c/x", b, WrapOptions{Host: hf.host, Etdi: testEtdi}); err == nil {
				f.Add(res.Data, uint8(0))
			}
		}
	}
	f.Add([]byte(`{"mcpServers": {"r": {"command": "`+"ETDI"+`", "args": ["run", "--url", "u", "--header-env", "A=V"], "env": {"V": "x", "W": "y"}, "type": "stdio"}}}`), uint8(0))
	f.Add([]byte("[mcp_servers.x]\ncommand = \"ETDI\"\nargs = [\"run\", \"--url\", 'u']\n"), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		data = bytes.ReplaceAll(data, []byte("ETDI"), []byte(testEtdi))
		hosts := []struct{ path, host string }{
			{"/c/mcp.json", Cursor}, {"/c/.vscode/mcp.json", VSCode}, {"/c/zed/settings.json", Zed}, {"/c/config.toml", Codex}, {"/c/settings.json", Gemini},
		}
		h := hosts[int(which)%len(hosts)]
		o := UnwrapOptions{Host: h.host, Gate: testGate()}
		un, err := Unwrap(h.path, data, o)
		if err != nil {
			return
		}
		if un.Count(StatusUnwrapped) == 0 && !bytes.Equal(un.Data, data) {
			t.Fatalf("changed without unwrapping:\n%q", data)
		}
		es, err := loadData(h.path, un.Data, h.host, Options{Gate: testGate()})
		if err != nil {
			t.Fatalf("unwrapped text does not load: %v\n%q", err, un.Data)
		}
		st := statuses(un)
		for _, e := range es {
			if st[e.Name] == StatusUnwrapped && e.Wrapped {
				t.Fatalf("%s still wrapped:\n%q", e.Name, un.Data)
			}
		}
	})
}

// Small decisions of the proof: a file on PATH that is not executable is
// skipped, as the host skips it; Windows reads env names without regard
// to case; etdi run's arguments that contradict themselves are a
// problem.
func TestProofDetails(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "etdi"), []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, why := programFiles("etdi", "/c/mcp.json", "", "", map[string]string{"PATH": dir + string(filepath.ListSeparator) + filepath.Dir(testEtdi)}, nil)
	if why != "" || len(files) != 1 || files[0] != testEtdi {
		t.Errorf("a file that is not executable was taken: %v %q", files, why)
	}
	defer func(g string) { goos = g }(goos)
	goos = "windows"
	if v, ok := envValue(map[string]string{"Path": "x"}, "PATH"); !ok || v != "x" {
		t.Error("Windows: env Path is PATH")
	}
	goos = "linux"
	if _, ok := envValue(map[string]string{"Path": "x"}, "PATH"); ok {
		t.Error("Linux: env Path is not PATH")
	}
	for _, args := range [][]string{
		{"run", "--url", "https://x/mcp", "--", "node"},
		{"run", "--name"},
		{"run", "--header", "no-colon", "--url", "u"},
		{"run", "--header-env", "=V", "--url", "u"},
		{"run", "--audit-calls=maybe", "--", "node"},
		{"run", "--listen", "127.0.0.1:0", "--", "node"},
	} {
		if _, err := parseRun(args); err == nil {
			t.Errorf("%q: accepted", args)
		}
	}
}

// Two entries of the same name (Claude Code's user and project lists):
// wrap and unwrap cannot tell which one is proven, and neither takes a
// program named etdi for the user's.
func TestSameNameTwice(t *testing.T) {
	dir := repo(t)
	abs, _ := filepath.Abs(dir)
	data := []byte(`{"mcpServers": {"docs": {"command": ` + jsonString(testEtdi) + `, "args": ["run", "--", "node"]}},
"projects": {` + jsonString(abs) + `: {"mcpServers": {"docs": {"command": "./tools/etdi", "args": ["run", "--", "node"]}}}}}`)
	res, err := Wrap(filepath.Join(dir, ".claude.json"), data, WrapOptions{Host: ClaudeCode, Etdi: testEtdi, Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Count(StatusRefused) != 2 || !bytes.Equal(res.Data, data) {
		t.Fatalf("outcomes %+v", res.Outcomes)
	}
}

// A record restores an entry's original bytes only when the entry runs
// the user's etdi.
func TestUnwrapRecordNeedsProof(t *testing.T) {
	data := []byte(`{"mcpServers": {"a": {"command": "node", "args": ["a.js"]}}}`)
	res, err := Wrap("/c/mcp.json", data, WrapOptions{Host: Cursor, Etdi: testEtdi})
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "etdi")
	if err := os.WriteFile(cp, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	un, err := Unwrap("/c/mcp.json", res.Data, UnwrapOptions{Host: Cursor, Records: res.Records, Gate: Gate{Etdi: []string{cp}}})
	if err != nil {
		t.Fatal(err)
	}
	if un.Count(StatusRefused) != 1 || !bytes.Equal(un.Data, res.Data) || len(un.Records) != 1 {
		t.Fatalf("outcomes %+v", un.Outcomes)
	}
}

// sameAfterUnwrap is Unwrap's last guard: a restored entry that starts
// another server, or still runs etdi, and any other entry that changed,
// stop the whole restore.
func TestSameAfterUnwrap(t *testing.T) {
	b := []Entry{{Name: "x", Command: "node", Args: []string{"a"}, Transport: "stdio", Wrapped: true}, {Name: "y", Command: "uvx", Transport: "stdio"}}
	ok := []Entry{{Name: "x", Command: "node", Args: []string{"a"}, Transport: "stdio"}, {Name: "y", Command: "uvx", Transport: "stdio"}}
	if err := sameAfterUnwrap(b, ok, map[string]bool{"x": true}); err != nil {
		t.Fatal(err)
	}
	for name, a := range map[string][]Entry{
		"other server":  {{Name: "x", Command: "node", Args: []string{"b"}, Transport: "stdio"}, ok[1]},
		"still wrapped": {b[0], ok[1]},
		"imitation":     {{Name: "x", Command: "node", Args: []string{"a"}, Transport: "stdio", Imitation: "i"}, ok[1]},
		"other changed": {ok[0], {Name: "y", Command: "uvx", Transport: "stdio", Wrapped: true}},
		"one fewer":     {ok[0]},
		"other headers": {ok[0], {Name: "y", Command: "uvx", Transport: "stdio", Headers: map[string]string{"A": "b"}}},
	} {
		if err := sameAfterUnwrap(b, a, map[string]bool{"x": true}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Unwrap writes nothing that would start another server than the wrapped
// entry's etdi run did: one variable named by two --header-env flags is
// moved out of env by the first (etdi run then takes the second from its
// own environment), which a restored entry cannot say.
func TestUnwrapVerifies(t *testing.T) {
	data := []byte(`{"mcpServers": {"x": {"command": ` + jsonString(testEtdi) + `, "args": ["run", "--url", "https://r/mcp", "--header-env", "A=V", "--header-env", "B=V"], "env": {"V": "v"}}}}`)
	if un, err := Unwrap("/c/mcp.json", data, UnwrapOptions{Host: Cursor, Gate: testGate()}); err == nil || !strings.Contains(err.Error(), "would change the server") {
		t.Fatalf("accepted: %+v", un)
	}
	// A directory is no program, even the one named as etdi.
	dir := filepath.Dir(testEtdi)
	e := loadOne(t, "/c/.mcp.json", entryJSON(dir, `"run", "--", "node"`, ""), Options{Gate: Gate{Etdi: []string{dir}}})
	if e.Wrapped {
		t.Fatalf("a directory proved: %+v", e)
	}
}

// An entry's JSON shows an imitation and a gate override without the
// secrets of the entry: its command's credential arguments, a store URL's
// password.
func TestGateJSONRedacted(t *testing.T) {
	e := Entry{Name: "x", Command: "./etdi", Args: []string{"run", "--token=hunter2-secret", "--", "n"},
		Imitation:     `its program "./etdi" --token=hunter2-secret is named etdi`,
		GateOverrides: []GateOverride{{What: "pin store", Via: "--pins", Entry: "etcd://u:pw-secret-77@h:2379/x", User: "/u/pins.db"}}}
	b, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("hunter2-secret")) || bytes.Contains(b, []byte("pw-secret-77")) || !bytes.Contains(b, []byte("/u/pins.db")) || !bytes.Contains(b, []byte(`"imitation"`)) {
		t.Fatalf("%s", b)
	}
}

// Codex CLI's TOML entries are proven the same way: a repository's
// script named etdi is an imitation that wrap refuses; the user's etdi
// is already wrapped.
func TestCodexImitation(t *testing.T) {
	dir := repo(t)
	cfg := filepath.Join(dir, ".codex", "config.toml")
	data := "[mcp_servers.fake]\ncommand = \"../tools/etdi\"\nargs = [\"run\", \"--\", \"node\"]\n\n[mcp_servers.mine]\ncommand = " + jsonString(testEtdi) + "\nargs = [\"run\", \"--name\", \"mine\", \"--\", \"node\"]\n"
	es, err := loadCodex(cfg, []byte(data), Options{Gate: testGate(), Cwd: filepath.Join(dir, ".codex")})
	if err != nil {
		t.Fatal(err)
	}
	m := byName(es)
	if f := m["fake"]; f.Wrapped || !strings.Contains(f.Imitation, filepath.Join(dir, "tools", "etdi")) || f.Command != "../tools/etdi" {
		t.Fatalf("fake: %+v", f)
	}
	if e := m["mine"]; !e.Wrapped || e.Command != "node" {
		t.Fatalf("mine: %+v", e)
	}
	res, err := Wrap(cfg, []byte(data), WrapOptions{Host: Codex, Etdi: testEtdi, Cwd: filepath.Join(dir, ".codex")})
	if err != nil {
		t.Fatal(err)
	}
	if st := statuses(res); st["fake"] != StatusRefused || st["mine"] != StatusAlreadyWrapped || string(res.Data) != data {
		t.Fatalf("wrap: %+v", res.Outcomes)
	}
}
