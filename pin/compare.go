package pin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/confusable"
	"github.com/etdi-dev/etdi/strictjson"
)

// Observation is what a server offers now, as established by verification
// (or, without a bundle, by its tools/list alone).
type Observation struct {
	// Server is the server key (SignedServerKey or UnsignedServerKey).
	Server   string
	Provider string
	Name     string
	// Sequence is the verified bundle's sequence; 0 without a bundle.
	Sequence uint64
	// Tools are the tools offered and, with Item set, the other items.
	Tools []Observed
	// Listed are the item kinds other than tools (Items) the server was
	// asked for: the pins of kinds not listed are not reported removed.
	Listed []string
	// InstructionsKnown says whether the server was asked (live); then
	// Instructions are its instructions, nil if it sent none.
	InstructionsKnown bool
	Instructions      *string
	// Served is what the server was found to be served by: the artifact
	// its command runs or the endpoint it was reached at (ServedBy), empty
	// when unknown. A pin approved with another is a rug pull.
	Served string
	// ServedAt is where the file Served names was found, for a file
	// artifact (whose Served names only its base name); empty otherwise
	// or when unknown. A pin records it, and a file of the same name
	// elsewhere is then not an update of the one approved (IsUpdate).
	ServedAt string
	// ServedVerified says etdi established Served itself: the digest of
	// a file it hashed, an image of the local store, a package of the
	// runner's own cache; not a version and integrity a project's
	// lockfile claims (a repository can write one that names any
	// package). Only a verified artifact shares approvals across
	// configuration names (docs/storage.md#one-artifact-under-several-configuration-names).
	ServedVerified bool
	// Unresolved, with Served empty, says why what a launched server runs
	// could not be resolved: a pin that recorded what served it is then
	// not judged by its definition alone (a replaced implementation made
	// unresolvable must not pass as unknown).
	Unresolved string
	// OnUpdate is the trust policy's update rule for an unsigned server
	// whose artifact changed under approved definitions (IsUpdate):
	// UpdateAllow, UpdateAsk or UpdateBlock; empty is UpdateAsk.
	OnUpdate string
	// InGate says the comparison is a gate's: under UpdateAsk an update
	// is relayed with a notice (a warning) rather than asked about.
	InGate bool
}

// The update rules of [Observation.OnUpdate]
// ([github.com/etdi-dev/etdi/trust.UpdateRule]).
const (
	UpdateAllow = "allow"
	UpdateAsk   = "ask"
	UpdateBlock = "block"
)

// Observed is one tool (or, with Item set, another item) as offered now.
type Observed struct {
	// Item is the kind of item, empty for a tool; other items have no
	// version, permissions or signer.
	Item string
	// Name is the tool's or prompt's name, a resource's URI or a resource
	// template's URI template.
	Name        string
	Version     string // empty for unsigned tools
	Digest      etdi.Digest
	Canonical   []byte
	Permissions []etdi.Permission
	Signer      SignerID
}

// ToolState is the outcome for one tool (or other item).
type ToolState struct {
	Item    string `json:"item,omitempty"`
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Digest  string `json:"digest"`
	// Status: [StatusOK] (matches its pin), [StatusNew] (approval
	// required), [StatusChanged] (differs from its pin), [StatusBlocked]
	// (impersonation or revoked), [StatusRemoved] (pinned, no longer
	// offered).
	Status ToolStatus `json:"status"`
	// ApprovedAs, with [StatusOK], names the server whose approval of
	// the same definition from the same artifact covers the item, when it
	// has no pin of its own (docs/storage.md#one-artifact-under-several-configuration-names).
	ApprovedAs string `json:"approvedAs,omitempty"`
	// Scopes, with [StatusOK], are the scopes the approval of the
	// matching unsigned definition gave it (Pin.Scopes).
	Scopes []string `json:"scopes,omitempty"`
}

// ToolStatus is the status of an item compared with its pins
// ([ToolState]). Its values appear in --json output.
type ToolStatus string

// Statuses of an item compared with its pins.
const (
	// StatusOK: the item matches its pin (or an approved definition).
	StatusOK ToolStatus = "ok"
	// StatusNew: the item was never approved, or has a new version:
	// approval required.
	StatusNew ToolStatus = "new"
	// StatusChanged: the item differs from its pin.
	StatusChanged ToolStatus = "changed"
	// StatusBlocked: the item impersonates another or is revoked.
	StatusBlocked ToolStatus = "blocked"
	// StatusRemoved: the item is pinned and no longer offered.
	StatusRemoved ToolStatus = "removed"
)

// Comparison is the outcome of comparing an [Observation] with the pins.
type Comparison struct {
	Server   string            `json:"server"`
	Tools    []ToolState       `json:"tools"`
	Findings []finding.Finding `json:"findings"`
	// Recorded is the number of findings Check or Record appended to the
	// history.
	Recorded int `json:"-"`
	// Unserved are the items (ItemRef) that match their pins, whose pins
	// were approved without recording what served them, while what
	// serves them now is known (Observation.Served): RecordServed
	// records it, once the person confirms; until then they are judged
	// by their definitions alone.
	Unserved []string `json:"-"`
	// Updated are the items (ItemRef) whose definition is an approved
	// one served by an earlier version of the artifact that serves it now
	// (IsUpdate): the server_updated finding speaks for them, and
	// approving the update records what serves them now.
	Updated []string `json:"-"`
}

