package lockfile

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/strictjson"
)

// UnjustifiedError reports a pin database whose pins or revocations the
// history does not justify ([pin.Store.VerifyPins]): nothing is exported
// from it.
type UnjustifiedError struct{ Disagreements []pin.Disagreement }

func (e *UnjustifiedError) Error() string {
	sentence, lines := e.List()
	return sentence + ":\n  " + strings.Join(lines, "\n  ")
}

// List returns the error's sentence and its items, for a program that
// prints them one a line.
func (e *UnjustifiedError) List() (string, []string) {
	var lines []string
	for _, d := range e.Disagreements {
		lines = append(lines, d.String())
	}
	return fmt.Sprintf("%d pins, revocations or index entries disagree with the history; not exporting them", len(lines)), lines
}

// Export returns what s approved and revoked. It first replays the
// history ([pin.Store.VerifyPins]): a database whose pins the history does
// not justify is an [*UnjustifiedError], and nothing is exported. Who
// approved and when are left out (the repository's history of the
// lockfile says that), so the same approvals export to the same bytes on
// every machine.
func Export(s *pin.Store) (*File, error) {
	dis, err := s.VerifyPins()
	if err != nil {
		return nil, err
	}
	if len(dis) > 0 {
		return nil, &UnjustifiedError{dis}
	}
	pins, err := s.List()
	if err != nil {
		return nil, err
	}
	infos, err := s.Servers()
	if err != nil {
		return nil, err
	}
	revs, err := s.Revocations()
	if err != nil {
		return nil, err
	}
	f := &File{Servers: []ServerEntry{}, Pins: []Pin{}, Revocations: []Revocation{}}
	pinned := map[string]bool{}
	// Each item's latest approved definition: variants approved beside it
	// (docs/storage.md#approved-variants) stay in the database they were approved in.
	for _, p := range pins {
		def, err := strictjson.Canonicalize(p.Definition)
		if err != nil {
			return nil, fmt.Errorf("pin %s: definition: %w", p.Ref(), err)
		}
		f.Pins = append(f.Pins, Pin{Server: p.Server, Item: p.Item, Tool: p.Tool, Version: p.Version, Digest: p.Digest,
			Signer: p.Signer, Provider: p.Provider, Permissions: p.Permissions, Scopes: p.Scopes, Sequence: p.Sequence, Served: p.Served, Definition: def})
		pinned[p.Server] = true
	}
	for _, info := range infos {
		if !pinned[info.Key] {
			continue // a server whose every tool was refused
		}
		f.Servers = append(f.Servers, ServerEntry{Key: info.Key, Name: info.Name, Provider: info.Provider,
			InstructionsKnown: info.InstructionsKnown, Instructions: info.Instructions})
	}
	for _, r := range revs {
		if r.Digest != "" {
			// A revoked variant: the lockfile holds the latest approved
			// definition of each item only, never the revoked one; as a
			// revocation of the whole tool it would say more.
			continue
		}
		f.Revocations = append(f.Revocations, Revocation{Server: r.Server, Tool: r.Tool, Version: r.Version, KeyID: r.KeyID, Reason: r.Reason})
	}
	f.sort()
	return f, nil
}

// ImportOptions say how [Import] treats a database that already holds
// pins.
type ImportOptions struct {
	// By names who imports, in the history records (default "lockfile").
	By string
	// Now is the time of the records (default: now).
	Now time.Time
	// Replace lets the lockfile replace pins (and approved instructions)
	// that differ from it; without it such a difference is a
	// *ConflictError and nothing is imported.
	Replace bool
}

// Result is what [Import] did.
type Result struct {
	// Approved are the approvals Import made (re-approvals with
	// Replaced set).
	Approved []pin.Approval `json:"approved"`
	// Revoked are the revocations Import recorded.
	Revoked []pin.Revocation `json:"revoked"`
	// Instructions are the servers whose approved instructions Import
	// recorded or replaced.
	Instructions []string `json:"instructions"`
	// Unchanged is the number of pins and revocations the database held
	// already as the lockfile says.
	Unchanged int `json:"unchanged"`
}

// Conflict is one pin of the database that the lockfile would replace.
type Conflict struct {
	// Ref is "server/tool" ("server/prompt:name", or the server alone
	// for its instructions).
	Ref string `json:"ref"`
	// Pinned and Locked are what the database and the lockfile hold:
	// version and digest, or what differs.
	Pinned string `json:"pinned"`
	Locked string `json:"locked"`
}

