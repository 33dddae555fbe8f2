package hostconfig

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Outcome statuses of Wrap and Unwrap.
const (
	StatusWrapped        = "wrapped"
	StatusAlreadyWrapped = "already wrapped"
	StatusRefused        = "refused"
	StatusDisabled       = "disabled"
	StatusSkipped        = "skipped"
	StatusUnwrapped      = "unwrapped"
	StatusNotWrapped     = "not wrapped"
)

// Outcome is what Wrap or Unwrap did with one entry.
type Outcome struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// Record is what Unwrap needs to restore one wrapped entry exactly: the
// entry's path in the file (for Codex, mcp_servers and its name), and the
// bytes wrap replaced. Of the entry's text as wrap left it, Prefix bytes
// at the start and Suffix bytes at the end are the entry's own and were
// kept; Wrapped is what wrap wrote between them and Original what was
// there before. WrappedSHA256 is the digest of the whole wrapped entry
// text: Unwrap restores only an entry that is still exactly as wrap left
// it.
type Record struct {
	Path          []string `json:"path"`
	Prefix        int      `json:"prefix"`
	Suffix        int      `json:"suffix"`
	Original      string   `json:"original"`
	Wrapped       string   `json:"wrapped"`
	WrappedSHA256 string   `json:"wrappedSha256"`
	// Server is the SHA-256 (hex) of the server the entry started when
	// it was wrapped (serverDigest): Unwrap says so when the entry it
	// restores starts another.
	Server string `json:"server,omitempty"`
}

// Change is one changed region: bytes [OldStart, OldEnd) of the old text
// became [NewStart, NewEnd) of the new one.
type Change struct {
	OldStart, OldEnd, NewStart, NewEnd int
}

// Result is the outcome of Wrap or Unwrap on one file. Data is the new
// content (equal to the old one when nothing changed).
type Result struct {
	Data     []byte
	Outcomes []Outcome
	// Records are, after Wrap, the entries it wrapped; after Unwrap, the
	// records it did not use up (to keep).
	Records []Record
	Changes []Change
}

// Count returns how many outcomes have status s.
func (r *Result) Count(s string) int {
	n := 0
	for _, o := range r.Outcomes {
		if o.Status == s {
			n++
		}
	}
	return n
}

// WrapOptions say how Wrap rewrites entries.
type WrapOptions struct {
	// Host of the file; empty to guess it as Load does.
	Host string
	// Etdi is the absolute path of the etdi program the entries run.
	Etdi string
	// Name limits Wrap to the entry of that name.
	Name string
	// Bundle, with Name, is the out-of-band bundle etdi run verifies the
	// entry with (--bundle): an absolute path.
	Bundle string
	// Trust and Pins, when not empty, are the trust policy and the pin
	// database the entries name (--trust, --pins): absolute paths, for a
	// person whose own are not the defaults (the host does not share the
	// person's environment).
	Trust, Pins string
	// Cwd selects Claude Code's projects[<Cwd>] entries, as in Load.
	Cwd string
	// Gate is the user's own etdi (Etdi is added to its programs): an
	// entry counts as already wrapped only when it runs one of them with
	// the user's trust policy, pin store and lockfile. Lookup is the
	// environment programs are found in (PATH).
	Gate   Gate
	Lookup func(string) (string, bool)

	// seen are the file's entries as Load reads them, by name.
	seen map[string][]Entry

	// file is the configuration file, for messages.
	file string
}

// entryEdit is the rewrite of one entry: its span in the file and the
// edits inside it.
type entryEdit struct {
	path       []string
	start, end int
	edits      []Edit
}

// Wrap rewrites the entries of one configuration file so that the host
// runs them through `etdi run` (docs/hosts.md#wrapping-host-configurations). Only the bytes of the
// values it replaces change; comments, white space, line endings and
// every other member stay as they are. An entry already running etdi run
// is left alone; one that cannot be rewritten faithfully is refused and
// left unchanged. Before it returns, Wrap reads the new text as Load
// would and makes sure that every entry still starts the same server:
// if not, it returns an error and no change.
func Wrap(path string, data []byte, o WrapOptions) (*Result, error) {
	if o.Host == "" {
		o.Host = GuessHost(path)
	}
	if err := checkWrapOptions(o); err != nil {
		return nil, err
	}
	o.Gate.Etdi = append(append([]string(nil), o.Gate.Etdi...), o.Etdi)
	o.file = path
	lo := Options{Cwd: o.Cwd, Lookup: o.Lookup, Gate: o.Gate}
	before, err := loadData(path, data, o.Host, lo)
	if err != nil {
		return nil, err
	}
	o.seen = map[string][]Entry{}
	for _, e := range before {
		o.seen[e.Name] = append(o.seen[e.Name], e)
	}
	var eds []entryEdit
	res := &Result{} // with o.Name, no outcome says the entry is not in this file
	if o.Host == Codex || strings.HasSuffix(path, ".toml") {
		eds, err = wrapCodex(data, o, res)
	} else {
		eds, err = wrapJSON(data, o, res)
	}
	if err != nil {
		return nil, err
	}
	fileEdits, err := recordEdits(data, eds, o, res)
	if err != nil {
		return nil, err
	}
	res.Data, res.Changes, err = applyChanges(data, fileEdits)
	if err != nil {
		return nil, err
	}
	if len(eds) > 0 {
		after, err := loadData(path, res.Data, o.Host, lo)
		if err != nil {
			return nil, fmt.Errorf("%s: the rewritten file would not read back (%v); nothing changed", path, err)
		}
		wrapped := map[string]bool{}
		for _, ed := range eds {
			wrapped[ed.path[len(ed.path)-1]] = true
		}
		if err := sameServers(before, after, wrapped); err != nil {
			return nil, fmt.Errorf("%s: %v; nothing changed", path, err)
		}
	}
	return res, nil
}