// Compare compares o with the pins, read-only.
func (s *Store) Compare(o *Observation) (*Comparison, error) {
	var c *Comparison
	err := s.view(func(tx *kvTx) error {
		var err error
		c, err = compare(tx, o)
		return err
	})
	return c, err
}

// Check compares o with the pins and appends to the history every error
// and warning finding, of the comparison and the extra ones (those of
// verification), that the history does not already hold since the last
// decision about its tool (unrecorded). When nothing is new it writes
// nothing; otherwise the comparison is repeated in the write transaction
// that records it.
func (s *Store) Check(o *Observation, by string, extra ...finding.Finding) (*Comparison, error) {
	c, todo, err := s.Judge(o, extra...)
	if err != nil || len(todo) == 0 {
		return c, err
	}
	return s.Record(o, by, extra...)
}

// Record is [Store.Check] in one write transaction: it compares o with the pins
// and appends the findings the history does not hold yet. Judge first,
// on a store opened read-only, and Record only when it has something to
// append: a write holds the database exclusively.
func (s *Store) Record(o *Observation, by string, extra ...finding.Finding) (*Comparison, error) {
	if s.spooled() {
		return s.recordSpooled(o, by, extra)
	}
	var c *Comparison
	err := s.update(func(tx *kvTx) error {
		var todo []finding.Finding
		var err error
		if c, todo, err = judge(tx, o, extra); err != nil {
			return err
		}
		c.Recorded = len(todo)
		return recordFindings(tx, o, todo, by)
	})
	if err != nil && s.clientFallback(err) {
		// A client of an etcd store: its own spool (docs/fleets.md#roles).
		return s.recordSpooled(o, by, extra)
	}
	return c, err
}

// StillApproved says, for each tool (and other item) of o, whether it is
// still approved as observed: the kind of finding that withdraws it
// (revoked, a pin of another definition: rug_pull, no pin: new_tool, an
// older bundle replayed: downgrade), or "" when its pin holds the same
// version, digest, signer and permissions. It reads only those pins and
// revocations, each checked against the record that created it, so it
// costs the same however long the history grows; unlike [Store.Compare] it does
// not replay the history to find a pin rolled back to an earlier record.
// A gate uses it to withdraw approvals between full comparisons (which
// it makes at every listing), never to grant one. The map is keyed by
// [StillApprovedKey].
func (s *Store) StillApproved(o *Observation) (map[string]finding.Kind, error) {
	out := map[string]finding.Kind{}
	sc := &shareCache{}
	err := s.view(func(tx *kvTx) error {
		info, err := serverInfo(tx, o.Server)
		if err != nil {
			return err
		}
		replayed := info != nil && o.Sequence > 0 && o.Sequence < info.MaxSequence
		for i := range o.Tools {
			t := &o.Tools[i]
			key := itemKey(t.Item, t.Name)
			switch {
			case replayed:
				out[key] = finding.Downgrade
				continue
			case hasControl(t.Name):
				out[key] = finding.Impersonation
				continue
			}
			r, err := revokedBy(tx, o.Server, t)
			if err != nil {
				return err
			}
			if r != nil {
				out[key] = finding.Revoked
				continue
			}
			p, err := getItem(tx, o.Server, t.Item, t.Name)
			if err != nil {
				return err
			}
			if p == nil {
				shared, err := sharedApproval(tx, o, t, sc)
				if err != nil {
					return err
				}
				if shared != "" {
					out[key] = ""
				} else {
					out[key] = finding.NewTool
				}
				continue
			}
			for i := range p.Variants {
				v := p.Variants[i].pin()
				if err := checkPin(tx, &v); err != nil {
					return err
				}
			}
			if v := matchingVariant(p, o, t); v == nil || (t.Item == ItemTool && v.Version != t.Version) {
				out[key] = finding.RugPull
				if u := updatedVariant(p, o, t); u != nil && (t.Item != ItemTool || u.Version == t.Version) {
					out[key] = finding.ServerUpdated
					if updateRule(o) == UpdateAllow {
						out[key] = ""
					}
				}
			} else {
				out[key] = ""
			}
		}
		return nil
	})
	return out, err
}

// StillApprovedKey is the key of an item in the map StillApproved returns.
func StillApprovedKey(item, name string) string { return itemKey(item, name) }

// Judge compares o with the pins, read-only, and returns with the
// comparison the findings [Store.Check] would append to the history (none when
// [Store.Check] would write nothing). A store opened read-only can judge.
func (s *Store) Judge(o *Observation, extra ...finding.Finding) (*Comparison, []finding.Finding, error) {
	var c *Comparison
	var todo []finding.Finding
	err := s.view(func(tx *kvTx) error {
		var err error
		c, todo, err = judge(tx, o, extra)
		return err
	})
	return c, todo, err
}

func judge(tx *kvTx, o *Observation, extra []finding.Finding) (*Comparison, []finding.Finding, error) {
	c, err := compare(tx, o)
	if err != nil {
		return nil, nil, err
	}
	todo, err := unrecorded(tx, o.Server, worthRecording(c, append(slices.Clip(extra), c.Findings...)))
	return c, todo, err
}

