package pin

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/confusable"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/strictjson"
)

// copyCache answers, once per server, whether the observation is a copy
// of another server's approvals: every tool it offers is approved there
// with the same version, digest and signer (the other server may offer
// more). Only then is a tool approved there "the same server under another
// name" (docs/check.md#check-against-pins); a server that copies an approved tool and adds one
// of its own, or changes another, shadows it.
type copyCache struct {
	tx   *kvTx
	o    *Observation
	seen map[string]bool
	// copied is copiedFrom's answer per server.
	copied map[string]string
	pins   *pinScan
	// share is what sharedApproval checked during the comparison.
	share shareCache
}

func newCopyCache(tx *kvTx, o *Observation) *copyCache {
	return &copyCache{tx: tx, o: o, seen: map[string]bool{}}
}

func (c *copyCache) wholeCopyOf(server string) (bool, error) {
	if v, ok := c.seen[server]; ok {
		return v, nil
	}
	same := true
	for i := range c.o.Tools {
		t := &c.o.Tools[i]
		p, err := getItem(c.tx, server, t.Item, t.Name)
		if err != nil {
			return false, err
		}
		if p == nil || p.Digest != t.Digest.String() || p.Signer != t.Signer || p.Version != t.Version {
			same = false
			break
		}
	}
	c.seen[server] = same
	return same, nil
}

// copiedFrom returns the first tool o offers whose definition is the
// very one approved on server (the same version, digest and signer), or
// "": a server that copies one of another server's tools and changes or
// adds others is not the same server, and none of its tools of that
// server's names is a harmless collision.
func (c *copyCache) copiedFrom(server string) (string, error) {
	if c.copied == nil {
		c.copied = map[string]string{}
	}
	if v, ok := c.copied[server]; ok {
		return v, nil
	}
	out := ""
	for i := range c.o.Tools {
		t := &c.o.Tools[i]
		if t.Item != ItemTool {
			continue
		}
		p, err := getItem(c.tx, server, t.Item, t.Name)
		if err != nil {
			return "", err
		}
		if p != nil && p.Digest == t.Digest.String() && p.Signer == t.Signer && p.Version == t.Version {
			out = t.Name
			break
		}
	}
	c.copied[server] = out
	return out, nil
}

// pinScan is the names and look-alike skeletons of every pin, read from
// the pins bucket itself. Shadowing and look-alike checks of a tool never
// approved on this server consult it, not the names and skeletons
// indexes: those are derived data a local attacker could edit without
// touching a pin, and a deleted index entry must not turn impersonation
// into a new tool. It is built at most once per comparison, and only when
// a tool is new, so checking an approved server costs nothing extra.
type pinScan struct {
	servers   map[string][]string // tool name -> servers that pin it
	skeletons map[string][]string // skeleton -> distinct pinned names
}

func (c *copyCache) scan() (*pinScan, error) {
	if c.pins != nil {
		return c.pins, nil
	}
	ps := &pinScan{servers: map[string][]string{}, skeletons: map[string][]string{}}
	cur := c.tx.Bucket(bPins).Cursor()
	for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			return nil, damagedError("pin key", k, errors.New("no server/tool separator"))
		}
		server, name := string(k[:i]), string(k[i+1:])
		if strings.HasPrefix(name, "\x01") {
			continue // a prompt, resource or resource template: not a tool name
		}
		if _, seen := ps.servers[name]; !seen {
			sk := skeletonOf(name)
			ps.skeletons[sk] = append(ps.skeletons[sk], name)
		}
		ps.servers[name] = append(ps.servers[name], server)
	}
	c.pins = ps
	return ps, nil
}

// sameArtifact returns the definition approved on another unsigned
// server's pin p that was approved served by the artifact that serves o
// now, when etdi verified that artifact itself (ServedVerified) and t is
// another definition of the tool (none of p's definitions has its
// digest): then o is the same package under another configuration name,
// and t is a change of the tool approved there, not another server's
// tool. nil otherwise.
func sameArtifact(o *Observation, t *Observed, p *Pin) *Pin {
	if !o.ServedVerified || !strings.HasPrefix(o.Server, "unsigned:") || !strings.HasPrefix(p.Server, "unsigned:") || t.Signer != Unsigned {
		return nil
	}
	id, ok := ArtifactIdentity(o.Served)
	if !ok {
		return nil
	}
	var found *Pin
	for _, v := range p.All() {
		if v.Digest == t.Digest.String() {
			return nil
		}
		if sameServed(&v, o, id) && v.Signer == Unsigned {
			found = &v
		}
	}
	return found
}