// ConflictError lists the pins a lockfile would replace, when Replace
// was not given. Nothing was imported.
type ConflictError struct{ Conflicts []Conflict }

func (e *ConflictError) Error() string {
	sentence, lines := e.List()
	return sentence + ":\n  " + strings.Join(lines, "\n  ")
}

// List returns the error's sentence and its items, for a program that
// prints them one a line.
func (e *ConflictError) List() (string, []string) {
	var lines []string
	for _, c := range e.Conflicts {
		lines = append(lines, fmt.Sprintf("%s: the database holds %s, the lockfile %s", c.Ref, c.Pinned, c.Locked))
	}
	return fmt.Sprintf("%d pins of the database differ from the lockfile; nothing imported", len(lines)), lines
}

// RefusedError lists the approvals of a lockfile the database refused,
// each "SERVER/TOOL: why".
type RefusedError struct{ Refused []string }

func (e *RefusedError) Error() string {
	sentence, lines := e.List()
	return sentence + ":\n  " + strings.Join(lines, "\n  ")
}

// List returns the error's sentence and its items, for a program that
// prints them one a line.
func (e *RefusedError) List() (string, []string) {
	return fmt.Sprintf("could not import %d approvals of the lockfile", len(e.Refused)), e.Refused
}

// describe is what a conflict shows of a pin.
func describe(version, digest string, signer pin.SignerID, perms []etdi.Permission, given []string, served string) string {
	s := strings.TrimSpace(version + " " + digest)
	s += ", signer " + signer.String()
	var scopes []string
	for _, q := range perms {
		scopes = append(scopes, q.Scope)
	}
	s += ", permissions [" + strings.Join(scopes, " ") + "]"
	if len(given) > 0 {
		s += ", scopes [" + strings.Join(given, " ") + "]"
	}
	if served != "" {
		s += ", served by " + served
	}
	return s
}

// same reports whether the database's pin p approves what the lockfile's
// l does: what a check compares (version, digest, signer, permissions,
// what served it) and the scopes given at approval (what the call-time
// rules read).
func same(p *pin.Pin, l *Pin) bool {
	added, removed := etdi.PermissionDiff(p.Permissions, l.Permissions)
	return p.Version == l.Version && p.Digest == l.Digest && p.Signer == l.Signer && len(added)+len(removed) == 0 && p.Served == l.Served &&
		slices.Equal(p.Scopes, l.Scopes)
}

func sameInstructions(a, b *string) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func instructionsText(known bool, s *string) string {
	switch {
	case !known:
		return "no approved instructions"
	case s == nil:
		return "no instructions"
	}
	return fmt.Sprintf("instructions of %d bytes (%s)", len(*s), etdi.DigestString(*s))
}

// Import loads f into s: every pin of f that s lacks becomes an approval
// with its history record ([pin.Store.Approve]), every revocation that s
// lacks a revocation ([pin.Store.Revoke]); what s holds already as f says
// is left alone, so importing the same lockfile twice changes nothing.
// A pin of s that f would replace (another version, digest, signer,
// permissions or what served it) and approved instructions f would
// replace are a [*ConflictError] before anything is written, unless
// opts.Replace. Nothing is ever removed: pins of s that f lacks stay.
//
// Each server's approvals are one transaction per bundle sequence (and
// what served them); a failure leaves earlier servers imported, and
// importing again completes the rest.
func Import(s *pin.Store, f *File, opts ImportOptions) (*Result, error) {
	if opts.By == "" {
		opts.By = "lockfile"
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now().UTC()
	}
	res := &Result{Approved: []pin.Approval{}, Revoked: []pin.Revocation{}, Instructions: []string{}}
	todo, conflicts, err := planPins(s, f, opts, res)
	if err != nil {
		return nil, err
	}
	accept, more, err := planInstructions(s, f, opts)
	if err != nil {
		return nil, err
	}
	if conflicts = append(conflicts, more...); len(conflicts) > 0 {
		return nil, &ConflictError{conflicts}
	}
	for _, srv := range f.Servers {
		if len(todo[srv.Key]) == 0 && !accept[srv.Key] {
			continue
		}
		if err := importServer(s, f, &srv, todo[srv.Key], accept[srv.Key], opts, res); err != nil {
			return res, err
		}
	}
	if err := importRevocations(s, f, opts, res); err != nil {
		return res, err
	}
	return res, nil
}