// checkWrapOptions refuses what Wrap cannot write into a host
// configuration: an etdi program, bundle, trust policy or pin database
// given by a path a host would read differently, or a program that is not
// an etdi the host can start.
func checkWrapOptions(o WrapOptions) error {
	if strings.Contains(o.Etdi, "${") || strings.ContainsAny(o.Etdi, "\x00\n\r") || o.Etdi == "" {
		return fmt.Errorf("etdi program path %q cannot be written into a host configuration", o.Etdi)
	}
	if o.Bundle != "" && (o.Name == "" || !writablePath(o.Bundle)) {
		return fmt.Errorf("a bundle is given for one entry (a name), by an absolute path that a host configuration can hold: %q", o.Bundle)
	}
	for _, p := range []string{o.Trust, o.Pins} {
		if p != "" && !writablePath(p) {
			return fmt.Errorf("the trust policy and pin database are given by absolute paths that a host configuration can hold: %q", p)
		}
	}
	if !IsEtdiRun(o.Etdi, []string{"run"}) {
		// An entry of another program that runs etdi is still wrapped
		// (it is known by the file), but one named etdi is what a person
		// reading the file recognizes.
		return fmt.Errorf("the etdi program %q is not named etdi (or etdi.exe); install or link it as etdi, or name one with --etdi", o.Etdi)
	}
	if fi, err := os.Stat(o.Etdi); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("the etdi program %q is not a file the host can start; give the etdi you run with --etdi PATH", o.Etdi)
	}
	return nil
}

// recordEdits returns the edits of the file that wrap the entries eds,
// each reduced to the bytes it changes, and adds a Record of each to res.
func recordEdits(data []byte, eds []entryEdit, o WrapOptions, res *Result) ([]Edit, error) {
	var fileEdits []Edit
	for _, ed := range eds {
		old := data[ed.start:ed.end]
		shifted := make([]Edit, len(ed.edits))
		for i, x := range ed.edits {
			shifted[i] = Edit{x.Start - ed.start, x.End - ed.start, x.Text}
		}
		nu, err := ApplyEdits(old, shifted)
		if err != nil {
			return nil, err
		}
		p, s := CommonEnds(old, nu)
		server := ""
		if es := o.seen[ed.path[len(ed.path)-1]]; len(es) == 1 {
			server = serverDigest(es[0])
		}
		res.Records = append(res.Records, Record{
			Path: ed.path, Prefix: p, Suffix: s,
			Original: string(old[p : len(old)-s]), Wrapped: string(nu[p : len(nu)-s]),
			WrappedSHA256: digest(nu), Server: server,
		})
		fileEdits = append(fileEdits, Edit{ed.start + p, ed.end - s, string(nu[p : len(nu)-s])})
	}
	return fileEdits, nil
}

// sameServers checks that every entry of after starts what the entry at
// the same place of before starts.
func sameServers(before, after []Entry, wrapped map[string]bool) error {
	if len(before) != len(after) {
		return fmt.Errorf("the rewritten file has %d entries instead of %d", len(after), len(before))
	}
	for i := range before {
		b, a := before[i], after[i]
		if a.Name != b.Name || a.Command != b.Command || !reflect.DeepEqual(a.Args, b.Args) || a.URL != b.URL ||
			a.Cwd != b.Cwd || !sameMap(a.Env, b.Env) || !sameMap(a.Headers, b.Headers) || a.Transport != b.Transport {
			return fmt.Errorf("rewriting entry %q would change the server the host starts", b.Name)
		}
		if wrapped[b.Name] && !a.Wrapped {
			return fmt.Errorf("entry %q would not run etdi run after rewriting", b.Name)
		}
	}
	return nil
}

// serverDigest returns the SHA-256 (hex) of what e starts, as sameServers
// compares it.
func serverDigest(e Entry) string {
	env, headers := e.Env, e.Headers
	if len(env) == 0 {
		env = nil
	}
	if len(headers) == 0 {
		headers = nil
	}
	b, _ := json.Marshal(struct {
		Command, URL, Cwd, Transport string
		Args                         []string
		Env, Headers                 map[string]string
	}{e.Command, e.URL, e.Cwd, e.Transport, e.Args, env, headers})
	return digest(b)
}

func sameMap(a, b map[string]string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func digest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// CommonEnds returns the length of the common prefix of a and b and of
// their common suffix, not overlapping the prefix: the one region a
// single edit changed.
func CommonEnds(a, b []byte) (p, s int) {
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return p, s
}

// applyChanges applies non-overlapping edits and says where each landed.
func applyChanges(data []byte, edits []Edit) ([]byte, []Change, error) {
	out, err := ApplyEdits(data, edits)
	if err != nil {
		return nil, nil, err
	}
	es := append([]Edit(nil), edits...)
	sortEdits(es)
	var ch []Change
	shift := 0
	for _, e := range es {
		ch = append(ch, Change{e.Start, e.End, e.Start + shift, e.Start + shift + len(e.Text)})
		shift += len(e.Text) - (e.End - e.Start)
	}
	return out, ch, nil
}

func sortEdits(es []Edit) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].Start < es[j-1].Start; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