// rugPullOfShared is the finding of a definition t of the artifact that
// served v, the definition approved on another configuration name of
// it (sameArtifact): a rug pull of that tool, shown against v, which
// approving the tool by name under this name resolves.
func rugPullOfShared(o *Observation, t *Observed, p, v *Pin, st ToolState,
	with func(finding.Kind, finding.Severity, string) finding.Finding, ref string) (ToolState, []finding.Finding, error) {
	st.Status = StatusChanged
	f := with(finding.RugPull, finding.Error, "")
	f.PinnedVersion, f.PinnedDigest, f.PinnedSigner = v.Version, v.Digest, v.Signer.String()
	if old, err := strictjson.Parse(v.Definition); err == nil {
		if cur, err := strictjson.Parse(t.Canonical); err == nil {
			f.Changes = etdi.Diff(old, cur)
			f.Fields = etdi.ChangedFields(f.Changes)
		}
	}
	f.PermissionsAdded, f.PermissionsRemoved = PermissionDiff(v.Permissions, t.Permissions)
	f.Servers = []string{p.Server}
	f.Message = fmt.Sprintf("unsigned tool %s: definition differs from the one approved on %s, served by the same artifact %s (%s); "+
		"it is the same package under another name: if the change is expected, approve it here by name: etdi pin approve --tool %s (with the inputs of this check)",
		ref, p.Server, o.Served, strings.Join(f.Fields, ", "), termtext.ShellQuote(t.Name))
	return st, []finding.Finding{f}, nil
}

// maxCollisionText bounds the text of a definition compared for a name
// collision; a definition with more is not taken for a harmless one.
const maxCollisionText = 256 << 10

// collisionRefused says why a tool t offered by o under a name approved
// on the other server srv (pin p) is not a harmless name collision but
// shadows that tool, or "" when it is one (docs/check.md#check-against-pins): both servers
// unsigned, and nothing in t's definition names srv next to the tool or
// as a server, names another of srv's tools, copies the description of
// srv's tool, or claims to be the official or genuine one.
func collisionRefused(o *Observation, t *Observed, srv string, p *Pin, copies *copyCache) (string, error) {
	scan, err := copies.scan()
	if err != nil {
		return "", err
	}
	if why := collisionWhy(o, t, srv, p, scan); why != "" {
		return why, nil
	}
	n, err := copies.copiedFrom(srv)
	if err != nil || n == "" {
		return "", err
	}
	return fmt.Sprintf("this server copies %s's tool %q, and is not that server", srv, n), nil
}

func collisionWhy(o *Observation, t *Observed, srv string, p *Pin, scan *pinScan) string {
	if !strings.HasPrefix(o.Server, "unsigned:") || t.Signer != Unsigned {
		return fmt.Sprintf("this server's %q is not an unsigned server's tool (signer %s)", t.Name, t.Signer)
	}
	for _, v := range p.All() {
		if !strings.HasPrefix(srv, "unsigned:") || v.Signer != Unsigned {
			return fmt.Sprintf("%s's %q is signed by %s, and this server's is not signed by that provider", srv, t.Name, v.Signer)
		}
	}
	for _, v := range p.All() {
		if v.Digest == t.Digest.String() {
			return fmt.Sprintf("its definition is the very one approved on %s, and the rest of this server is not", srv)
		}
	}
	def, err := strictjson.Parse(t.Canonical)
	if err != nil {
		return "its definition cannot be read to compare"
	}
	text, over := definitionText(def)
	if over {
		return fmt.Sprintf("its definition holds more than %d KiB of text, more than etdi compares", maxCollisionText>>10)
	}
	if why := imitationWhy(text, "its description", "its definition", o, t, srv, p, scan); why != "" {
		return why
	}
	// The server's instructions reach the model beside the tool.
	if o.InstructionsKnown && o.Instructions != nil {
		instr := *o.Instructions
		if len(instr) > maxCollisionText {
			return fmt.Sprintf("its instructions hold more than %d KiB of text, more than etdi compares", maxCollisionText>>10)
		}
		return imitationWhy(instr, "its server's instructions", "its instructions", o, t, srv, p, scan)
	}
	return ""
}

