// Package lockfile is etdi's team lockfile (docs/fleets.md#team-lockfile): the approvals
// of a pin database as one canonical, line-diffable JSON file that a team
// commits, reviews in pull requests and checks against in CI.
//
// [Export] writes what a pin database approved and revoked, [Parse] reads
// a lockfile strictly (it is untrusted input: a pull request can change
// it), [File.Sign] and [File.Verify] add and check a signature of the
// audit key, and [Import] loads a lockfile into a pin database with one
// history record per approval. [Temporary] loads one into a private,
// temporary database, which a read-only check compares with and then
// removes.
//
// The package uses only the public API of package pin.
package lockfile

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/strictjson"
	"golang.org/x/mod/sumdb/note"
)

// Version is the lockfile format version, the value of "etdiLock".
const Version = 1

// Limits of a lockfile, beyond those of the JSON profile (SPEC.md §2).
const (
	// MaxBytes is the largest lockfile read, as for a manifest.
	MaxBytes = etdi.MaxManifestSize
	// MaxPins, MaxServers and MaxRevocations bound the entries.
	MaxPins        = 50_000
	MaxServers     = 10_000
	MaxRevocations = 10_000
	// MaxSignature bounds the signed note of "signature".
	MaxSignature = 16 << 10
	// maxName bounds a tool name, a resource URI or a template; maxText
	// a server name, provider id, signer id or "served".
	maxName = 4096
	maxText = 1024
)

// File is a parsed or exported lockfile.
type File struct {
	// Servers are the servers with at least one pin, by key.
	Servers []ServerEntry
	// Pins are the approvals, by server, item kind and name.
	Pins []Pin
	// Revocations are the revocations, keys first, then by server, tool
	// and version.
	Revocations []Revocation
	// Generation numbers the signed lockfiles of one audit key: a check
	// with the key refuses a generation lower than the highest it
	// accepted (Accept). Expires is when the lockfile stops being
	// accepted. Sign needs both; an unsigned lockfile has neither (zero).
	Generation uint64
	Expires    time.Time
	// Signature is the signed note of "signature" (Sign), "" when the
	// lockfile is unsigned.
	Signature string
}

// ServerEntry is what the lockfile says about one server besides its pins.
type ServerEntry struct {
	// Key is the server key (pin.SignedServerKey, pin.UnsignedServerKey).
	Key      string
	Name     string
	Provider string
	// InstructionsKnown says whether the server's instructions were
	// approved (seen live at approval); Instructions are those approved,
	// nil when the server sent none.
	InstructionsKnown bool
	Instructions      *string
}

// Pin is one approved tool, prompt, resource or resource template.
type Pin struct {
	Server string
	// Item is the item kind, pin.ItemTool ("") for a tool.
	Item string
	// Tool is the tool's or prompt's name, the resource's URI or the
	// template's URI template.
	Tool        string
	Version     string
	Digest      string
	Signer      pin.SignerID
	Provider    string
	Permissions []etdi.Permission
	// Scopes are the scopes the approver gave an unsigned tool
	// (pin.Pin.Scopes), sorted, each once.
	Scopes []string
	// Sequence is the bundle sequence at approval (0 if unsigned).
	Sequence uint64
	// Served is what served the item at approval (pin.Pin.Served).
	Served string
	// Definition is the approved definition in RFC 8785 form; its
	// SHA-256 is Digest.
	Definition []byte
}

// Ref is "server/tool" ("server/prompt:name" for other items).
func (p *Pin) Ref() string { return p.Server + "/" + pin.ItemRef(p.Item, p.Tool) }

// Revocation withdraws an approval: of a tool (every version), of one
// version, or of every tool a key signed (KeyID).
type Revocation struct {
	Server, Tool, Version string
	KeyID                 string
	Reason                string
}

// Target names what r revokes, as pin revoke takes it.
func (r *Revocation) Target() string {
	return (&pin.Revocation{Server: r.Server, Tool: r.Tool, Version: r.Version, KeyID: r.KeyID}).Target()
}

// VerifyError reports a lockfile whose content does not verify: a
// signature that is missing (when a key is required), malformed, made by
// another key or over other content, or a definition that does not have
// its digest. It is never an operational error: a check fails closed.
type VerifyError struct{ Msg string }

func (e *VerifyError) Error() string { return e.Msg }

// ErrUnsigned is the [VerifyError] of an unsigned lockfile checked with a
// key.
var ErrUnsigned = &VerifyError{"the lockfile is not signed, and a signature is required (--lock-key)"}