// worthRecording drops from findings the unsigned_tool warnings of tools
// approved as observed (status "ok"): that a tool the policy lets run
// unsigned is unsigned is the server's standing state, recorded with its
// approval (signer "unsigned"), not an event of each check (docs/storage.md#history-and-checkpoints).
// The warning of a tool that is new or changed is kept: it goes with the
// decision that tool needs. Every other finding is kept.
func worthRecording(c *Comparison, findings []finding.Finding) []finding.Finding {
	ok := map[string]bool{}
	for _, t := range c.Tools {
		if t.Status == StatusOK {
			ok[itemKey(t.Item, t.Name)] = true
		}
	}
	out := findings[:0:0]
	for _, f := range findings {
		if f.Kind == finding.UnsignedTool && f.Severity == finding.Warning && f.Tool != "" && ok[itemKey(f.Item, f.Tool)] {
			continue
		}
		out = append(out, f)
	}
	return out
}

func recordFindings(tx *kvTx, o *Observation, findings []finding.Finding, by string) error {
	for _, f := range findings {
		if f.Severity == finding.Info {
			continue
		}
		if _, err := appendRecord(tx, findingRecord(o, &f, by)); err != nil {
			return err
		}
	}
	return nil
}

func findingRecord(o *Observation, f *finding.Finding, by string) Record {
	return Record{Type: RecordFinding, Server: o.Server, Item: f.Item, Tool: f.Tool, Version: f.Version,
		Digest: f.Live, Kind: string(f.Kind), Severity: string(f.Severity), Message: f.Message, By: by}
}

func compare(tx *kvTx, o *Observation) (*Comparison, error) {
	c := &Comparison{Server: o.Server, Tools: []ToolState{}, Findings: []finding.Finding{}}
	// Every pin and revocation of the server against the history: bound
	// to a record that says what it says, and not replaced since.
	if err := checkLatest(tx, o.Server); err != nil {
		return nil, err
	}
	info, err := serverInfo(tx, o.Server)
	if err != nil {
		return nil, err
	}
	if f := replayedBundle(o, info); f != nil {
		c.Findings = append(c.Findings, *f)
	}
	if f := compareInstructions(o, info); f != nil {
		c.Findings = append(c.Findings, *f)
	}
	// Look-alike names within what the server offers now.
	bySkeleton := map[string][]string{}
	count := map[string]int{}
	for _, t := range o.Tools {
		if t.Item == ItemTool {
			sk := confusable.Skeleton(t.Name)
			bySkeleton[sk] = append(bySkeleton[sk], t.Name)
		}
		count[itemKey(t.Item, t.Name)]++
	}
	offered := map[string]bool{}
	var updatedFrom []string // what served the updated items, each once
	sus := newSuspicion(tx, o)
	copies := newCopyCache(tx, o)
	for i := range o.Tools {
		t := &o.Tools[i]
		key, what := itemKey(t.Item, t.Name), ItemWord(t.Item)
		blocked := func(f finding.Finding) {
			c.Tools = append(c.Tools, ToolState{Item: t.Item, Name: t.Name, Version: t.Version, Digest: t.Digest.String(), Status: StatusBlocked})
			f.Kind, f.Severity, f.Server, f.Item, f.Tool = finding.Impersonation, finding.Error, o.Server, t.Item, t.Name
			c.Findings = append(c.Findings, f)
		}
		if count[key] > 1 {
			// One name twice: a client cannot tell which it calls.
			if !offered[key] {
				blocked(finding.Finding{Message: fmt.Sprintf("server %s lists %s %q %d times; a client cannot tell which one it uses", o.Server, what, t.Name, count[key])})
			}
			offered[key] = true
			continue
		}
		offered[key] = true
		if hasControl(t.Name) {
			// Control characters rewrite what a terminal or a log shows.
			blocked(finding.Finding{Version: t.Version, Live: t.Digest.String(),
				Message: fmt.Sprintf("server %s offers %s %q whose name holds control characters; it can pass for another name", o.Server, what, t.Name)})
			continue
		}
		var st ToolState
		var fs []finding.Finding
		var err error
		if was := updatedServed(tx, o, t); was != "" {
			// The approved definition, from an update of what served it:
			// one server_updated for the server speaks for it.
			c.Tools = append(c.Tools, ToolState{Item: t.Item, Name: t.Name, Version: t.Version, Digest: t.Digest.String(), Status: StatusOK})
			c.Updated = append(c.Updated, ItemRef(t.Item, t.Name))
			if !slices.Contains(updatedFrom, was) {
				updatedFrom = append(updatedFrom, was)
			}
			continue
		}
		if t.Item == ItemTool {
			st, fs, err = compareTool(tx, o, t, bySkeleton[confusable.Skeleton(t.Name)], copies)
		} else {
			st, fs, err = compareItem(tx, o, t, &copies.share)
		}
		if err != nil {
			return nil, err
		}
		c.Tools = append(c.Tools, st)
		c.Findings = append(c.Findings, fs...)
		if st.Status != StatusOK { // what is about to be approved, not what was
			c.Findings = append(c.Findings, sus.findings(t)...)
		} else if o.Served != "" {
			unserved, err := approvedUnserved(tx, o, t)
			if err != nil {
				return nil, err
			}
			if unserved {
				c.Unserved = append(c.Unserved, ItemRef(t.Item, t.Name))
			}
		}
	}
	if len(c.Updated) > 0 {
		c.Findings = append(c.Findings, updateFinding(o, c.Updated, updatedFrom))
	}
	if err := compareRemoved(tx, o, c, offered); err != nil {
		return nil, err
	}
	return c, nil
}