// jsonString encodes s as a JSON string (also a TOML basic string).
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// serverLists returns the paths of the server lists Load reads in a JSON
// configuration of host.
func serverLists(root *Node, host, cwd string) [][]string {
	var out [][]string
	if root.Get("mcpServers") != nil {
		out = append(out, []string{"mcpServers"})
	}
	if root.Get("servers") != nil && (host == VSCode || host == "") {
		out = append(out, []string{"servers"})
	}
	if m := root.Get("mcp"); m != nil && m.Kind == '{' && (host == VSCode || host == "") && m.Get("servers") != nil {
		out = append(out, []string{"mcp", "servers"})
	}
	if root.Get("context_servers") != nil && (host == Zed || host == "") {
		out = append(out, []string{"context_servers"})
	}
	if p := root.Get("projects"); p != nil && p.Kind == '{' && cwd != "" {
		if abs, err := filepath.Abs(cwd); err == nil {
			if proj := p.Get(abs); proj != nil && proj.Kind == '{' && proj.Get("mcpServers") != nil {
				out = append(out, []string{"projects", abs, "mcpServers"})
			}
		}
	}
	return out
}

func nodeAt(root *Node, path []string) *Node {
	n := root
	for _, name := range path {
		if n = n.Get(name); n == nil {
			return nil
		}
	}
	return n
}

func text(data []byte, n *Node) string { return string(data[n.Start:n.End]) }

func wrapJSON(data []byte, o WrapOptions, res *Result) ([]entryEdit, error) {
	root, err := ParseJSONC(data)
	if err != nil {
		return nil, err
	}
	var eds []entryEdit
	host := o.Host
	if host == "" && (root.Get("servers") != nil || root.Get("mcp") != nil) {
		host = VSCode
	}
	if host == "" && root.Get("context_servers") != nil {
		host = Zed
	}
	for _, list := range serverLists(root, host, o.Cwd) {
		servers := nodeAt(root, list)
		if servers.Kind != '{' {
			continue // Load has refused the file already
		}
		for _, m := range servers.Members {
			if o.Name != "" && m.Name != o.Name {
				continue
			}
			edits, status, reason := wrapJSONEntry(data, m.Name, m.Value, host, o)
			res.Outcomes = append(res.Outcomes, Outcome{m.Name, status, reason})
			if status == StatusWrapped {
				eds = append(eds, entryEdit{path: append(append([]string(nil), list...), m.Name), start: m.Value.Start, end: m.Value.End, edits: edits})
			}
		}
	}
	return eds, nil
}

// runArgs returns the JSON (or TOML) text of the arguments that come
// before the server's own in a wrapped entry: the trust policy and pin
// database when they are not the defaults, its name, and the bundle when
// one is given.
func runArgs(name string, o WrapOptions) string {
	s := `"run"`
	if o.Trust != "" {
		s += `, "--trust", ` + jsonString(o.Trust)
	}
	if o.Pins != "" {
		s += `, "--pins", ` + jsonString(o.Pins)
	}
	s += `, "--name", ` + jsonString(name)
	if o.Bundle != "" {
		s += `, "--bundle", ` + jsonString(o.Bundle)
	}
	return s
}

// writablePath reports whether p is an absolute path a host
// configuration holds as written (no ${...} a host would expand).
func writablePath(p string) bool {
	return filepath.IsAbs(p) && !strings.Contains(p, "${") && !strings.ContainsAny(p, "\x00\n\r")
}

func refuse(format string, a ...any) ([]Edit, string, string) {
	return nil, StatusRefused, fmt.Sprintf(format, a...)
}

func wrapJSONEntry(data []byte, name string, v *Node, host string, o WrapOptions) ([]Edit, string, string) {
	if v.Kind != '{' {
		return refuse("the entry is not an object")
	}
	if edits, status, reason, done := wrapJSONRefusal(data, name, v, host, o); done {
		return edits, status, reason
	}
	obj, cmdKey := v, "command"
	if c := v.Get("command"); c != nil && c.Kind == '{' && host == Zed {
		obj, cmdKey = c, "path"
	}
	if cmd := obj.Get(cmdKey); cmd != nil {
		return wrapJSONCommand(data, name, cmd, cmdKey, obj.Get("args"), o)
	}
	return wrapJSONURL(data, name, v, host, o)
}