// pinCompare orders pins by server, item kind and name.
func pinCompare(a, b *Pin) int {
	return cmp.Or(strings.Compare(a.Server, b.Server), strings.Compare(a.Item, b.Item), strings.Compare(a.Tool, b.Tool))
}

func revocationCompare(a, b *Revocation) int {
	return cmp.Or(strings.Compare(a.KeyID, b.KeyID), strings.Compare(a.Server, b.Server),
		strings.Compare(a.Tool, b.Tool), strings.Compare(a.Version, b.Version))
}

// sort puts every list of f in its canonical order.
func (f *File) sort() {
	slices.SortFunc(f.Servers, func(a, b ServerEntry) int { return strings.Compare(a.Key, b.Key) })
	slices.SortFunc(f.Pins, func(a, b Pin) int { return pinCompare(&a, &b) })
	slices.SortFunc(f.Revocations, func(a, b Revocation) int {
		// Key revocations (KeyID set) first, as "" sorts first otherwise.
		if (a.KeyID == "") != (b.KeyID == "") {
			if a.KeyID != "" {
				return -1
			}
			return 1
		}
		return revocationCompare(&a, &b)
	})
}

func str(s string) *strictjson.Value { return &strictjson.Value{Kind: strictjson.String, Str: s} }

func num(n uint64) *strictjson.Value {
	return &strictjson.Value{Kind: strictjson.Number, Num: float64(n)}
}

func object(ms ...strictjson.Member) *strictjson.Value {
	return &strictjson.Value{Kind: strictjson.Object, Members: ms}
}

// member is a member of an object under construction; optional members
// with a nil value are left out.
func member(name string, v *strictjson.Value) strictjson.Member {
	return strictjson.Member{Name: name, Value: v}
}

func optStr(s string) *strictjson.Value {
	if s == "" {
		return nil
	}
	return str(s)
}

func compact(ms []strictjson.Member) []strictjson.Member {
	return slices.DeleteFunc(ms, func(m strictjson.Member) bool { return m.Value == nil })
}

// value is the JSON document of f, without "signature" when unsigned is
// set.
func (f *File) value(unsigned bool) (*strictjson.Value, error) {
	g := *f
	g.Servers, g.Pins, g.Revocations = slices.Clone(f.Servers), slices.Clone(f.Pins), slices.Clone(f.Revocations)
	g.sort()
	servers := &strictjson.Value{Kind: strictjson.Array, Elems: []*strictjson.Value{}}
	for _, s := range g.Servers {
		ms := []strictjson.Member{member("server", str(s.Key)), member("name", str(s.Name)), member("provider", optStr(s.Provider))}
		if s.InstructionsKnown {
			ms = append(ms, member("instructionsKnown", &strictjson.Value{Kind: strictjson.Bool, Bool: true}))
			if s.Instructions != nil {
				ms = append(ms, member("instructions", str(*s.Instructions)))
			}
		}
		servers.Elems = append(servers.Elems, object(compact(ms)...))
	}
	pins := &strictjson.Value{Kind: strictjson.Array, Elems: []*strictjson.Value{}}
	for _, p := range g.Pins {
		def, err := strictjson.Parse(p.Definition)
		if err != nil {
			return nil, fmt.Errorf("pin %s: definition: %w", p.Ref(), err)
		}
		perms := &strictjson.Value{Kind: strictjson.Array, Elems: []*strictjson.Value{}}
		for _, q := range p.Permissions {
			perms.Elems = append(perms.Elems, object(compact([]strictjson.Member{member("scope", str(q.Scope)), member("description", optStr(q.Description))})...))
		}
		ms := []strictjson.Member{member("server", str(p.Server)), member("item", optStr(p.Item)), member("tool", str(p.Tool)),
			member("version", optStr(p.Version)), member("digest", str(p.Digest)),
			member("signer", object(compact([]strictjson.Member{member("kind", str(p.Signer.Kind)), member("id", optStr(p.Signer.ID))})...)),
			member("provider", optStr(p.Provider)), member("permissions", perms), member("definition", def),
			member("served", optStr(p.Served))}
		if p.Sequence > 0 {
			ms = append(ms, member("sequence", num(p.Sequence)))
		}
		if len(p.Scopes) > 0 {
			scopes := &strictjson.Value{Kind: strictjson.Array}
			for _, sc := range p.Scopes {
				scopes.Elems = append(scopes.Elems, str(sc))
			}
			ms = append(ms, member("scopes", scopes))
		}
		pins.Elems = append(pins.Elems, object(compact(ms)...))
	}
	revs := &strictjson.Value{Kind: strictjson.Array, Elems: []*strictjson.Value{}}
	for _, r := range g.Revocations {
		revs.Elems = append(revs.Elems, object(compact([]strictjson.Member{member("keyId", optStr(r.KeyID)), member("server", optStr(r.Server)),
			member("tool", optStr(r.Tool)), member("version", optStr(r.Version)), member("reason", optStr(r.Reason))})...))
	}
	ms := []strictjson.Member{member("etdiLock", num(Version)), member("servers", servers), member("pins", pins), member("revocations", revs)}
	if f.Generation > 0 {
		ms = append(ms, member("generation", num(f.Generation)))
	}
	if !f.Expires.IsZero() {
		ms = append(ms, member("expires", str(f.Expires.UTC().Format(time.RFC3339))))
	}
	if !unsigned && f.Signature != "" {
		ms = append(ms, member("signature", str(f.Signature)))
	}
	return object(ms...), nil
}