// replayedBundle is the downgrade finding of a bundle older (a lower
// sequence) than one approved for the server before, or nil.
func replayedBundle(o *Observation, info *ServerInfo) *finding.Finding {
	if info == nil || o.Sequence == 0 || o.Sequence >= info.MaxSequence {
		return nil
	}
	var names []string
	for _, t := range o.Tools {
		names = append(names, t.Name)
	}
	return &finding.Finding{Kind: finding.Downgrade, Severity: finding.Error, Server: o.Server,
		Message: fmt.Sprintf("server %s: bundle sequence %d is lower than %d approved before: an older bundle is being replayed (tools %s)",
			o.Server, o.Sequence, info.MaxSequence, strings.Join(names, ", "))}
}

// approvedUnserved reports whether the approved definition t matches was
// approved without recording what served it (Comparison.Unserved).
func approvedUnserved(tx *kvTx, o *Observation, t *Observed) (bool, error) {
	p, err := readItem(tx, o.Server, t.Item, t.Name) // checked by checkLatest
	if err != nil {
		return false, err
	}
	if p != nil {
		p = matchingVariant(p, o, t)
	}
	return p != nil && p.Served == "", nil
}

// compareRemoved adds to c the approved items of the server that o does
// not offer (offered, by itemKey): removed, if o lists their kind.
func compareRemoved(tx *kvTx, o *Observation, c *Comparison, offered map[string]bool) error {
	cur := tx.Bucket(bPins).Cursor()
	prefix := []byte(o.Server + "\x00")
	for k, v := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = cur.Next() {
		if offered[string(k[len(prefix):])] {
			continue
		}
		var p Pin
		if err := json.Unmarshal(v, &p); err != nil {
			return damagedError("pin", k, err)
		}
		if p.Item != ItemTool && !slices.Contains(o.Listed, p.Item) {
			continue // not asked for: not known to be gone
		}
		c.Tools = append(c.Tools, ToolState{Item: p.Item, Name: p.Tool, Version: p.Version, Digest: p.Digest, Status: StatusRemoved})
		c.Findings = append(c.Findings, finding.Finding{Kind: finding.Removed, Severity: finding.Info, Server: o.Server,
			Item: p.Item, Tool: p.Tool, Version: p.Version, PinnedDigest: p.Digest,
			Message: fmt.Sprintf("%s %q is approved on %s but no longer offered", ItemWord(p.Item), p.Tool, o.Server)})
	}
	return nil
}

// itemKey is the part of a pin's key after the server and its NUL: it
// tells the items of one server apart.
func itemKey(item, name string) string { return string(pinKeyOf("", item, name)[1:]) }

// ItemWord names an item kind in messages: "tool", "prompt",
// "resource", "resource template".
func ItemWord(item string) string {
	switch item {
	case ItemTool:
		return "tool"
	case ItemTemplate:
		return "resource template"
	}
	return item
}

// compareItem compares a prompt, resource or resource template with its
// pin: they are pinned by digest (no version, permissions or signer).
func compareItem(tx *kvTx, o *Observation, t *Observed, sc *shareCache) (ToolState, []finding.Finding, error) {
	st := ToolState{Item: t.Item, Name: t.Name, Digest: t.Digest.String(), Status: StatusOK}
	ref := o.Server + "/" + ItemRef(t.Item, t.Name)
	f := finding.Finding{Severity: finding.Error, Server: o.Server, Item: t.Item, Tool: t.Name, Live: t.Digest.String()}
	r, err := revokedBy(tx, o.Server, t)
	if err != nil {
		return st, nil, err
	}
	if r != nil {
		st.Status = StatusBlocked
		f.Kind, f.Message = finding.Revoked, fmt.Sprintf("%s %s: the definition %s", ItemWord(t.Item), ref, r.Digest)+revokedText(r)
		return st, []finding.Finding{f}, nil
	}
	full, err := readItem(tx, o.Server, t.Item, t.Name) // checked by checkLatest
	if err != nil {
		return st, nil, err
	}
	if full == nil {
		shared, err := sharedApproval(tx, o, t, sc)
		if err != nil || shared != "" {
			st.ApprovedAs = shared
			return st, nil, err
		}
	}
	p := full
	if p != nil {
		if p = matchingVariant(full, o, t); p == nil {
			p = closestVariant(full, t)
		}
	}
	switch {
	case p == nil:
		st.Status = StatusNew
		f.Kind, f.Message = finding.NewTool, fmt.Sprintf("%s %s is not approved: approval required", ItemWord(t.Item), ref)
		return st, []finding.Finding{f}, nil
	case p.Digest != t.Digest.String():
		st.Status = StatusChanged
		f.Kind, f.PinnedDigest = finding.RugPull, p.Digest
		if old, err := strictjson.Parse(p.Definition); err == nil {
			if cur, err := strictjson.Parse(t.Canonical); err == nil {
				f.Changes = etdi.Diff(old, cur)
				f.Fields = etdi.ChangedFields(f.Changes)
			}
		}
		f.Message = fmt.Sprintf("%s %s: definition changed since approval (%s)", ItemWord(t.Item), ref, strings.Join(f.Fields, ", ")) +
			variantHint(full, t.Item, t.Name)
		return st, []finding.Finding{f}, nil
	}
	return st, nil, nil
}

func strOr(p *string, none string) string {
	if p == nil {
		return none
	}
	return *p
}