// wrapJSONRefusal decides, before anything is wrapped, whether the entry
// v is left alone: turned off where the host honours it, ambiguous about
// its server, or named with a placeholder. done says it decided.
func wrapJSONRefusal(data []byte, name string, v *Node, host string, o WrapOptions) (edits []Edit, status, reason string, done bool) {
	l := LaunchOf(host)
	// Turned off: left alone where the host is known to honour it;
	// wrapped like any other where the host may start it anyway.
	off := ""
	if d := v.Get("disabled"); d != nil && text(data, d) == "true" {
		off = `"disabled": true`
	} else if d := v.Get("enabled"); d != nil && text(data, d) == "false" {
		off = `"enabled": false`
	}
	if off != "" && l.DisabledFact(off) == Yes {
		return nil, StatusDisabled, fmt.Sprintf("%s does not start it (%s)", l.Name, off), true
	}
	m := members{command: v.Get("command") != nil}
	for _, mem := range v.Members {
		if slices.Contains(anyURL, mem.Name) {
			m.urls = append(m.urls, mem.Name)
			if mem.Value.Kind == '"' && mem.Value.Str == "" {
				m.empty = append(m.empty, mem.Name)
			}
		}
	}
	if t := v.Get("type"); t != nil {
		m.hasType, m.typ = true, t.Str
		if t.Kind != '"' {
			m.typ = text(data, t)
		}
	}
	if d := l.decide(m); d.ambiguous != "" {
		edits, status, reason = refuse("%s: entry %q is ambiguous for %s: %s; etdi checks and wraps only an entry whose server is established: keep either the command or the URL (and a type that agrees)", o.file, name, l.Name, d.ambiguous)
		return edits, status, reason, true
	} else if d.url != "" && m.command {
		edits, status, reason = refuse("%s: entry %q has a command and %s, and %s connects to %s and never starts the command: remove the command and its args (or the URL), then wrap it", o.file, name, d.url, l.Name, d.url)
		return edits, status, reason, true
	}
	if strings.Contains(name, "${") {
		edits, status, reason = refuse("its name %q holds a ${...} placeholder, which the host would expand in the arguments", name)
		return edits, status, reason, true
	}
	return nil, "", "", false
}

// wrapJSONCommand wraps an entry that starts the command cmd (the member
// cmdKey) with args (nil when absent): etdi run's arguments go in front
// of the server's own, which stay as written (comments included).
func wrapJSONCommand(data []byte, name string, cmd *Node, cmdKey string, args *Node, o WrapOptions) ([]Edit, string, string) {
	if cmd.Kind != '"' {
		return refuse("%s is not a string", cmdKey)
	}
	var argTexts, argStrs []string
	if args != nil {
		if args.Kind != '[' {
			return refuse("args is not an array")
		}
		for i, a := range args.Elems {
			if a.Kind != '"' {
				return refuse("args[%d] is not a string", i)
			}
			argTexts = append(argTexts, text(data, a))
			argStrs = append(argStrs, a.Str)
		}
	}
	if status, reason, ok := o.alreadyWrapped(name, cmd.Str, argStrs); ok {
		return nil, status, reason
	}
	head := runArgs(name, o) + `, "--", ` + text(data, cmd)
	edits := []Edit{{cmd.Start, cmd.End, jsonString(o.Etdi)}}
	if args != nil {
		if len(argTexts) > 0 {
			head += sep(data, args.Start+1)
		}
		edits = append(edits, Edit{args.Start + 1, args.Start + 1, head})
	} else {
		edits = append(edits, Edit{cmd.End, cmd.End, `, "args": [` + head + "]"})
	}
	return edits, StatusWrapped, ""
}

// wrapJSONURL wraps an entry of a remote server: etdi run reaches it
// with --url, and its headers move to the environment of etdi run.
func wrapJSONURL(data []byte, name string, v *Node, host string, o WrapOptions) ([]Edit, string, string) {
	var urlMember *NodeMember
	for _, key := range []string{"url", "serverUrl", "httpUrl"} {
		if m := v.Member(key); m != nil {
			if urlMember != nil {
				return refuse("it has both %s and %s", urlMember.Name, key)
			}
			urlMember = m
		}
	}
	if urlMember == nil {
		return nil, StatusSkipped, "it has neither a command nor a URL (a server an extension provides)"
	}
	if urlMember.Value.Kind != '"' {
		return refuse("%s is not a string", urlMember.Name)
	}
	var edits []Edit
	if t := v.Get("type"); t != nil {
		if t.Kind != '"' {
			return refuse("type is not a string")
		}
		switch t.Str {
		case "http", "streamable-http", "streamableHttp":
			edits = append(edits, Edit{t.Start, t.End, `"stdio"`})
		default:
			return refuse("type %q: etdi run reaches only Streamable HTTP servers", t.Str)
		}
	} else if host == Gemini && urlMember.Name == "url" {
		return refuse("Gemini CLI's url is the SSE transport, which etdi run does not speak; use httpUrl")
	}
	list := "[" + runArgs(name, o) + `, "--url", ` + text(data, urlMember.Value)
	headerArgs, headerEdit, status, reason := wrapJSONHeaders(data, v)
	if status != "" {
		return nil, status, reason
	}
	list += headerArgs
	if headerEdit != nil {
		edits = append(edits, *headerEdit)
	}
	list += "]"
	edits = append(edits, Edit{urlMember.NameStart, urlMember.Value.End, `"command": ` + jsonString(o.Etdi) + `, "args": ` + list})
	if v.Get("command") != nil || v.Get("args") != nil {
		return refuse("it has args or command next to its URL")
	}
	return edits, StatusWrapped, ""
}

// wrapJSONHeaders turns the headers of a remote entry v into --header-env
// arguments of etdi run (args) and the edit that replaces the headers
// member with an env member holding their values (nil without headers);
// a status is a refusal, with its reason.
func wrapJSONHeaders(data []byte, v *Node) (args string, edit *Edit, status, reason string) {
	h := v.Member("headers")
	if h == nil {
		return "", nil, "", ""
	}
	if h.Value.Kind != '{' {
		_, status, reason = refuse("headers is not an object")
		return "", nil, status, reason
	}
	if len(h.Value.Members) > 0 && v.Get("env") != nil {
		_, status, reason = refuse("it has both headers and env; etdi would have to merge them")
		return "", nil, status, reason
	}
	var members []string
	for i, hm := range h.Value.Members {
		if hm.Value.Kind != '"' {
			_, status, reason = refuse("headers.%s is not a string", hm.Name)
			return "", nil, status, reason
		}
		if !isHeaderName(hm.Name) {
			_, status, reason = refuse("header name %q is not a valid HTTP header name", hm.Name)
			return "", nil, status, reason
		}
		variable := fmt.Sprintf("ETDI_HEADER_%d", i+1)
		args += `, "--header-env", ` + jsonString(hm.Name+"="+variable)
		members = append(members, jsonString(variable)+": "+text(data, hm.Value))
	}
	if len(members) == 0 {
		return args, nil, "", ""
	}
	return args, &Edit{h.NameStart, h.Value.End, `"env": {` + strings.Join(members, ", ") + "}"}, "", ""
}