// Marshal returns the canonical form of f (docs/fleets.md#team-lockfile): RFC 8785 member
// order and string and number forms, indented by two spaces, one member
// or element per line, a final newline; lists in their canonical order.
// Two files with the same content have the same bytes, and a changed
// description is a one-line change. What Marshal returns parses.
func (f *File) Marshal() ([]byte, error) {
	out, err := f.marshal(false)
	if err != nil {
		return nil, err
	}
	if _, err := Parse(out); err != nil {
		return nil, fmt.Errorf("the lockfile would not read back: %w", err)
	}
	return out, nil
}

func (f *File) marshal(unsigned bool) ([]byte, error) {
	v, err := f.value(unsigned)
	if err != nil {
		return nil, err
	}
	// Sorted members: through the canonical form, whose parse keeps them
	// in that order.
	c, err := strictjson.Parse(strictjson.AppendCanonical(nil, v))
	if err != nil {
		return nil, err
	}
	return append(strictjson.AppendIndent(nil, c, "", "  "), '\n'), nil
}

// contentDigest is the SHA-256 of f's canonical form without its
// signature: what the signature covers, generation and expiry included.
func (f *File) contentDigest() (string, error) {
	b, err := f.marshal(true)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// signedText is the text of the note that signs f: the format, the
// generation and the expiry (when set), and the SHA-256 of f's canonical
// form without its signature.
func (f *File) signedText() (string, error) {
	d, err := f.contentDigest()
	if err != nil {
		return "", err
	}
	text := fmt.Sprintf("etdi lockfile %d\n", Version)
	if f.Generation > 0 {
		text += fmt.Sprintf("generation %d\n", f.Generation)
	}
	if !f.Expires.IsZero() {
		text += "expires " + f.Expires.UTC().Format(time.RFC3339) + "\n"
	}
	return text + d + "\n", nil
}

// MaxGeneration is the highest generation: integers beyond 2^53 are not
// read (SPEC.md §2).
const MaxGeneration = 1<<53 - 1

// checkSignable refuses a lockfile to sign or accept without the
// generation and expiry that let a check refuse an older or stale one.
func (f *File) checkSignable() error {
	switch {
	case f.Generation == 0 || f.Generation > MaxGeneration:
		return fmt.Errorf("a signed lockfile needs a generation from 1 to %d", uint64(MaxGeneration))
	case f.Expires.IsZero():
		return errors.New("a signed lockfile needs an expiry")
	case f.Expires.Truncate(time.Second) != f.Expires:
		return errors.New("a lockfile's expiry is in whole seconds")
	}
	return nil
}

// Sign signs f with signer (the audit key), replacing any signature: the
// note's text names f's generation and expiry, which f must have, and
// the SHA-256 of f's canonical form without its signature, so the
// signature covers the content, not its formatting. Ed25519 signatures
// are deterministic: signing the same content again gives the same file.
func (f *File) Sign(signer note.Signer) error {
	if err := f.checkSignable(); err != nil {
		return err
	}
	text, err := f.signedText()
	if err != nil {
		return err
	}
	msg, err := note.Sign(&note.Note{Text: text}, signer)
	if err != nil {
		return err
	}
	f.Signature = string(msg)
	return nil
}

// Verify checks f's signature with the given verifier keys: one of them
// must have signed it, no signature of a given key may fail, the signed
// text must name f's content, and f must carry a generation and an
// expiry (which the text names). An unsigned f is [ErrUnsigned]. Every
// failure is a [*VerifyError]. Verify does not look at the time: Accept
// refuses an expired lockfile and an older generation.
func (f *File) Verify(keys ...note.Verifier) error {
	_, err := f.verify(keys)
	return err
}

// verify is Verify, returning the names ("name+hash") of the given keys
// whose signatures verified.
func (f *File) verify(keys []note.Verifier) ([]string, error) {
	if f.Signature == "" {
		return nil, ErrUnsigned
	}
	if len(keys) == 0 {
		return nil, &VerifyError{"no key to verify the lockfile's signature with"}
	}
	// The same key given twice is one key (note refuses an ambiguous list).
	var list []note.Verifier
	for _, k := range keys {
		if !slices.ContainsFunc(list, func(o note.Verifier) bool { return o.Name() == k.Name() && o.KeyHash() == k.KeyHash() }) {
			list = append(list, k)
		}
	}
	n, err := note.Open([]byte(f.Signature), note.VerifierList(list...))
	if err != nil {
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		switch {
		case errors.As(err, &unverified):
			var by []string
			for _, s := range unverified.Note.UnverifiedSigs {
				by = append(by, fmt.Sprintf("%s+%08x", s.Name, s.Hash))
			}
			return nil, &VerifyError{fmt.Sprintf("the lockfile is signed by %s, none of the keys given", strings.Join(by, ", "))}
		case errors.As(err, &invalid):
			return nil, &VerifyError{fmt.Sprintf("the lockfile's signature by %s+%08x does not verify: it was made over other content or altered", invalid.Name, invalid.Hash)}
		}
		return nil, &VerifyError{"the lockfile's signature is not a signed note: " + err.Error()}
	}
	want, err := f.signedText()
	if err != nil {
		return nil, err
	}
	if n.Text != want {
		got := strings.TrimSpace(n.Text)
		if len(got) > 200 {
			got = got[:200] + "..."
		}
		return nil, &VerifyError{fmt.Sprintf("the lockfile's signature is valid but signs other content (%q), not this lockfile (%q): "+
			"the lockfile was changed after it was signed", got, strings.TrimSpace(want))}
	}
	if err := f.checkSignable(); err != nil {
		return nil, &VerifyError{"the lockfile is signed without a generation and an expiry, so an older copy could be replayed (" + err.Error() +
			"): write it again with etdi pin export --sign"}
	}
	var by []string
	for _, s := range n.Sigs {
		by = append(by, fmt.Sprintf("%s+%08x", s.Name, s.Hash))
	}
	return by, nil
}

// Parse reads a lockfile strictly: the JSON profile of SPEC.md §2 (no
// duplicate member names, nothing after the value), no unknown member
// outside a definition, every entry valid and listed once, every
// definition with its digest, and the limits of this package. Key order,
// whitespace and the order of the entries do not count.
func Parse(data []byte) (*File, error) {
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("lockfile larger than %d bytes", MaxBytes)
	}
	v, err := strictjson.Parse(data)
	if err != nil {
		return nil, err
	}
	root, err := strictjson.Root(v).Object()
	if err != nil {
		return nil, err
	}
	if err := root.Only("etdiLock", "servers", "pins", "revocations", "generation", "expires", "signature"); err != nil {
		return nil, err
	}
	f, err := parseHeader(root)
	if err != nil {
		return nil, err
	}
	servers, byKey, err := f.parseServers(root.Field("servers"))
	if err != nil {
		return nil, err
	}
	seen, err := f.parsePins(root.Field("pins"), servers, byKey)
	if err != nil {
		return nil, err
	}
	if err := f.parseRevocations(root.Field("revocations"), seen); err != nil {
		return nil, err
	}
	f.sort()
	return f, nil
}