// compareInstructions reports instructions that differ from those seen at
// approval, when both are known, and instructions of an approved server
// whose approval did not see them: the gate withholds both (docs/gate.md#runtime-gate).
func compareInstructions(o *Observation, info *ServerInfo) *finding.Finding {
	if !o.InstructionsKnown || info == nil {
		return nil
	}
	if !info.InstructionsKnown {
		if o.Instructions == nil || *o.Instructions == "" {
			return nil
		}
		return &finding.Finding{Kind: finding.NewInstructions, Severity: finding.Error, Server: o.Server,
			Fields: []string{"instructions"}, Changes: []etdi.Change{{Path: "/instructions", Op: "added", New: *o.Instructions}},
			Message: fmt.Sprintf("server %s: sends instructions that were never approved (its tools were approved without them)", o.Server)}
	}
	if (o.Instructions == nil) == (info.Instructions == nil) && strOr(o.Instructions, "") == strOr(info.Instructions, "") {
		return nil
	}
	old, cur := strOr(info.Instructions, ""), strOr(o.Instructions, "")
	ch := etdi.Change{Path: "/instructions", Op: "changed", Text: etdi.TextDiff(old, cur)}
	switch {
	case info.Instructions == nil:
		ch = etdi.Change{Path: "/instructions", Op: "added", New: cur}
	case o.Instructions == nil:
		ch = etdi.Change{Path: "/instructions", Op: "removed", Old: old}
	}
	return &finding.Finding{Kind: finding.InstructionsChanged, Severity: finding.Error, Server: o.Server,
		Fields: []string{"instructions"}, Changes: []etdi.Change{ch},
		Message: fmt.Sprintf("server %s: instructions changed since approval", o.Server)}
}

// revokedWhat names what revocation r of a tool withdraws: its signing
// key, a version, one definition or the tool.
func revokedWhat(r *Revocation) string {
	switch {
	case r.KeyID != "":
		return "its signing key " + r.KeyID
	case r.Version != "":
		return "version " + r.Version
	case r.Digest != "":
		// One approved definition (docs/storage.md#approved-variants): the others stay.
		return "the definition " + r.Digest
	}
	return "the tool"
}

// approvedAs is the state of tool t, without a pin of its own, that the
// approval of server shared covers (sharedApproval, whose error is err):
// approved, with the scopes of that approval.
func approvedAs(tx *kvTx, o *Observation, t *Observed, st ToolState, shared string, err error) (ToolState, []finding.Finding, error) {
	st.ApprovedAs = shared
	if err == nil {
		// The scopes of the approval that covers it (checked by
		// sharedApproval).
		var sp *Pin
		if sp, err = readItem(tx, shared, ItemTool, t.Name); sp != nil {
			if m := matchingVariant(sp, o, t); m != nil {
				st.Scopes = m.Scopes
			}
		}
	}
	return st, nil, err
}

