package hostconfig

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
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
// runs them through `etdi run` (SPEC.md §24). Only the bytes of the
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
	if strings.Contains(o.Etdi, "${") || strings.ContainsAny(o.Etdi, "\x00\n\r") || o.Etdi == "" {
		return nil, fmt.Errorf("etdi program path %q cannot be written into a host configuration", o.Etdi)
	}
	if o.Bundle != "" && (o.Name == "" || !writablePath(o.Bundle)) {
		return nil, fmt.Errorf("a bundle is given for one entry (a name), by an absolute path that a host configuration can hold: %q", o.Bundle)
	}
	for _, p := range []string{o.Trust, o.Pins} {
		if p != "" && !writablePath(p) {
			return nil, fmt.Errorf("the trust policy and pin database are given by absolute paths that a host configuration can hold: %q", p)
		}
	}
	if !IsEtdiRun(o.Etdi, []string{"run"}) {
		// etdi check, unwrap and wrap itself know a wrapped entry by its
		// program's name: under another name it would read as a server of
		// its own.
		return nil, fmt.Errorf("the etdi program %q is not named etdi (or etdi.exe): a wrapped entry is known by that name; install or link it as etdi, or name one with --etdi", o.Etdi)
	}
	o.file = path
	lo := Options{Cwd: o.Cwd}
	before, err := loadData(path, data, o.Host, lo)
	if err != nil {
		return nil, err
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
		p, s := commonEnds(old, nu)
		res.Records = append(res.Records, Record{
			Path: ed.path, Prefix: p, Suffix: s,
			Original: string(old[p : len(old)-s]), Wrapped: string(nu[p : len(nu)-s]),
			WrappedSHA256: digest(nu),
		})
		fileEdits = append(fileEdits, Edit{ed.start + p, ed.end - s, string(nu[p : len(nu)-s])})
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

// commonEnds returns the length of the common prefix of a and b and of
// their common suffix, not overlapping the prefix.
func commonEnds(a, b []byte) (p, s int) {
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
	etdiPath := o.Etdi
	if v.Kind != '{' {
		return refuse("the entry is not an object")
	}
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
		return nil, StatusDisabled, fmt.Sprintf("%s does not start it (%s)", l.Name, off)
	}
	m := members{command: v.Get("command") != nil}
	for _, mem := range v.Members {
		if slices.Contains(anyURL, mem.Name) {
			m.urls = append(m.urls, mem.Name)
		}
	}
	if t := v.Get("type"); t != nil {
		m.hasType, m.typ = true, t.Str
		if t.Kind != '"' {
			m.typ = text(data, t)
		}
	}
	if d := l.decide(m); d.ambiguous != "" {
		return refuse("%s: entry %q is ambiguous for %s: %s; etdi checks and wraps only an entry whose server is established: keep either the command or the URL (and a type that agrees)", o.file, name, l.Name, d.ambiguous)
	} else if d.url != "" && m.command {
		return refuse("%s: entry %q has a command and %s, and %s connects to %s and never starts the command: remove the command and its args (or the URL), then wrap it", o.file, name, d.url, l.Name, d.url)
	}
	if strings.Contains(name, "${") {
		return refuse("its name %q holds a ${...} placeholder, which the host would expand in the arguments", name)
	}
	obj, cmdKey := v, "command"
	if c := v.Get("command"); c != nil && c.Kind == '{' && host == Zed {
		obj, cmdKey = c, "path"
	}
	cmd := obj.Get(cmdKey)
	args := obj.Get("args")
	if cmd != nil {
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
		if IsEtdiRun(cmd.Str, argStrs) {
			return alreadyWrapped(argStrs, o.Bundle)
		}
		// etdi run's arguments go in front of the server's own, which
		// stay as written (comments included).
		head := runArgs(name, o) + `, "--", ` + text(data, cmd)
		edits := []Edit{{cmd.Start, cmd.End, jsonString(etdiPath)}}
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
	// A remote server: etdi run reaches it with --url.
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
	envText := ""
	if h := v.Member("headers"); h != nil {
		if h.Value.Kind != '{' {
			return refuse("headers is not an object")
		}
		if len(h.Value.Members) > 0 && v.Get("env") != nil {
			return refuse("it has both headers and env; etdi would have to merge them")
		}
		var members []string
		for i, hm := range h.Value.Members {
			if hm.Value.Kind != '"' {
				return refuse("headers.%s is not a string", hm.Name)
			}
			if !isHeaderName(hm.Name) {
				return refuse("header name %q is not a valid HTTP header name", hm.Name)
			}
			variable := fmt.Sprintf("ETDI_HEADER_%d", i+1)
			list += `, "--header-env", ` + jsonString(hm.Name+"="+variable)
			members = append(members, jsonString(variable)+": "+text(data, hm.Value))
		}
		if len(members) > 0 {
			envText = `"env": {` + strings.Join(members, ", ") + "}"
			edits = append(edits, Edit{h.NameStart, h.Value.End, envText})
		}
	}
	list += "]"
	edits = append(edits, Edit{urlMember.NameStart, urlMember.Value.End, `"command": ` + jsonString(etdiPath) + `, "args": ` + list})
	if v.Get("command") != nil || v.Get("args") != nil {
		return refuse("it has args or command next to its URL")
	}
	return edits, StatusWrapped, ""
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

// Unwrap restores the entries Wrap rewrote, using its records: an entry
// whose text is still exactly what Wrap wrote gets its original bytes
// back; one that changed since is refused and left as it is; one that is
// back to its original text already needs nothing. With name, only that
// entry is restored. Entries running etdi run without a record are
// reported as refused (their original text is not known). The result's
// Records are those not used up.
func Unwrap(path string, data []byte, host string, recs []Record, name string) (*Result, error) {
	if host == "" {
		host = GuessHost(path)
	}
	toml := host == Codex || strings.HasSuffix(path, ".toml")
	var root *Node
	if !toml {
		var err error
		if root, err = ParseJSONC(data); err != nil {
			return nil, positionError(path, data, err)
		}
	}
	res := &Result{}
	var edits []Edit
	recorded := map[string]bool{}
	for _, r := range recs {
		if len(r.Path) == 0 {
			continue
		}
		ename := r.Path[len(r.Path)-1]
		if name != "" && ename != name {
			res.Records = append(res.Records, r)
			continue
		}
		recorded[ename] = true
		var start, end int
		ok := false
		if toml {
			start, end, ok = codexTableSpan(data, ename)
		} else if n := nodeAt(root, r.Path); n != nil {
			start, end, ok = n.Start, n.End, true
		}
		if !ok {
			res.Outcomes = append(res.Outcomes, Outcome{ename, StatusRefused, "the entry is no longer in the file; its record is kept"})
			res.Records = append(res.Records, r)
			continue
		}
		cur := data[start:end]
		if digest(cur) != r.WrappedSHA256 || r.Prefix+r.Suffix+len(r.Wrapped) != len(cur) {
			if len(cur) == r.Prefix+len(r.Original)+r.Suffix && string(cur[r.Prefix:r.Prefix+len(r.Original)]) == r.Original {
				res.Outcomes = append(res.Outcomes, Outcome{ename, StatusNotWrapped, "it already has its original text"})
				continue
			}
			res.Outcomes = append(res.Outcomes, Outcome{ename, StatusRefused, "the entry changed since etdi wrap wrote it; restore it by hand (see the .etdi-backup file)"})
			res.Records = append(res.Records, r)
			continue
		}
		edits = append(edits, Edit{start + r.Prefix, end - r.Suffix, r.Original})
		res.Outcomes = append(res.Outcomes, Outcome{ename, StatusUnwrapped, ""})
	}
	// Wrapped entries etdi has no record of.
	if es, err := loadData(path, data, host, Options{}); err == nil {
		for _, e := range es {
			if e.Wrapped && !recorded[e.Name] && (name == "" || e.Name == name) {
				res.Outcomes = append(res.Outcomes, Outcome{e.Name, StatusRefused, "it runs etdi run, but etdi has no record of its original text (restore it from the .etdi-backup file)"})
			}
		}
	}
	var err error
	res.Data, res.Changes, err = applyChanges(data, edits)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// sep is the separator written before the element at pos: a comma alone
// if the element's own white space follows, else a comma and a space.
func sep(data []byte, pos int) string {
	if pos < len(data) && strings.IndexByte(" \t\r\n", data[pos]) >= 0 {
		return ","
	}
	return ", "
}