// imitationWhy says how text (a tool's definition, or its server's
// instructions: what and whose name it in the reason) names or imitates
// the tool of t's name approved on srv (pin p), or "".
func imitationWhy(text, what, whose string, o *Observation, t *Observed, srv string, p *Pin, scan *pinScan) string {
	words := " " + strings.Join(wordsOf(text), " ") + " "
	letters := strings.ReplaceAll(words, " ", "")
	// A copy of the other tool's description, or one with more after it.
	for _, v := range p.All() {
		if od, err := strictjson.Parse(v.Definition); err == nil {
			if d := od.Get("description"); d != nil && d.Kind == strictjson.String {
				n := strings.Join(wordsOf(d.Str), "")
				if len(n) >= 16 && strings.Contains(letters, n) {
					return fmt.Sprintf("%s copies the description of %q on %s", what, t.Name, srv)
				}
			}
		}
	}
	// The other server named next to the tool or as a server.
	name := strings.Join(wordsOf(strings.TrimPrefix(srv, "unsigned:")), " ")
	tool := strings.Join(wordsOf(t.Name), " ")
	if name != "" {
		for _, pat := range []string{name + " " + tool, name + " server", name + " mcp", name + " s " + tool} {
			if strings.Contains(words, " "+pat+" ") {
				return fmt.Sprintf("%s names %s's tool (%q)", whose, srv, pat)
			}
		}
	}
	// Another tool of the other server, by a name no common word has.
	offered := map[string]bool{}
	for _, ot := range o.Tools {
		offered[ot.Name] = true
	}
	for n, srvs := range scan.servers {
		if n == t.Name || offered[n] || !slices.Contains(srvs, srv) || !distinctiveName(n) {
			continue
		}
		if strings.Contains(words, " "+strings.Join(wordsOf(n), " ")+" ") {
			return fmt.Sprintf("%s names %q, a tool of %s", whose, n, srv)
		}
	}
	for _, mark := range imitationMarks {
		if whose == "its instructions" && (mark == "official" || mark == "genuine" || mark == "authentic") {
			continue // how a server describes itself, not a claim on another's tool
		}
		if strings.Contains(words, " "+mark+" ") {
			return fmt.Sprintf("%s says %q, as a tool standing in for another does", whose, mark)
		}
	}
	return ""
}

// imitationMarks are what the definition of a tool that claims to be
// (or to replace) another server's tool of the same name says, as
// wordsOf reads it.
var imitationMarks = []string{"official", "genuine", "authentic", "the real", "the original", "instead of the", "rather than the",
	"supersedes", "overrides the", "replaces the", "use this one", "use this tool instead", "other server", "other tool",
	"same name", "always use this"}

// definitionText is every string of a definition but its top-level name,
// one per line, and whether it holds more than maxCollisionText bytes.
func definitionText(def *strictjson.Value) (string, bool) {
	var b strings.Builder
	var walk func(v *strictjson.Value, top bool)
	walk = func(v *strictjson.Value, top bool) {
		if b.Len() > maxCollisionText {
			return
		}
		switch v.Kind {
		case strictjson.String:
			b.WriteString(v.Str)
			b.WriteByte('\n')
		case strictjson.Array:
			for _, e := range v.Elems {
				walk(e, false)
			}
		case strictjson.Object:
			for _, m := range v.Members {
				if top && m.Name == "name" {
					continue
				}
				walk(m.Value, false)
			}
		}
	}
	walk(def, true)
	return b.String(), b.Len() > maxCollisionText
}

// wordsOf is s as a person reads it, in words: look-alike letters and
// invisible characters folded (confusable.Skeleton), lower case, split at
// everything but letters and digits ("memory/search", "mcp__memory__search"
// and "Memory Search" read alike).
func wordsOf(s string) []string {
	sk := strings.ToLower(confusable.Skeleton(strings.ToLower(s)))
	return strings.FieldsFunc(sk, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// distinctiveName says whether a tool name is one no common word has:
// it holds '_', '-' or '.', a lower-case letter followed by an upper-case
// one, or at least 8 characters (as internal/suspect reads names).
func distinctiveName(n string) bool {
	if strings.ContainsAny(n, "_-.") || len(n) >= 8 {
		return true
	}
	prev := rune(0)
	for _, r := range n {
		if unicode.IsLower(prev) && unicode.IsUpper(r) {
			return true
		}
		prev = r
	}
	return false
}