// compareTool compares tool t of o with its pins: revoked, approved (its
// own pin, or a shared approval), new, or changed (a new signer or
// version, a downgrade, a rug pull of its definition, permissions or what
// serves it).
func compareTool(tx *kvTx, o *Observation, t *Observed, sameSkeleton []string, copies *copyCache) (ToolState, []finding.Finding, error) {
	st := ToolState{Name: t.Name, Version: t.Version, Digest: t.Digest.String(), Status: StatusOK}
	base := finding.Finding{Server: o.Server, Tool: t.Name, Version: t.Version, Live: t.Digest.String(),
		CurrentSigner: t.Signer.String()}
	with := func(k finding.Kind, sev finding.Severity, msg string) finding.Finding {
		f := base
		f.Kind, f.Severity, f.Message = k, sev, msg
		return f
	}
	ref := fmt.Sprintf("%s/%s", o.Server, t.Name)
	if t.Version != "" {
		ref += "@" + t.Version
	}
	r, err := revokedBy(tx, o.Server, t)
	if err != nil {
		return st, nil, err
	}
	if r != nil {
		st.Status = StatusBlocked
		f := with(finding.Revoked, finding.Error, fmt.Sprintf("tool %s: %s", ref, revokedWhat(r))+revokedText(r))
		f.KeyID = r.KeyID
		return st, []finding.Finding{f}, nil
	}
	full, err := readPin(tx, o.Server, t.Name) // checked by checkLatest
	if err != nil {
		return st, nil, err
	}
	if full == nil {
		shared, err := sharedApproval(tx, o, t, &copies.share)
		if err != nil || shared != "" {
			return approvedAs(tx, o, t, st, shared, err)
		}
		return compareNew(tx, o, t, sameSkeleton, st, with, ref, copies)
	}
	if m := matchingVariant(full, o, t); m != nil {
		st.Scopes = m.Scopes // with the approved digest, never another's
		return st, nil, nil  // one of the approved definitions
	}
	// Compared with the approved definition it is closest to: the
	// findings and the version logic are those of one pin.
	p := closestVariant(full, t)
	hint := variantHint(full, ItemTool, t.Name)
	pinned := func(f finding.Finding) finding.Finding {
		f.PinnedVersion, f.PinnedDigest, f.PinnedSigner = p.Version, p.Digest, p.Signer.String()
		return f
	}
	diff := func(f finding.Finding) finding.Finding {
		if old, err := strictjson.Parse(p.Definition); err == nil {
			if cur, err := strictjson.Parse(t.Canonical); err == nil {
				f.Changes = etdi.Diff(old, cur)
				f.Fields = etdi.ChangedFields(f.Changes)
			}
		}
		f.PermissionsAdded, f.PermissionsRemoved = PermissionDiff(p.Permissions, t.Permissions)
		return f
	}
	if p.Signer != t.Signer {
		if p.Signer.Kind == "none" {
			st.Status = StatusNew
			return st, []finding.Finding{pinned(diff(with(finding.NewSigner, finding.Error,
				fmt.Sprintf("tool %s was approved unsigned and is now signed by %s: approval required", ref, t.Signer))))}, nil
		}
		st.Status = StatusBlocked
		return st, []finding.Finding{pinned(with(finding.SignerChanged, finding.Error,
			fmt.Sprintf("tool %s was approved from %s and is now offered by %s", ref, p.Signer, t.Signer)))}, nil
	}
	if t.Version != "" && p.Version != "" && t.Version != p.Version {
		c, err := etdi.CompareVersions(t.Version, p.Version)
		if err != nil {
			return st, nil, err
		}
		if c < 0 {
			st.Status = StatusChanged
			return st, []finding.Finding{pinned(diff(with(finding.Downgrade, finding.Error,
				fmt.Sprintf("tool %s is older than the approved version %s", ref, p.Version))))}, nil
		}
		if c > 0 {
			st.Status = StatusNew
			f := pinned(diff(with(finding.NewVersion, finding.Error,
				fmt.Sprintf("tool %s is a new version (approved: %s): approval required", ref, p.Version))))
			f.Permissions = t.Permissions
			return st, []finding.Finding{f}, nil
		}
		// Equal precedence, different build metadata: compared like the
		// same version below.
	}
	if t.Digest.String() != p.Digest {
		st.Status = StatusChanged
		f := pinned(diff(with(finding.RugPull, finding.Error, "")))
		if t.Version != "" {
			f.Message = fmt.Sprintf("tool %s: definition changed since approval without a new version (%s)", ref, strings.Join(f.Fields, ", "))
		} else {
			f.Message = fmt.Sprintf("unsigned tool %s: definition changed since approval (%s)", ref, strings.Join(f.Fields, ", "))
		}
		f.Message += hint
		return st, []finding.Finding{f}, nil
	}
	if added, removed := PermissionDiff(p.Permissions, t.Permissions); len(added)+len(removed) > 0 {
		st.Status = StatusChanged
		f := pinned(with(finding.RugPull, finding.Error,
			fmt.Sprintf("tool %s: permissions changed since approval without a new version", ref)+hint))
		f.Fields = []string{"permissions"}
		f.PermissionsAdded, f.PermissionsRemoved = added, removed
		return st, []finding.Finding{f}, nil
	}
	if servedChanged(p, o) {
		st.Status = StatusChanged
		now := o.Served
		if now == "" {
			now = "what cannot be resolved (" + o.Unresolved + ")"
		}
		f := pinned(with(finding.RugPull, finding.Error,
			fmt.Sprintf("tool %s: the same definition is now served by %s; it was approved served by %s", ref, now, p.Served)+hint))
		f.Fields = []string{"served"}
		f.Changes = []etdi.Change{{Path: "/served", Op: "changed", Old: p.Served, New: o.Served}}
		return st, []finding.Finding{f}, nil
	}
	return st, nil, nil
}

func compareNew(tx *kvTx, o *Observation, t *Observed, sameSkeleton []string, st ToolState,
	with func(finding.Kind, finding.Severity, string) finding.Finding, ref string, copies *copyCache) (ToolState, []finding.Finding, error) {
	scan, err := copies.scan()
	if err != nil {
		return st, nil, err
	}
	n, err := nameElsewhere(tx, o, t, scan, copies)
	if err != nil {
		return st, nil, err
	}
	if len(n.others) > 0 {
		st.Status = StatusBlocked
		msg := fmt.Sprintf("tool %s: the name %q is approved on %s; this server shadows it", ref, t.Name, strings.Join(n.others, ", "))
		if len(n.why) > 0 {
			msg += " (" + strings.Join(n.why, "; ") + ")"
		}
		f := with(finding.Shadowing, finding.Error, msg)
		f.Servers = n.others
		return st, []finding.Finding{f}, nil
	}
	if n.sharedPin != nil {
		return rugPullOfShared(o, t, n.sharedPin, n.sharedDef, st, with, ref)
	}
	if looks := looksLike(t.Name, scan, sameSkeleton); len(looks) > 0 {
		st.Status = StatusBlocked
		f := with(finding.ConfusableName, finding.Error, fmt.Sprintf("tool %s: the name %q looks like %q", ref, t.Name, looks[0]))
		f.LooksLike = looks[0]
		f.Scripts = confusable.Scripts(t.Name)
		for _, name := range looks {
			srvs := scan.servers[name]
			for _, srv := range srvs {
				if !slices.Contains(f.Servers, srv) {
					f.Servers = append(f.Servers, srv)
				}
			}
		}
		return st, []finding.Finding{f}, nil
	}
	st.Status = StatusNew
	return st, newToolFindings(o, t, n, with, ref), nil
}

// elsewhere is what other servers approved under the name of a tool new
// to its server.
type elsewhere struct {
	// others shadow it (why says why, when a collision was refused);
	// copyOf are the same server under another name; collides are
	// unsigned servers whose tool of the same name it neither names nor
	// imitates.
	others, why, copyOf, collides []string
	// elseServed is a copy whose definitions another artifact served.
	elseServed *Pin
	// sharedPin is a pin of the same artifact under another name, and
	// sharedDef its other definition (sameArtifact).
	sharedPin, sharedDef *Pin
}