// parseHeader decides whether the root is a lockfile of this format and
// reads its signature, generation and expiry into a new, empty [File].
func parseHeader(root strictjson.ObjectField) (*File, error) {
	ver := root.Field("etdiLock")
	if ver.V == nil {
		return nil, errors.New(`not an etdi lockfile: no "etdiLock" member`)
	}
	n, err := ver.Uint()
	if err != nil {
		return nil, err
	}
	if n != Version {
		return nil, ver.Errorf("lockfile format %d; this etdi reads format %d", n, Version)
	}
	f := &File{Servers: []ServerEntry{}, Pins: []Pin{}, Revocations: []Revocation{}}
	if f.Signature, err = root.Field("signature").OptStr(); err != nil {
		return nil, err
	}
	if s := root.Field("signature"); s.V != nil && (f.Signature == "" || len(f.Signature) > MaxSignature) {
		return nil, s.Errorf("must be a signed note of 1 to %d bytes", MaxSignature)
	}
	if g := root.Field("generation"); g.V != nil {
		if f.Generation, err = g.Uint(); err != nil {
			return nil, err
		}
		if f.Generation == 0 {
			return nil, g.Errorf("must be at least 1")
		}
	}
	if x := root.Field("expires"); x.V != nil {
		t, err := x.Str()
		if err != nil {
			return nil, err
		}
		if f.Expires, err = time.Parse(time.RFC3339, t); err != nil || f.Expires.UTC().Format(time.RFC3339) != t {
			return nil, x.Errorf("%q is not an RFC 3339 time in UTC, in whole seconds (2006-01-02T15:04:05Z)", t)
		}
		f.Expires = f.Expires.UTC()
	}
	return f, nil
}