// planPins decides, for each pin of f, whether s holds it already
// (counted in res as unchanged), lacks it or holds another one that
// opts.Replace lets f replace (returned by server, to import), or holds
// another one that f must not replace (a conflict).
func planPins(s *pin.Store, f *File, opts ImportOptions, res *Result) (map[string][]*Pin, []Conflict, error) {
	have, err := s.List()
	if err != nil {
		return nil, nil, err
	}
	byKey := map[[3]string]*pin.Pin{}
	for i := range have {
		p := &have[i]
		byKey[[3]string{p.Server, p.Item, p.Tool}] = p
	}
	var conflicts []Conflict
	todo := map[string][]*Pin{} // by server
	for i := range f.Pins {
		l := &f.Pins[i]
		p := byKey[[3]string{l.Server, l.Item, l.Tool}]
		switch {
		case p == nil:
		case same(p, l):
			res.Unchanged++
			continue
		case !opts.Replace:
			conflicts = append(conflicts, Conflict{Ref: l.Ref(), Pinned: describe(p.Version, p.Digest, p.Signer, p.Permissions, p.Scopes, p.Served),
				Locked: describe(l.Version, l.Digest, l.Signer, l.Permissions, l.Scopes, l.Served)})
			continue
		}
		todo[l.Server] = append(todo[l.Server], l)
	}
	return todo, conflicts, nil
}

// planInstructions decides, for each server of f with approved
// instructions, whether they are recorded (s has none, or opts.Replace
// lets f replace others: returned by server key) or are a conflict (s
// has others).
func planInstructions(s *pin.Store, f *File, opts ImportOptions) (map[string]bool, []Conflict, error) {
	var conflicts []Conflict
	accept := map[string]bool{}
	for _, srv := range f.Servers {
		if !srv.InstructionsKnown {
			continue
		}
		info, err := s.Server(srv.Key)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case info == nil || !info.InstructionsKnown:
			accept[srv.Key] = true
		case sameInstructions(info.Instructions, srv.Instructions):
		case !opts.Replace:
			conflicts = append(conflicts, Conflict{Ref: srv.Key, Pinned: instructionsText(true, info.Instructions),
				Locked: instructionsText(true, srv.Instructions)})
		default:
			accept[srv.Key] = true
		}
	}
	return accept, conflicts, nil
}

// importRevocations records each revocation of f that s lacks, and
// counts those it holds already as unchanged.
func importRevocations(s *pin.Store, f *File, opts ImportOptions, res *Result) error {
	revs, err := s.Revocations()
	if err != nil {
		return err
	}
	for _, r := range f.Revocations {
		if slices.ContainsFunc(revs, func(x pin.Revocation) bool {
			return x.KeyID == r.KeyID && x.Server == r.Server && x.Tool == r.Tool && x.Version == r.Version
		}) {
			res.Unchanged++
			continue
		}
		rv := pin.Revocation{Server: r.Server, Tool: r.Tool, Version: r.Version, KeyID: r.KeyID, By: opts.By, At: opts.Now, Reason: r.Reason}
		if err := s.Revoke(rv); err != nil {
			return fmt.Errorf("revoking %s: %w", r.Target(), err)
		}
		res.Revoked = append(res.Revoked, rv)
	}
	return nil
}

// importServer approves the pins of one server, lowest bundle sequence
// first (a lower one after a higher one would be a replayed bundle),
// grouped by sequence and what served them, and each group in batches
// that pin.Store.Approve takes in one transaction.
func importServer(s *pin.Store, f *File, srv *ServerEntry, todo []*Pin, accept bool, opts ImportOptions, res *Result) error {
	type group struct {
		sequence uint64
		served   string
	}
	groups := map[group][]*Pin{}
	for _, l := range todo {
		g := group{l.Sequence, l.Served}
		groups[g] = append(groups[g], l)
	}
	keys := make([]group, 0, len(groups))
	for g := range groups {
		keys = append(keys, g)
	}
	slices.SortFunc(keys, func(a, b group) int {
		return cmp.Or(cmp.Compare(a.sequence, b.sequence), strings.Compare(a.served, b.served))
	})
	if len(keys) == 0 {
		// Only the instructions: offered with the server's pins as the
		// lockfile has them, which the database holds already, and no
		// bundle sequence (which would be compared with the server's).
		keys, groups = []group{{}}, map[group][]*Pin{{}: nil}
	}
	for _, g := range keys {
		var batch []*Pin
		size := 0
		flush := func() error {
			err := approve(s, f, srv, g.sequence, g.served, batch, accept, opts, res)
			batch, size = nil, 0
			return err
		}
		for _, l := range groups[g] {
			if size+len(l.Definition) > pin.MaxApprovalBytes && len(batch) > 0 {
				if err := flush(); err != nil {
					return err
				}
			}
			batch = append(batch, l)
			size += len(l.Definition)
		}
		if err := flush(); err != nil {
			return err
		}
	}
	return nil
}