// nameElsewhere sorts the other servers that approved t's name (scan):
// copies of this server, the same artifact under another name, collisions
// a host keeps apart, and shadows.
func nameElsewhere(tx *kvTx, o *Observation, t *Observed, scan *pinScan, copies *copyCache) (*elsewhere, error) {
	n := &elsewhere{}
	for _, srv := range scan.servers[t.Name] {
		if srv == o.Server {
			continue
		}
		p, err := getPin(tx, srv, t.Name)
		if err != nil {
			return nil, err
		}
		// The same server configured under another name offers the very
		// definition approved there: a new server to approve, not a
		// shadow. Anything else under an approved name shadows it.
		if p != nil && p.Digest == t.Digest.String() && p.Signer == t.Signer && p.Version == t.Version {
			whole, err := copies.wholeCopyOf(srv)
			if err != nil {
				return nil, err
			}
			if whole {
				n.copyOf = append(n.copyOf, srv)
				if n.elseServed == nil && o.Served != "" && p.Served != "" && p.Served != o.Served {
					n.elseServed = p
				}
				continue
			}
		}
		if p == nil {
			n.others = append(n.others, srv)
			continue
		}
		// The same artifact, verified, under a name without its own pin
		// of the tool: its other definition is a change of the tool
		// approved there (docs/storage.md#one-artifact-under-several-configuration-names).
		if v := sameArtifact(o, t, p); v != nil {
			if n.sharedPin == nil {
				n.sharedPin, n.sharedDef = p, v
			}
			continue
		}
		reason, err := collisionRefused(o, t, srv, p, copies)
		if err != nil {
			return nil, err
		}
		if reason != "" {
			n.others = append(n.others, srv)
			n.why = append(n.why, reason)
			continue
		}
		n.collides = append(n.collides, srv)
	}
	return n, nil
}

// looksLike returns the approved names (scan) and the names of this
// listing (sameSkeleton) that look like name and are not it.
func looksLike(name string, scan *pinScan, sameSkeleton []string) []string {
	var looks []string
	for _, n := range scan.skeletons[skeletonOf(name)] {
		if n != name {
			looks = append(looks, n)
		}
	}
	for _, n := range sameSkeleton {
		if n != name && !slices.Contains(looks, n) {
			looks = append(looks, n)
		}
	}
	return looks
}

// newToolFindings are the findings of a tool new to its server that
// nothing blocks: new_tool, naming the copies of the server (n), and the
// warnings of a name collision or a name mixing scripts.
func newToolFindings(o *Observation, t *Observed, n *elsewhere, with func(finding.Kind, finding.Severity, string) finding.Finding, ref string) []finding.Finding {
	f := with(finding.NewTool, finding.Error, fmt.Sprintf("tool %s is not approved: approval required", ref))
	if len(n.copyOf) > 0 {
		f.Message = fmt.Sprintf("tool %s is not approved: approval required (the same server is approved as %s)", ref, strings.Join(n.copyOf, ", "))
		if n.elseServed != nil {
			// The same definitions, not known to be the same server:
			// what serves them differs.
			f.Message = fmt.Sprintf("tool %s is not approved: approval required (the same definitions are approved on %s, served by %s; this server is served by %s)",
				ref, n.elseServed.Server, n.elseServed.Served, o.Served)
		}
		f.Servers = n.copyOf
	}
	f.Permissions = t.Permissions
	if f.Permissions == nil {
		f.Permissions = []etdi.Permission{}
	}
	fs := []finding.Finding{f}
	if len(n.collides) > 0 {
		w := with(finding.NameCollision, finding.Warning, fmt.Sprintf("tool %s: the name %q is also approved on %s, another unsigned server; "+
			"hosts keep each server's tools apart, and nothing in its definition or its server's instructions names or imitates that tool: approve it as a new tool",
			ref, t.Name, strings.Join(n.collides, ", ")))
		w.Servers = n.collides
		fs = append(fs, w)
	}
	if confusable.MixedScript(t.Name) || confusable.Invisible(t.Name) {
		w := with(finding.MixedScript, finding.Warning, fmt.Sprintf("tool %s: the name %q mixes scripts (%s) or holds invisible characters",
			ref, t.Name, strings.Join(confusable.Scripts(t.Name), ", ")))
		w.Scripts = confusable.Scripts(t.Name)
		fs = append(fs, w)
	}
	return fs
}

// PermissionDiff is [etdi.PermissionDiff]: the permissions in cur but not
// old, and in old but not cur.
func PermissionDiff(old, cur []etdi.Permission) (added, removed []etdi.Permission) {
	return etdi.PermissionDiff(old, cur)
}

// hasControl reports whether s holds a control character (C0, DEL, C1).
func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