// isHeaderName reports an RFC 9110 token.
func isHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// alreadyWrapped decides an entry that runs command with args when it may
// be wrapped already (ok): wrapped, when it runs the user's etdi (Load
// proves it), unless a bundle is asked for that the entry does not carry
// (wrap does not add one to an existing entry: leaving it would say the
// server is checked with the bundle when it is not) or its gate uses
// another trust policy, pin store or lockfile than the user's; refused,
// when its program is named etdi but is not the user's etdi: such an
// entry imitates etdi's gate, and wrapping it would hide that.
func (o WrapOptions) alreadyWrapped(name, command string, args []string) (status, reason string, ok bool) {
	if len(args) == 0 || args[0] != "run" {
		return "", "", false
	}
	seen := o.seen[name]
	if len(seen) != 1 {
		if IsEtdiRun(command, args) {
			return StatusRefused, "it runs a program named etdi, and etdi reads no single entry of this name to tell whether that program is yours; wrap or fix it by hand", true
		}
		return "", "", false
	}
	e := seen[0]
	switch {
	case e.Imitation != "":
		return StatusRefused, e.Imitation + "; not wrapped: if that program is an etdi of yours, wrap again with --etdi naming it; if not, remove the entry (or write the server it should run in its place) and wrap again", true
	case !e.Wrapped:
		return "", "", false
	case runProblem(e) != "":
		// Arguments etdi cannot read may hide a trust policy or pin store
		// of the file's own: etdi cannot say the gate is the user's.
		return StatusRefused, "it runs your etdi, but " + runProblem(e) + ": etdi cannot tell what its gate judges by, nor what the host reaches; fix it by hand, then wrap it again", true
	case len(e.GateOverrides) > 0:
		return StatusRefused, "already wrapped, but " + e.GateOverrides[0].String() + "; etdi unwrap it, then wrap it again", true
	case o.Bundle != "" && e.Bundle != o.Bundle:
		return StatusRefused, "already wrapped without this bundle; etdi unwrap it first, then wrap it with --bundle", true
	}
	return StatusAlreadyWrapped, "", true
}

// UnwrapOptions say which entries Unwrap restores and how it knows the
// user's etdi.
type UnwrapOptions struct {
	// Host of the file; empty to guess it as Load does.
	Host string
	// Name limits Unwrap to the entry of that name.
	Name string
	// Records are what Wrap recorded of the file (may be none).
	Records []Record
	// Cwd selects Claude Code's projects[<Cwd>] entries, as in Load.
	Cwd string
	// Gate is the user's own etdi: only entries that run one of its
	// programs are unwrapped. Lookup is the environment programs are
	// found in (PATH).
	Gate   Gate
	Lookup func(string) (string, bool)
}

// place is one server entry of a file: its path, and its span (ok false
// when a Codex entry is not one [mcp_servers.NAME] table).
type place struct {
	path       []string
	start, end int
	node       *Node
	table      map[string]any
	ok         bool
}

// Unwrap restores the entries that run the user's etdi (docs/hosts.md#wrapping-host-configurations). An
// entry whose text is still exactly what Wrap wrote (o.Records) gets its
// original bytes back. Any other wrapped entry is restored from what it
// says itself: the server after "--" becomes its command and arguments
// again, and "--url URL" its URL, with the headers etdi run took from the
// entry's env; the rest of the entry, the other entries and everything
// else in the file stay as they are, so edits made since wrap are kept.
// An entry whose program is named etdi but is not the user's etdi is
// refused, never taken apart; so is one that cannot be restored
// faithfully. Before it returns, Unwrap reads the new text as Load would
// and makes sure each restored entry starts the server its etdi run
// started, and every other entry what it started before: if not, it
// returns an error and no change. The result's Records are those not
// used up.
func Unwrap(path string, data []byte, o UnwrapOptions) (*Result, error) {
	if o.Host == "" {
		o.Host = GuessHost(path)
	}
	lo := Options{Cwd: o.Cwd, Lookup: o.Lookup, Gate: o.Gate}
	before, err := loadData(path, data, o.Host, lo)
	if err != nil {
		return nil, err
	}
	seen := map[string][]Entry{}
	for _, e := range before {
		seen[e.Name] = append(seen[e.Name], e)
	}
	places, err := entryPlaces(path, data, o.Host, o.Cwd)
	if err != nil {
		return nil, err
	}
	key := func(p []string) string { return strings.Join(p, "\x00") }
	recs := map[string]Record{}
	for _, r := range o.Records {
		if len(r.Path) > 0 {
			recs[key(r.Path)] = r
		}
	}
	u := &unwrapping{data: data, host: o.Host, res: &Result{}, unwrapped: map[string]bool{}}
	res := u.res
	used := map[string]bool{}
	for _, p := range places {
		name := p.path[len(p.path)-1]
		if o.Name != "" && name != o.Name {
			continue
		}
		r, hasRec := recs[key(p.path)]
		used[key(p.path)] = true
		u.entry(p, name, seen[name], r, hasRec)
	}
	edits, unwrapped := u.edits, u.unwrapped
	for _, r := range o.Records {
		if len(r.Path) == 0 || used[key(r.Path)] {
			continue
		}
		if name := r.Path[len(r.Path)-1]; o.Name != "" && name != o.Name {
			res.Records = append(res.Records, r)
		}
		// An entry no longer in the file: nothing to restore.
	}
	res.Data, res.Changes, err = applyChanges(data, edits)
	if err != nil {
		return nil, err
	}
	if len(edits) > 0 {
		after, err := loadData(path, res.Data, o.Host, lo)
		if err != nil {
			return nil, fmt.Errorf("%s: the restored file would not read back (%v); nothing changed", path, err)
		}
		if err := sameAfterUnwrap(before, after, unwrapped); err != nil {
			return nil, fmt.Errorf("%s: %v; nothing changed", path, err)
		}
	}
	return res, nil
}