// parseServers reads the servers into f, refusing more than [MaxServers]
// and a server listed twice, and returns them by key.
func (f *File) parseServers(fd strictjson.Field) (strictjson.ArrayField, map[string]*ServerEntry, error) {
	servers, err := fd.Array()
	if err != nil {
		return servers, nil, err
	}
	if servers.Len() > MaxServers {
		return servers, nil, servers.Errorf("more than %d servers", MaxServers)
	}
	byKey := map[string]*ServerEntry{}
	for i := range servers.Len() {
		s, err := parseServer(servers.Elem(i))
		if err != nil {
			return servers, nil, err
		}
		if byKey[s.Key] != nil {
			return servers, nil, servers.Elem(i).Errorf("server %q is listed twice", s.Key)
		}
		byKey[s.Key] = s
		f.Servers = append(f.Servers, *s)
	}
	return servers, byKey, nil
}

// parsePins reads the pins into f, refusing more than [MaxPins], an item
// pinned twice and a listed server without a pin, and returns the pinned
// server, item and name triples.
func (f *File) parsePins(fd strictjson.Field, servers strictjson.ArrayField, byKey map[string]*ServerEntry) (map[[3]string]bool, error) {
	pins, err := fd.Array()
	if err != nil {
		return nil, err
	}
	if pins.Len() > MaxPins {
		return nil, pins.Errorf("more than %d pins", MaxPins)
	}
	seen := map[[3]string]bool{}
	pinned := map[string]bool{}
	for i := range pins.Len() {
		p, err := parsePin(pins.Elem(i), byKey)
		if err != nil {
			return nil, err
		}
		k := [3]string{p.Server, p.Item, p.Tool}
		if seen[k] {
			return nil, pins.Elem(i).Errorf("%s is pinned twice", p.Ref())
		}
		seen[k] = true
		pinned[p.Server] = true
		f.Pins = append(f.Pins, *p)
	}
	for _, s := range f.Servers {
		if !pinned[s.Key] {
			return nil, servers.Errorf("server %q has no pin", s.Key)
		}
	}
	return seen, nil
}

// parseRevocations reads the revocations into f, refusing more than
// [MaxRevocations], one of an item not in seen and a target revoked twice.
func (f *File) parseRevocations(fd strictjson.Field, seen map[[3]string]bool) error {
	revs, err := fd.Array()
	if err != nil {
		return err
	}
	if revs.Len() > MaxRevocations {
		return revs.Errorf("more than %d revocations", MaxRevocations)
	}
	targets := map[string]bool{}
	for i := range revs.Len() {
		r, err := parseRevocation(revs.Elem(i), seen)
		if err != nil {
			return err
		}
		if targets[r.Target()] {
			return revs.Elem(i).Errorf("%s is revoked twice", r.Target())
		}
		targets[r.Target()] = true
		f.Revocations = append(f.Revocations, *r)
	}
	return nil
}