// approve approves the pins of batch, offered as a server would offer
// them and each named (so that a pin the database holds otherwise is
// replaced), and fails unless each of them was approved. An empty batch
// with accept only records the server's instructions: the server's pins
// are offered as the database holds them already, and none is named.
func approve(s *pin.Store, f *File, srv *ServerEntry, sequence uint64, served string, batch []*Pin, accept bool, opts ImportOptions, res *Result) error {
	o := &pin.Observation{Server: srv.Key, Provider: srv.Provider, Name: srv.Name, Sequence: sequence, Served: served,
		InstructionsKnown: srv.InstructionsKnown, Instructions: srv.Instructions}
	var names []string
	scopes := map[string][]string{} // each unsigned tool's, none included
	for _, l := range batch {
		names = append(names, pin.ItemRef(l.Item, l.Tool))
		o.Tools = append(o.Tools, observed(l))
		if l.Item == pin.ItemTool && l.Signer == pin.Unsigned {
			scopes[l.Tool] = l.Scopes
		}
	}
	if len(names) == 0 && !accept {
		return nil
	}
	if len(names) == 0 {
		// Instructions alone: offer the server's pins, each as the
		// database holds it, and name none.
		for i := range f.Pins {
			if f.Pins[i].Server == srv.Key {
				o.Tools = append(o.Tools, observed(&f.Pins[i]))
			}
		}
	}
	// The lockfile's definition replaces the pin and every variant beside
	// it: the lockfile says what is approved.
	approved, refused, err := s.Approve(o, pin.ApproveOptions{Tools: names, By: opts.By, Now: opts.Now, AcceptInstructions: accept, Replace: true, Scopes: scopes})
	if err != nil {
		return fmt.Errorf("importing %s: %w", srv.Key, err)
	}
	done := map[string]bool{}
	for _, a := range approved {
		done[pin.ItemRef(a.Pin.Item, a.Pin.Tool)] = true
	}
	res.Approved = append(res.Approved, approved...)
	var why []string
	for _, r := range refused {
		if r.Tool == "" && accept {
			why = append(why, fmt.Sprintf("%s (%s): %s", srv.Key, r.Kind, r.Reason))
		}
	}
	for _, n := range names {
		if done[n] {
			continue
		}
		reason := "the database holds it already in a way the lockfile cannot replace"
		for _, r := range refused {
			if r.Tool == n {
				reason = fmt.Sprintf("%s: %s", r.Kind, r.Reason)
			}
		}
		why = append(why, fmt.Sprintf("%s/%s: %s", srv.Key, n, reason))
	}
	if len(why) > 0 {
		return &RefusedError{Refused: why}
	}
	if accept && !slices.Contains(res.Instructions, srv.Key) {
		info, err := s.Server(srv.Key)
		if err != nil {
			return err
		}
		if info != nil && info.InstructionsKnown && sameInstructions(info.Instructions, srv.Instructions) {
			res.Instructions = append(res.Instructions, srv.Key)
		}
	}
	return nil
}

// observed is the lockfile pin l as a server would offer it.
func observed(l *Pin) pin.Observed {
	d, _ := etdi.ParseDigest(l.Digest) // checked by Parse
	return pin.Observed{Item: l.Item, Name: l.Tool, Version: l.Version, Digest: d, Canonical: l.Definition,
		Permissions: l.Permissions, Signer: l.Signer}
}

// Temporary loads f into a new pin database in a private temporary
// directory (0700), for a check that must not write anywhere else, and
// returns the database's path and a function that removes the directory.
// Nothing of f may be refused.
func Temporary(f *File) (path string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "etdi-lock-")
	if err != nil {
		return "", nil, err
	}
	remove = func() { os.RemoveAll(dir) }
	path = filepath.Join(dir, "pins.db")
	s, err := pin.Open(path, pin.Options{})
	if err != nil {
		remove()
		return "", nil, err
	}
	_, err = Import(s, f, ImportOptions{By: "lockfile"})
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		remove()
		return "", nil, fmt.Errorf("loading the lockfile: %w", err)
	}
	return path, remove, nil
}