// unwrapping is an Unwrap under way: the file's text, its host, and what
// is decided so far.
type unwrapping struct {
	data      []byte
	host      string
	res       *Result
	edits     []Edit
	unwrapped map[string]bool // names of the entries restored
}

// entry unwraps the entry at p, named name, which Load reads as es; r is
// its record from Wrap when hasRec. A record not used up is kept in the
// result.
func (u *unwrapping) entry(p place, name string, es []Entry, r Record, hasRec bool) {
	keep := func() {
		if hasRec {
			u.res.Records = append(u.res.Records, r)
		}
	}
	if hasRec && p.ok && u.fromRecord(p, name, es, r) {
		return
	}
	if len(es) != 1 {
		if hasRec {
			u.res.Outcomes = append(u.res.Outcomes, Outcome{name, StatusRefused, "etdi reads no single entry of this name (a disabled entry is not read); restore it by hand"})
			keep()
		}
		return
	}
	e := es[0]
	switch {
	case e.Imitation != "":
		u.res.Outcomes = append(u.res.Outcomes, Outcome{name, StatusRefused, e.Imitation + "; etdi unwraps only entries that run your etdi (if that program is an etdi of yours, give it with --etdi)"})
		keep()
		return
	case !e.Wrapped:
		if hasRec {
			u.res.Outcomes = append(u.res.Outcomes, Outcome{name, StatusNotWrapped, "it no longer runs etdi run"})
		}
		return
	case runProblem(e) != "":
		u.res.Outcomes = append(u.res.Outcomes, Outcome{name, StatusRefused, runProblem(e) + "; restore it by hand: the server is what follows -- (or --url) in its arguments"})
		keep()
		return
	}
	var eds []Edit
	var why string
	if p.node != nil {
		eds, why = unwrapJSONEntry(u.data, p.node, u.host)
	} else if p.ok {
		eds, why = unwrapCodexEntry(u.data, p.start, p.end, p.table)
	} else {
		why = fmt.Sprintf("it is not written as one [mcp_servers.%s] table; etdi edits only that form", name)
	}
	if why != "" {
		u.res.Outcomes = append(u.res.Outcomes, Outcome{name, StatusRefused, why + "; restore it by hand: the server is what follows -- (or --url) in its arguments"})
		keep()
		return
	}
	u.edits = append(u.edits, eds...)
	reason := ""
	if hasRec && r.Server != "" && r.Server != serverDigest(e) {
		// Someone changed what the gate starts after wrap: the user
		// gets back another server than the one wrapped.
		reason = "the server it starts changed since etdi wrap (its command, arguments, URL, headers or env are not those wrapped): restored as it runs now, not as it was; check it with etdi check --config before the host starts it"
	}
	u.res.Outcomes = append(u.res.Outcomes, Outcome{name, StatusUnwrapped, reason})
	u.unwrapped[name] = true
}

// fromRecord handles an entry Wrap recorded (r): one that already has
// its original text, or is exactly as Wrap wrote it and runs the user's
// etdi, which gets its original bytes back, comments and all. It says
// whether it decided.
func (u *unwrapping) fromRecord(p place, name string, es []Entry, r Record) bool {
	cur := u.data[p.start:p.end]
	if len(cur) == r.Prefix+len(r.Original)+r.Suffix && string(cur[r.Prefix:r.Prefix+len(r.Original)]) == r.Original {
		u.res.Outcomes = append(u.res.Outcomes, Outcome{name, StatusNotWrapped, "it already has its original text"})
		return true
	}
	if len(es) == 1 && es[0].Wrapped && digest(cur) == r.WrappedSHA256 && r.Prefix+r.Suffix+len(r.Wrapped) == len(cur) {
		u.edits = append(u.edits, Edit{p.start + r.Prefix, p.end - r.Suffix, r.Original})
		u.res.Outcomes = append(u.res.Outcomes, Outcome{name, StatusUnwrapped, ""})
		u.unwrapped[name] = true
		return true
	}
	return false
}