// text reads a string member of at most max bytes without control
// characters; required says it must be present and not empty.
func text(o strictjson.ObjectField, name string, required bool, max int) (string, error) {
	fd := o.Field(name)
	s, err := fd.OptStr()
	switch {
	case err != nil:
		return "", err
	case fd.V != nil && s == "" && required:
		return "", fd.Errorf("must not be empty")
	case fd.V != nil && s == "":
		return "", fd.Errorf("must not be empty (leave it out)")
	case required && fd.V == nil:
		return "", fd.Errorf("required field is missing")
	case len(s) > max:
		return "", fd.Errorf("longer than %d bytes", max)
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return "", fd.Errorf("%q holds a control character", s)
	}
	return strings.Clone(s), nil
}

func parseServer(fd strictjson.Field) (*ServerEntry, error) {
	o, err := fd.Object()
	if err != nil {
		return nil, err
	}
	if err := o.Only("server", "name", "provider", "instructionsKnown", "instructions"); err != nil {
		return nil, err
	}
	var s ServerEntry
	if s.Key, err = text(o, "server", true, maxText); err != nil {
		return nil, err
	}
	if s.Name, err = text(o, "name", true, maxText); err != nil {
		return nil, err
	}
	if s.Provider, err = text(o, "provider", false, maxText); err != nil {
		return nil, err
	}
	want := pin.UnsignedServerKey(s.Name)
	if s.Provider != "" {
		want = pin.SignedServerKey(s.Provider, s.Name)
	} else if err := pin.ValidateUnsignedName(s.Name); err != nil {
		return nil, o.Field("name").Errorf("%v", err)
	}
	if s.Key != want {
		return nil, o.Field("server").Errorf("%q is not the key of provider %q and name %q (%q)", s.Key, s.Provider, s.Name, want)
	}
	if k := o.Field("instructionsKnown"); k.V != nil {
		if k.V.Kind != strictjson.Bool {
			return nil, k.Errorf("must be a boolean")
		}
		s.InstructionsKnown = k.V.Bool
	}
	if in := o.Field("instructions"); in.V != nil {
		t, err := in.Str()
		if err != nil {
			return nil, err
		}
		if !s.InstructionsKnown {
			return nil, in.Errorf(`instructions need "instructionsKnown": true`)
		}
		t = strings.Clone(t)
		s.Instructions = &t
	}
	return &s, nil
}

// nameMember is the member of a definition that names the item.
func nameMember(item string) string {
	switch item {
	case pin.ItemResource:
		return "uri"
	case pin.ItemTemplate:
		return "uriTemplate"
	}
	return "name"
}

var signerKinds = []string{"none", "key", "idp", "key+idp", "sigstore", "sigstore+idp"}

// parsePin reads one pin strictly and decides that it is consistent:
// its server listed in servers, its shape that of its signer and item
// kind, its definition that of its digest.
func parsePin(fd strictjson.Field, servers map[string]*ServerEntry) (*Pin, error) {
	o, err := fd.Object()
	if err != nil {
		return nil, err
	}
	if err := o.Only("server", "item", "tool", "version", "digest", "signer", "provider", "permissions", "scopes", "definition", "sequence", "served"); err != nil {
		return nil, err
	}
	var p Pin
	srv, err := p.parseRef(o, servers)
	if err != nil {
		return nil, err
	}
	d, err := p.parseDigest(o)
	if err != nil {
		return nil, err
	}
	if err := p.parseApproval(o, srv); err != nil {
		return nil, err
	}
	if err := p.checkShape(fd, o); err != nil {
		return nil, err
	}
	if err := p.parseDefinition(o.Field("definition"), d); err != nil {
		return nil, err
	}
	return &p, nil
}

// parseRef reads what names the pinned item (server, item kind, name,
// version) and decides that its server is one of servers, which it
// returns.
func (p *Pin) parseRef(o strictjson.ObjectField, servers map[string]*ServerEntry) (*ServerEntry, error) {
	var err error
	if p.Server, err = text(o, "server", true, maxText); err != nil {
		return nil, err
	}
	srv := servers[p.Server]
	if srv == nil {
		return nil, o.Field("server").Errorf("server %q is not listed under servers", p.Server)
	}
	if p.Item, err = text(o, "item", false, maxText); err != nil {
		return nil, err
	}
	if p.Item != pin.ItemTool && !slices.Contains(pin.Items, p.Item) {
		return nil, o.Field("item").Errorf("%q is not an item kind (%s; a tool has none)", p.Item, strings.Join(pin.Items, ", "))
	}
	if p.Tool, err = text(o, "tool", true, maxName); err != nil {
		return nil, err
	}
	if p.Version, err = text(o, "version", false, maxText); err != nil {
		return nil, err
	}
	if p.Version != "" {
		if _, err := etdi.ParseVersion(p.Version); err != nil {
			return nil, o.Field("version").Errorf("%v", err)
		}
	}
	return srv, nil
}