// IsUpdate reports whether an unsigned server whose approved definitions
// were served by was (found at wasAt), and are served by now (found at
// nowAt), was updated rather than replaced: both name an artifact exactly
// ([ArtifactIdentity]) of the same type and name (the npm or PyPI package,
// the image, the file), and they differ (another version or digest); an
// npm or PyPI package's version must not be older (semantic versions),
// and an npm package's or an MCPB file's must be a semantic version of
// another precedence (npm never serves one version with two contents, and
// an MCPB file of one version with other bytes was changed). A
// file artifact names only its base name: it is the same file only when
// both were found at the same path ([Pin.ServedAt]), known on both sides.
// Another package, another file (of the same name elsewhere, or where it
// was is unknown), an endpoint or an unresolved launch is not an update;
// a signed server's artifacts are its bundle's to name (SPEC.md §4.1).
func IsUpdate(server, was, wasAt, now, nowAt string) bool {
	if !strings.HasPrefix(server, "unsigned:") || was == now {
		return false
	}
	if strings.HasPrefix(was, "file ") && (wasAt == "" || wasAt != nowAt) {
		return false
	}
	a, ok := ArtifactIdentity(was)
	if !ok {
		return false
	}
	b, ok := ArtifactIdentity(now)
	if !ok || artifactName(a) != artifactName(b) {
		return false
	}
	if typ, _, _ := strings.Cut(a, " "); typ == "npm" || typ == "pypi" || typ == "mcpb" {
		c, err := etdi.CompareVersions(artifactVersion(b), artifactVersion(a))
		if (typ == "npm" || typ == "mcpb") && (err != nil || c == 0) {
			// npm's versions are semantic ones, and the registry never
			// serves one version (build metadata aside, which it drops)
			// with two contents: another registry's or a tampered
			// package of that name. An MCPB file of the same version
			// with other bytes is no update either.
			return false
		}
		if err == nil && c < 0 {
			return false // an older version: a downgrade, not an update
		}
	}
	return true
}

// artifactVersion is the version of an npm or PyPI artifact identity.
func artifactVersion(id string) string {
	_, rest, _ := strings.Cut(id, " ")
	name, _, _ := strings.Cut(rest, " ")
	return name[strings.LastIndexByte(name, '@')+1:]
}

// artifactName is the type and name of an artifact identity, without its
// version (npm, pypi) or tag (oci) and its digest.
func artifactName(id string) string {
	typ, rest, _ := strings.Cut(id, " ")
	name, _, _ := strings.Cut(rest, " ")
	if typ != "file" {
		if i := strings.LastIndexByte(name, '@'); i > 0 {
			name = name[:i]
		}
	}
	return typ + " " + name
}

// updatedVariant returns the approved definition of p that t matches in
// every way but what served it, when what serves it now is an update of
// that (IsUpdate); nil otherwise, and when t matches a definition
// exactly.
func updatedVariant(p *Pin, o *Observation, t *Observed) *Pin {
	if o.Served == "" || matchingVariant(p, o, t) != nil {
		return nil
	}
	for _, v := range p.All() {
		if v.Served == "" || !IsUpdate(o.Server, v.Served, v.ServedAt, o.Served, o.ServedAt) {
			continue
		}
		w := v
		w.Served = o.Served
		if matches(&w, o, t) {
			return &v
		}
	}
	return nil
}

// updatedServed returns what served t's approved definition when t is
// that definition served by an update of it (updatedVariant), else "".
// A revoked definition is never an update: compareTool reports it.
func updatedServed(tx *kvTx, o *Observation, t *Observed) string {
	if o.Served == "" || !strings.HasPrefix(o.Server, "unsigned:") {
		return ""
	}
	p, err := readItem(tx, o.Server, t.Item, t.Name) // checked by checkLatest
	if err != nil || p == nil {
		return ""
	}
	v := updatedVariant(p, o, t)
	if v == nil {
		return ""
	}
	if r, err := revokedBy(tx, o.Server, t); err != nil || r != nil {
		return ""
	}
	return v.Served
}

// updateRule is the update rule in effect for o: its OnUpdate, with ask
// relayed as allow in a gate.
func updateRule(o *Observation) string {
	switch o.OnUpdate {
	case UpdateAllow, UpdateBlock:
		return o.OnUpdate
	}
	if o.InGate {
		return UpdateAllow
	}
	return UpdateAsk
}

// updateFinding is the one server_updated finding of a server whose
// items refs are their approved definitions served by an update of what
// served them (from): an error under ask (approval required) and block
// (exit 11), a warning under allow and in a gate under ask.
func updateFinding(o *Observation, refs, from []string) finding.Finding {
	rule := o.OnUpdate
	if rule == "" {
		rule = UpdateAsk
	}
	was := strings.Join(from, ", ")
	f := finding.Finding{Kind: finding.ServerUpdated, Severity: finding.Error, Server: o.Server, Rule: rule,
		PinnedServed: was, Served: o.Served, Fields: []string{"served"},
		Changes: []etdi.Change{{Path: "/served", Op: "changed", Old: was, New: o.Served}}}
	what := fmt.Sprintf("server %s was updated: %s -> %s; its %d approved definition(s) are unchanged", o.Server, was, o.Served, len(refs))
	switch updateRule(o) {
	case UpdateBlock:
		f.Message = what + "; the trust policy blocks updates of unsigned servers (its unsigned onUpdate rule is block: etdi trust unsigned --help)"
	case UpdateAllow:
		f.Severity = finding.Warning
		f.Message = what + "; accepted (trust policy: " + rule + "); approving the update records it"
	default:
		f.Message = what + "; approval required (trust policy: ask)"
	}
	return f
}

// servedChanged reports whether the pin was approved served by something
// other than what serves the observation now: another artifact or
// endpoint, or a launch that cannot be resolved any more (fail closed).
// A pin approved before etdi recorded it, and an observation of no server
// (a saved listing), are judged by their definitions alone.
func servedChanged(p *Pin, o *Observation) bool {
	if p.Served == "" {
		return false
	}
	if o.Served == "" {
		return o.Unresolved != ""
	}
	return p.Served != o.Served
}