// entryPlaces returns the server entries of a file in the order Load
// reads them.
func entryPlaces(path string, data []byte, host, cwd string) ([]place, error) {
	var out []place
	if host == Codex || strings.HasSuffix(path, ".toml") {
		var doc map[string]any
		if _, err := toml.Decode(string(data), &doc); err != nil {
			return nil, fmt.Errorf("%s: invalid TOML: %v", path, err)
		}
		servers, _ := doc["mcp_servers"].(map[string]any)
		names := make([]string, 0, len(servers))
		for n := range servers {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			t, _ := servers[n].(map[string]any)
			start, end, ok := codexTableSpan(data, n)
			out = append(out, place{path: []string{"mcp_servers", n}, start: start, end: end, table: t, ok: ok})
		}
		return out, nil
	}
	root, err := ParseJSONC(data)
	if err != nil {
		return nil, positionError(path, data, err)
	}
	if host == "" && (root.Get("servers") != nil || root.Get("mcp") != nil) {
		host = VSCode
	}
	if host == "" && root.Get("context_servers") != nil {
		host = Zed
	}
	for _, list := range serverLists(root, host, cwd) {
		servers := nodeAt(root, list)
		if servers.Kind != '{' {
			continue
		}
		for _, m := range servers.Members {
			out = append(out, place{path: append(append([]string(nil), list...), m.Name), start: m.Value.Start, end: m.Value.End, node: m.Value, ok: true})
		}
	}
	return out, nil
}

// sameAfterUnwrap checks that each restored entry of after starts the
// server its etdi run started (and no longer runs etdi), and every other
// entry what it started before.
func sameAfterUnwrap(before, after []Entry, unwrapped map[string]bool) error {
	if len(before) != len(after) {
		return fmt.Errorf("the restored file has %d entries instead of %d", len(after), len(before))
	}
	for i := range before {
		b, a := before[i], after[i]
		if a.Name != b.Name || a.Command != b.Command || !reflect.DeepEqual(a.Args, b.Args) || a.URL != b.URL ||
			a.Cwd != b.Cwd || !sameMap(a.Env, b.Env) || !sameMap(a.Headers, b.Headers) || a.Transport != b.Transport {
			return fmt.Errorf("restoring entry %q would change the server the host starts", b.Name)
		}
		if unwrapped[b.Name] && (a.Wrapped || a.Imitation != "") || !unwrapped[b.Name] && (a.Wrapped != b.Wrapped || a.Imitation != b.Imitation) {
			return fmt.Errorf("entry %q would not be what etdi unwrap says it is", b.Name)
		}
	}
	return nil
}

// urlKey is the member a host reads a Streamable HTTP server's URL from.
func urlKey(host string) string {
	switch host {
	case Gemini:
		return "httpUrl"
	case Windsurf:
		return "serverUrl"
	}
	return "url"
}

// unwrapJSONEntry returns the edits that turn a wrapped entry back into
// the server its etdi run starts, or why it cannot.
func unwrapJSONEntry(data []byte, v *Node, host string) ([]Edit, string) {
	if v.Kind != '{' {
		return nil, "the entry is not an object"
	}
	obj, cmdKey := v, "command"
	if c := v.Get("command"); c != nil && c.Kind == '{' && host == Zed {
		obj, cmdKey = c, "path"
	}
	cmdM, argsM := obj.Member(cmdKey), obj.Member("args")
	if cmdM == nil || cmdM.Value.Kind != '"' || argsM == nil || argsM.Value.Kind != '[' {
		return nil, fmt.Sprintf("its %s and args are not a string and an array", cmdKey)
	}
	args := argsM.Value
	strs := make([]string, len(args.Elems))
	for i, a := range args.Elems {
		if a.Kind != '"' {
			return nil, fmt.Sprintf("args[%d] is not a string", i)
		}
		strs[i] = a.Str
	}
	s, err := parseRun(strs)
	if err != nil {
		return nil, "its etdi run arguments: " + err.Error()
	}
	if s.dash >= 0 {
		edits := []Edit{{cmdM.Value.Start, cmdM.Value.End, text(data, args.Elems[s.dash+1])}}
		if len(args.Elems) > s.dash+2 {
			edits = append(edits, Edit{args.Elems[0].Start, args.Elems[s.dash+2].Start, ""})
		} else {
			edits = append(edits, Edit{args.Start + 1, args.End - 1, ""})
		}
		return edits, ""
	}
	if obj != v {
		return nil, "its --url is inside a command object"
	}
	return unwrapJSONURL(data, v, host, cmdM, argsM, s)
}

// unwrapJSONURL returns the edits that turn an entry wrapping a remote
// server (etdi run --url) back into the server's URL and headers, or why
// it cannot.
func unwrapJSONURL(data []byte, v *Node, host string, cmdM, argsM *NodeMember, s runSpec) ([]Edit, string) {
	envM := v.Member("env")
	members, moved, why := unwrapHeaders(data, envM, s)
	if why != "" {
		return nil, why
	}
	if len(members) > 0 && v.Get("headers") != nil {
		return nil, "it has headers of its own besides those etdi run sends"
	}
	for _, k := range []string{"url", "serverUrl", "httpUrl"} {
		if v.Get(k) != nil {
			return nil, fmt.Sprintf("it has a %s besides its etdi run", k)
		}
	}
	urlText := jsonString(urlKey(host)) + ": " + text(data, argsM.Value.Elems[s.urlIndex])
	headersText := ""
	if len(members) > 0 {
		headersText = `"headers": {` + strings.Join(members, ", ") + "}"
	}
	var edits []Edit
	if len(moved) > 0 {
		// The env member becomes the headers (and what else the env holds).
		var rest []string
		for _, m := range envM.Value.Members {
			if !moved[m.Name] {
				rest = append(rest, string(data[m.NameStart:m.Value.End]))
			}
		}
		repl := headersText
		if len(rest) > 0 {
			repl += `, "env": {` + strings.Join(rest, ", ") + "}"
		}
		edits = append(edits, Edit{envM.NameStart, envM.Value.End, repl})
	} else if headersText != "" {
		urlText += ", " + headersText
	}
	edits = append(edits, replaceCommand(v, cmdM, argsM, urlText)...)
	if t := v.Get("type"); t != nil && t.Kind == '"' && t.Str == "stdio" {
		edits = append(edits, Edit{t.Start, t.End, `"http"`})
	}
	return edits, ""
}