// parseDigest reads the pinned digest, which must be in its canonical
// form, and returns it parsed.
func (p *Pin) parseDigest(o strictjson.ObjectField) (etdi.Digest, error) {
	var err error
	if p.Digest, err = text(o, "digest", true, maxText); err != nil {
		return etdi.Digest{}, err
	}
	d, err := etdi.ParseDigest(p.Digest)
	if err != nil || d.String() != p.Digest {
		return etdi.Digest{}, o.Field("digest").Errorf("%q is not sha256: and 64 lowercase hex digits", p.Digest)
	}
	return d, nil
}

// parseApproval reads what was approved besides the definition (signer,
// provider, permissions, sequence, scopes, served) and decides that the
// provider is that of the pin's server srv.
func (p *Pin) parseApproval(o strictjson.ObjectField, srv *ServerEntry) error {
	var err error
	if p.Signer, err = parseSigner(o.Field("signer")); err != nil {
		return err
	}
	if p.Provider, err = text(o, "provider", false, maxText); err != nil {
		return err
	}
	if p.Provider != srv.Provider {
		return o.Field("provider").Errorf("%q is not the provider of server %q (%q)", p.Provider, p.Server, srv.Provider)
	}
	if p.Permissions, err = parsePermissions(o.Field("permissions")); err != nil {
		return err
	}
	if sq := o.Field("sequence"); sq.V != nil {
		if p.Sequence, err = sq.Uint(); err != nil {
			return err
		}
	}
	if p.Scopes, err = parseScopes(o.Field("scopes")); err != nil {
		return err
	}
	if p.Served, err = text(o, "served", false, maxText); err != nil {
		return err
	}
	return nil
}

// checkShape decides that what only a signed tool has (a version,
// permissions) and what only an unsigned tool has (scopes) appear only
// there.
func (p *Pin) checkShape(fd strictjson.Field, o strictjson.ObjectField) error {
	switch {
	case p.Item != pin.ItemTool && (p.Signer != pin.Unsigned || p.Version != "" || len(p.Permissions) > 0):
		return fd.Errorf("a %s is pinned by digest alone: signer none, no version, no permissions", pin.ItemWord(p.Item))
	case (p.Signer == pin.Unsigned) != (p.Version == ""):
		return fd.Errorf("a signed tool has a version and an unsigned one has none")
	case p.Signer == pin.Unsigned && len(p.Permissions) > 0:
		return o.Field("permissions").Errorf("an unsigned tool has no permissions")
	case len(p.Scopes) > 0 && (p.Item != pin.ItemTool || p.Signer != pin.Unsigned):
		return o.Field("scopes").Errorf("only an unsigned tool has scopes given at approval")
	}
	return nil
}

// parseDefinition reads the approved definition, bounded, and decides
// that it names the pinned item and has the pinned digest d.
func (p *Pin) parseDefinition(def strictjson.Field, d etdi.Digest) error {
	if _, err := def.Object(); err != nil {
		return err
	}
	if n := count(def.V); n > etdi.MaxDefinitionNodes {
		return def.Errorf("more than %d JSON values", etdi.MaxDefinitionNodes)
	}
	name := def.V.Get(nameMember(p.Item))
	if name == nil || name.Kind != strictjson.String || name.Str != p.Tool {
		return def.Errorf("%q of the definition is not %q", nameMember(p.Item), p.Tool)
	}
	p.Definition = strictjson.AppendCanonical(nil, def.V)
	if got := etdi.Digest(sha256.Sum256(p.Definition)); got != d {
		return &VerifyError{fmt.Sprintf("%s: the definition of %s has digest %s, not the pinned %s: the definition or the digest was changed", def.Path, p.Ref(), got, p.Digest)}
	}
	return nil
}

func count(v *strictjson.Value) int {
	n := 1
	for _, e := range v.Elems {
		n += count(e)
	}
	for _, m := range v.Members {
		n += count(m.Value)
	}
	return n
}