// unwrapHeaders returns the headers etdi run sends, as members of a
// headers object, from the entry's env (envM, nil when absent) or the
// arguments, and the env variables they were read from; or why they
// cannot be restored.
func unwrapHeaders(data []byte, envM *NodeMember, s runSpec) (members []string, moved map[string]bool, why string) {
	names := map[string]bool{}
	moved = map[string]bool{}
	for _, h := range s.headerEnv {
		var val *Node
		if envM != nil && envM.Value.Kind == '{' {
			val = envM.Value.Get(h[1])
		}
		if val == nil || val.Kind != '"' {
			return nil, nil, fmt.Sprintf("header %s comes from the environment variable %s, which the entry's env does not set, and a host configuration cannot name it for every host", h[0], h[1])
		}
		if names[strings.ToLower(h[0])] {
			return nil, nil, fmt.Sprintf("header %s is given twice", h[0])
		}
		members = append(members, jsonString(h[0])+": "+text(data, val))
		names[strings.ToLower(h[0])] = true
		moved[h[1]] = true
	}
	for _, h := range s.headers {
		if names[strings.ToLower(h[0])] {
			return nil, nil, fmt.Sprintf("header %s is given twice", h[0])
		}
		names[strings.ToLower(h[0])] = true
		members = append(members, jsonString(h[0])+": "+jsonString(h[1]))
	}
	return members, moved, ""
}

// replaceCommand returns the edits that replace the command and args
// members of v with text, wherever they stand.
func replaceCommand(v *Node, cmdM, argsM *NodeMember, text string) []Edit {
	ci, ai := memberIndex(v, cmdM), memberIndex(v, argsM)
	switch {
	case ai == ci+1:
		return []Edit{{cmdM.NameStart, argsM.Value.End, text}}
	case ci == ai+1:
		return []Edit{{argsM.NameStart, cmdM.Value.End, text}}
	}
	edits := []Edit{{cmdM.NameStart, cmdM.Value.End, text}}
	if ai > 0 {
		return append(edits, Edit{v.Members[ai-1].Value.End, argsM.Value.End, ""})
	}
	return append(edits, Edit{argsM.NameStart, v.Members[1].NameStart, ""})
}

func memberIndex(v *Node, m *NodeMember) int {
	for i := range v.Members {
		if &v.Members[i] == m {
			return i
		}
	}
	return -1
}

// unwrapCodexEntry is unwrapJSONEntry for the [mcp_servers.NAME] table
// at data[start:end] (t as the TOML decoder reads it).
func unwrapCodexEntry(data []byte, start, end int, t map[string]any) ([]Edit, string) {
	body := data[start:end]
	if bytes.Contains(body, []byte(`"""`)) || bytes.Contains(body, []byte(`'''`)) {
		return nil, "its table holds a multi-line string, which etdi does not edit"
	}
	keys, why := codexKeys(body, start)
	if why != "" {
		return nil, why
	}
	c, okc := keys["command"]
	a, oka := keys["args"]
	list, _ := t["args"].([]any)
	if !okc || !oka || len(list) != len(a.elems) {
		return nil, "its command and args are not written as `command = ...` and `args = [...]` in its table"
	}
	strs := make([]string, len(list))
	for i, x := range list {
		strs[i], _ = x.(string)
	}
	s, err := parseRun(strs)
	if err != nil {
		return nil, "its etdi run arguments: " + err.Error()
	}
	raw := func(i int) string { return string(data[a.elems[i][0]:a.elems[i][1]]) }
	if s.dash >= 0 {
		edits := []Edit{{c.start, c.end, raw(s.dash + 1)}}
		if len(a.elems) > s.dash+2 {
			edits = append(edits, Edit{a.elems[0][0], a.elems[s.dash+2][0], ""})
		} else {
			edits = append(edits, Edit{a.start + 1, a.end - 1, ""})
		}
		return edits, ""
	}
	if len(s.headerEnv) > 0 || len(s.headers) > 0 {
		return nil, "its etdi run sends headers, which etdi does not move back into a Codex entry"
	}
	if _, ok := keys["url"]; ok {
		return nil, "it has a url besides its etdi run"
	}
	urlText := "url = " + raw(s.urlIndex)
	if c.keyStart < a.keyStart && strings.TrimSpace(string(data[c.end:a.keyStart])) == "" {
		return []Edit{{c.keyStart, a.end, urlText}}, ""
	}
	return []Edit{{c.keyStart, c.end, urlText}, {a.keyStart, a.end, ""}}, ""
}

// sep is the separator written before the element at pos: a comma alone
// if the element's own white space follows, else a comma and a space.
func sep(data []byte, pos int) string {
	if pos < len(data) && strings.IndexByte(" \t\r\n", data[pos]) >= 0 {
		return ","
	}
	return ", "
}