func parseSigner(fd strictjson.Field) (pin.SignerID, error) {
	o, err := fd.Object()
	if err != nil {
		return pin.SignerID{}, err
	}
	if err := o.Only("kind", "id"); err != nil {
		return pin.SignerID{}, err
	}
	var s pin.SignerID
	if s.Kind, err = text(o, "kind", true, maxText); err != nil {
		return s, err
	}
	if !slices.Contains(signerKinds, s.Kind) {
		return s, o.Field("kind").Errorf("%q is not a signer kind (%s)", s.Kind, strings.Join(signerKinds, ", "))
	}
	if s.ID, err = text(o, "id", s.Kind != "none", maxText); err != nil {
		return s, err
	}
	if s.Kind == "none" && s.ID != "" {
		return s, o.Field("id").Errorf("an unsigned signer has no id")
	}
	return s, nil
}

// parseScopes parses the scopes given to an unsigned tool at approval:
// absent, or an array of valid scopes, sorted and each once, as pin
// approval records them.
func parseScopes(fd strictjson.Field) ([]string, error) {
	if fd.V == nil {
		return nil, nil
	}
	a, err := fd.Array()
	if err != nil {
		return nil, err
	}
	var ss []string
	for i := 0; i < a.Len(); i++ {
		s, err := a.Elem(i).Str()
		if err != nil {
			return nil, err
		}
		ss = append(ss, s)
	}
	norm, err := pin.NormalizeScopes(ss)
	if err != nil {
		return nil, fd.Errorf("%v", err)
	}
	if len(norm) == 0 || !slices.Equal(norm, ss) {
		return nil, fd.Errorf("the scopes are not a non-empty list, sorted, each once")
	}
	return norm, nil
}

func parsePermissions(fd strictjson.Field) ([]etdi.Permission, error) {
	a, err := fd.Array()
	if err != nil {
		return nil, err
	}
	if a.Len() > etdi.MaxPermissions {
		return nil, a.Errorf("more than %d permissions", etdi.MaxPermissions)
	}
	out := make([]etdi.Permission, 0, a.Len())
	for i := range a.Len() {
		o, err := a.Elem(i).Object()
		if err != nil {
			return nil, err
		}
		if err := o.Only("scope", "description"); err != nil {
			return nil, err
		}
		var q etdi.Permission
		if q.Scope, err = text(o, "scope", true, maxText); err != nil {
			return nil, err
		}
		if err := etdi.ValidateScope(q.Scope); err != nil {
			return nil, o.Field("scope").Errorf("%v", err)
		}
		if slices.ContainsFunc(out, func(x etdi.Permission) bool { return x.Scope == q.Scope }) {
			return nil, o.Field("scope").Errorf("duplicate scope %q", q.Scope)
		}
		if q.Description, err = text(o, "description", false, maxText); err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

func parseRevocation(fd strictjson.Field, pinned map[[3]string]bool) (*Revocation, error) {
	o, err := fd.Object()
	if err != nil {
		return nil, err
	}
	if err := o.Only("server", "tool", "version", "keyId", "reason"); err != nil {
		return nil, err
	}
	var r Revocation
	for _, x := range []struct {
		name string
		to   *string
	}{{"server", &r.Server}, {"tool", &r.Tool}, {"version", &r.Version}, {"keyId", &r.KeyID}} {
		if *x.to, err = text(o, x.name, false, maxName); err != nil {
			return nil, err
		}
	}
	// A reason is free text, shown escaped.
	if r.Reason, err = o.Field("reason").OptStr(); err != nil {
		return nil, err
	}
	if len(r.Reason) > maxName {
		return nil, o.Field("reason").Errorf("longer than %d bytes", maxName)
	}
	r.Reason = strings.Clone(r.Reason)
	switch {
	case r.KeyID != "":
		if r.Server != "" || r.Tool != "" || r.Version != "" {
			return nil, fd.Errorf("a key revocation names no server, tool or version")
		}
		if d, err := etdi.ParseDigest(r.KeyID); err != nil || d.String() != r.KeyID {
			return nil, o.Field("keyId").Errorf("%q is not a key id (sha256: and 64 lowercase hex digits)", r.KeyID)
		}
	case r.Server == "" || r.Tool == "":
		return nil, fd.Errorf("a revocation names a keyId, or a server and a tool")
	case !pinned[[3]string{r.Server, pin.ItemTool, r.Tool}]:
		return nil, fd.Errorf("%s revokes a tool the lockfile does not pin", r.Target())
	case r.Version != "":
		if _, err := etdi.ParseVersion(r.Version); err != nil {
			return nil, o.Field("version").Errorf("%v", err)
		}
	}
	return &r, nil
}
