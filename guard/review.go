package guard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/pin"
)

// Category groups the decisions a review asks for (docs/check.md#reviewing-what-is-pending): a
// person approves in bulk by naming categories, never by approving
// everything pending.
type Category string

// The categories of pending decisions, in the order a review walks them.
const (
	// CategoryNewServers: every item of a server with no approved item.
	CategoryNewServers Category = "new-servers"
	// CategoryNewTools: a new tool, version, signer or instructions of a
	// server with approved items.
	CategoryNewTools Category = "new-tools"
	// CategoryChanges: a changed definition (rug pull) or a downgrade.
	CategoryChanges Category = "changes"
	// CategoryImpersonation: another signer, shadowing, a look-alike name.
	CategoryImpersonation Category = "impersonation"
	// CategoryUpdates: a new implementation of a server with identical
	// definitions (kind server_updated).
	CategoryUpdates Category = "updates"
	// CategoryCollisions: a tool name another unsigned server offers too
	// (kind name_collision).
	CategoryCollisions Category = "collisions"
)

// categoryInfo says where a category stands in a review and whether it
// may be approved in bulk.
type categoryInfo struct {
	rank int
	// bulk: naming the category approves its items without asking (a
	// decision to trust something new, never one about a change to what
	// was trusted or about who signs it).
	bulk bool
}

var categoryTable = map[Category]categoryInfo{
	CategoryNewServers:    {0, true},
	CategoryNewTools:      {1, true},
	CategoryChanges:       {2, false},
	CategoryImpersonation: {3, false},
	CategoryUpdates:       {4, true},
	CategoryCollisions:    {5, true},
}

// kindCategory is the category of each kind a review knows by name; the
// kinds of updates and collisions are named by their strings, so that
// the table holds them whichever package defines them.
var kindCategory = map[finding.Kind]Category{
	finding.NewTool:         CategoryNewTools,
	finding.NewVersion:      CategoryNewTools,
	finding.NewSigner:       CategoryNewTools,
	finding.NewInstructions: CategoryNewTools,
	finding.RugPull:         CategoryChanges,
	finding.Downgrade:       CategoryChanges,
	finding.SignerChanged:   CategoryImpersonation,
	finding.Shadowing:       CategoryImpersonation,
	finding.ConfusableName:  CategoryImpersonation,
	"server_updated":        CategoryUpdates,
	"name_collision":        CategoryCollisions,
}

// Categories lists the categories a review knows, in review order.
func Categories() []Category {
	out := make([]Category, 0, len(categoryTable))
	for c := range categoryTable {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Category) int { return categoryTable[a].rank - categoryTable[b].rank })
	return out
}

// BulkCategories lists the categories that may be approved by naming
// them ([ReviewItem.Selected]), in review order.
func BulkCategories() []Category {
	var out []Category
	for _, c := range Categories() {
		if categoryTable[c].bulk {
			out = append(out, c)
		}
	}
	return out
}

// CategoryOf is the category of a finding of kind k that a review
// decides about, and whether it is one. An error finding of any kind
// that approving resolves is one: a kind the table above does not name
// is its own category, named by the kind, approved in bulk only when
// approving the server resolves it ([finding.Approvable]), never when the
// tool must be named. A warning is one only when its kind is named in
// the table (a name collision is a warning on a new tool).
func CategoryOf(f finding.Finding) (Category, bool) {
	if c, ok := kindCategory[f.Kind]; ok && (f.Severity == finding.Error || f.Severity == finding.Warning) {
		if f.Severity == finding.Warning && c != CategoryCollisions {
			return "", false
		}
		return c, true
	}
	if f.Severity != finding.Error || f.Kind.Approvability() == finding.NotApprovable {
		return "", false
	}
	return Category(f.Kind), true
}

// categoryRank and categoryBulk read the table; a category named by an
// unknown kind follows the known ones, approved in bulk only when its
// kind is.
func categoryRank(c Category) int {
	if info, ok := categoryTable[c]; ok {
		return info.rank
	}
	return len(categoryTable)
}

func categoryBulk(c Category) bool {
	if info, ok := categoryTable[c]; ok {
		return info.bulk
	}
	return finding.Kind(c).Approvability() == finding.Approvable
}

// ParseCategories parses the categories a person names to approve in
// bulk ("updates,new-tools"). Each must be a category a review knows
// (or the kind of an approvable finding), and one approved in bulk:
// changed definitions and impersonation are decided one by one.
func ParseCategories(s string) ([]Category, error) {
	var out []Category
	for _, part := range strings.Split(s, ",") {
		c := Category(strings.TrimSpace(part))
		if c == "" {
			continue
		}
		_, known := categoryTable[c]
		if !known && finding.Kind(c).Approvability() == finding.NotApprovable {
			return nil, fmt.Errorf("unknown category %q; the categories are %s", c, joinCategories(BulkCategories()))
		}
		if !categoryBulk(c) {
			return nil, fmt.Errorf("%s are never approved in bulk: each is decided on its own (etdi review on a terminal, or etdi pin approve --tool NAME)", c)
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("name the categories to approve: %s", joinCategories(BulkCategories()))
	}
	return out, nil
}

func joinCategories(cs []Category) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// ReviewItem is one pending decision: an item of a server (a tool, a
// prompt, resource or resource template, the server's instructions, or
// the server itself) with every finding about it that a person decides
// on.
type ReviewItem struct {
	// Report is the index of the report the item comes from; Also the
	// indexes of other reports with the very same decision (the same
	// server configured in several hosts): approving it once approves it
	// for all of them.
	Report int   `json:"-"`
	Also   []int `json:"-"`
	// Server is the pin identity; Item and Tool name the item (Tool
	// empty: about the server or its instructions); Ref is
	// pin.ItemRef(Item, Tool).
	Server string `json:"server"`
	Item   string `json:"item,omitempty"`
	Tool   string `json:"tool,omitempty"`
	Ref    string `json:"ref"`
	// Category is the item's most specific category (what the review
	// shows it under), Categories all of them.
	Category   Category   `json:"category"`
	Categories []Category `json:"categories"`
	// Kinds are the kinds of the findings decided on.
	Kinds []finding.Kind `json:"kinds"`
	// Bulk says whether naming its categories approves it (Selected).
	Bulk bool `json:"bulk"`
	// Findings are the error findings decided on and every warning about
	// the item (suspicious text, a collision), for the person to see.
	Findings []finding.Finding `json:"findings"`
	// decided are the fingerprints of the error findings decided on.
	decided []string
}

// Selected reports whether naming cats approves the item: it may be
// approved in bulk and every one of its categories is named.
func (it *ReviewItem) Selected(cats []Category) bool {
	if !it.Bulk {
		return false
	}
	for _, c := range it.Categories {
		if !slices.Contains(cats, c) {
			return false
		}
	}
	return true
}

// Instructions reports whether the item is about the server's
// instructions.
func (it *ReviewItem) Instructions() bool {
	return slices.ContainsFunc(it.Kinds, finding.Kind.AboutInstructions)
}

// fingerprint identifies a finding as a person saw it.
func fingerprint(f finding.Finding) string {
	return strings.Join([]string{string(f.Kind), string(f.Severity), f.Item, f.Tool, f.Version, f.Live, f.Signed, f.PinnedDigest, f.PinnedVersion, f.CurrentSigner, f.Message}, "\x00")
}

// Pending lists every decision the reports wait for, in review order:
// by category (new servers, new tools, changed definitions,
// impersonation, updates, collisions, then any other kind), then by
// report, then by item. A report that was not compared with the pins, or
// whose verification or whole server has an error that approving does
// not resolve, has nothing pending: nothing of it can be approved. A
// decision that several reports wait for alike (one server in several
// hosts: the same findings, served by the same implementation) is listed
// once.
func Pending(reports []*Report) []ReviewItem {
	var items []ReviewItem
	seen := map[string]int{}
	for i, r := range reports {
		if r == nil || r.Blocked() || r.Comparison == nil || !approvable(r) {
			continue
		}
		newServer := isNewServer(r)
		order, groups := findingGroups(r)
		for _, key := range order {
			it, ok := reviewItem(i, r, key, groups[key], newServer)
			if !ok {
				continue // nothing to decide, or nothing approving resolves
			}
			// The same decision only when the same implementation serves
			// it: an entry of the same name running another program is
			// another decision, not "the same in" another host.
			served := ""
			if r.Observation != nil {
				served = r.Observation.Served
			}
			key := it.Server + "\x01" + served + "\x01" + it.Ref + "\x01" + strings.Join(it.decided, "\x01")
			if j, ok := seen[key]; ok {
				items[j].Also = append(items[j].Also, i)
				continue
			}
			seen[key] = len(items)
			items = append(items, *it)
		}
	}
	slices.SortStableFunc(items, func(a, b ReviewItem) int {
		if d := categoryRank(a.Category) - categoryRank(b.Category); d != 0 {
			return d
		}
		if d := a.Report - b.Report; d != 0 {
			return d
		}
		return strings.Compare(a.Ref, b.Ref)
	})
	return items
}

// instructionsKey is the group of r's findings about its instructions.
const instructionsKey = "\x00instructions"

// isNewServer reports whether r is of a new server: something is new and
// nothing matches, differs from or misses a pin of its own.
func isNewServer(r *Report) bool {
	newServer := false
	for _, t := range r.Tools {
		if t.Status == pin.StatusOK || t.Status == pin.StatusChanged || t.Status == pin.StatusRemoved {
			return false
		}
		newServer = newServer || t.Status == pin.StatusNew
	}
	return newServer
}

// findingGroups groups r's findings by the entry they are about (those
// about the instructions under instructionsKey), in the order of their
// first finding.
func findingGroups(r *Report) ([]string, map[string][]finding.Finding) {
	groups := map[string][]finding.Finding{}
	var order []string
	for _, f := range r.Findings[:len(r.Findings)-len(r.command)] { // the command's are no item's
		key := pin.ItemRef(f.Item, f.Tool)
		if f.Kind.AboutInstructions() {
			key = instructionsKey
		}
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], f)
	}
	return order, groups
}

// reviewItem is the decision the findings fs of report i (r) about one
// entry (key) wait for; false when none of them asks for a decision, or
// one of them is an error that approving does not resolve.
func reviewItem(i int, r *Report, key string, fs []finding.Finding, newServer bool) (*ReviewItem, bool) {
	it := &ReviewItem{Report: i, Server: r.Server, Item: fs[0].Item, Tool: fs[0].Tool, Ref: pin.ItemRef(fs[0].Item, fs[0].Tool), Bulk: true}
	if key == instructionsKey {
		it.Item, it.Tool, it.Ref = "", "", ""
	}
	asks, blocked := false, false
	for _, f := range fs {
		it.Findings = append(it.Findings, f)
		c, ok := CategoryOf(f)
		if f.Severity == finding.Error {
			it.decided = append(it.decided, fingerprint(f))
			switch {
			case !ok:
				blocked = true // revoked, or otherwise never approved
			case f.Kind.Approvability() != finding.Approvable:
				it.Bulk = false // the item must be named: decided on its own
			}
			asks = asks || ok
		}
		if !ok {
			continue
		}
		if newServer && c == CategoryNewTools {
			c = CategoryNewServers
		}
		it.addCategory(f.Kind, c)
	}
	return it, asks && !blocked
}

// addCategory adds a finding of kind k and category c to it: its kinds,
// its categories, the highest-ranked category and whether it may be
// approved in bulk.
func (it *ReviewItem) addCategory(k finding.Kind, c Category) {
	if !slices.Contains(it.Kinds, k) {
		it.Kinds = append(it.Kinds, k)
	}
	if !slices.Contains(it.Categories, c) {
		it.Categories = append(it.Categories, c)
	}
	if it.Category == "" || categoryRank(c) > categoryRank(it.Category) {
		it.Category = c
	}
	it.Bulk = it.Bulk && categoryBulk(c)
}

// approvable reports whether anything of r can be approved: its
// verification found no error, and every error finding about the whole
// server is of a category approved in bulk (an update): any other (a
// replayed older bundle, a revoked key) refuses everything.
func approvable(r *Report) bool {
	for _, f := range r.Observed() {
		if f.Severity == finding.Error {
			return false
		}
	}
	for _, f := range r.Findings {
		if f.Severity != finding.Error || f.Tool != "" || f.Kind.AboutInstructions() {
			continue
		}
		if c, ok := CategoryOf(f); !ok || !categoryBulk(c) {
			return false
		}
	}
	return true
}

// Applied is what [Apply] did for one report.
type Applied struct {
	// Report is the index of the report; Result what Approve did (nil
	// when nothing of the report was accepted).
	Report int
	Result *ApproveResult
	// Withdrawn lists the accepted items not approved because what they
	// are changed since the person decided (another etdi approved or
	// revoked meanwhile): they are to be reviewed again.
	Withdrawn []string
	// After is the report compared with the pins after approving (the
	// report as it was when nothing of it was touched).
	After *Report
}

// Apply approves the accepted items, each through the report it comes
// from, in one [Approve] per report, and records each approval in the
// history as [Approve] does. An item is approved only as the person saw
// it: if a finding it would approve differs now from those in the item,
// nothing of that report is approved and its items are listed as
// Withdrawn. Every report touched (an item's own or one of its Also) is
// compared again, so After says where each server stands.
func Apply(ctx context.Context, reports []*Report, accepted []ReviewItem) ([]Applied, error) {
	byReport := map[int][]ReviewItem{}
	touched := map[int]bool{}
	for _, it := range accepted {
		if it.Report < 0 || it.Report >= len(reports) || reports[it.Report] == nil {
			return nil, fmt.Errorf("guard: review item %s/%s names no report", it.Server, it.Ref)
		}
		if reports[it.Report].Server != it.Server {
			return nil, fmt.Errorf("guard: review item %s/%s does not belong to report %s", it.Server, it.Ref, reports[it.Report].Server)
		}
		byReport[it.Report] = append(byReport[it.Report], it)
		touched[it.Report] = true
		for _, j := range it.Also {
			if j >= 0 && j < len(reports) && reports[j] != nil {
				touched[j] = true
			}
		}
	}
	var out []Applied
	for i, r := range reports {
		if !touched[i] {
			continue
		}
		a := Applied{Report: i, After: r}
		if its := byReport[i]; len(its) > 0 {
			res, err := applyReport(ctx, r, its)
			if err != nil {
				return out, err
			}
			a.Result = res
			if res.Withdrawn {
				for _, it := range its {
					a.Withdrawn = append(a.Withdrawn, it.Ref)
				}
			}
		}
		out = append(out, a)
	}
	// Compare again once everything is approved: an approval through one
	// report settles the same decision of the others.
	for k := range out {
		r := out[k].After
		if r.Blocked() || r.opts.Pins == "" {
			continue
		}
		var c *pin.Comparison
		err := r.opts.WithPins(true, func(s *pin.Store) error {
			var err error
			c, err = s.Compare(r.Observation)
			return err
		})
		if errors.Is(err, errNoPins) {
			continue
		}
		if err != nil {
			return out, err
		}
		out[k].After = r.After(c)
	}
	return out, nil
}

// applyReport approves the accepted items of one report.
func applyReport(ctx context.Context, r *Report, its []ReviewItem) (*ApproveResult, error) {
	d := decisionsOf(its)
	if d.server {
		if refused := d.unaccepted(r); refused != nil {
			return refused, nil
		}
	}
	var total *ApproveResult
	if d.server {
		res, err := Approve(ctx, r, ApproveOptions{AcceptInstructions: d.accept, Review: func(now *pin.Comparison) bool { return d.reviewed(now, true) }})
		if err != nil || res.Withdrawn {
			return res, err
		}
		total = res
		if d.names = stillNamed(d.names, res.Comparison); len(d.names) == 0 {
			return total, nil
		}
		d.accept = false
	}
	res, err := Approve(ctx, r, ApproveOptions{Tools: d.names, AcceptInstructions: d.accept, Review: func(now *pin.Comparison) bool { return d.reviewed(now, false) }})
	if err != nil || total == nil {
		return res, err
	}
	total.Approved = append(total.Approved, res.Approved...)
	total.Refused = res.Refused
	total.Comparison, total.Withdrawn = res.Comparison, res.Withdrawn
	total.InstructionsRecorded = total.InstructionsRecorded || res.InstructionsRecorded
	return total, nil
}

// reviewDecisions are what the person accepted of one report: the
// findings they decided on (by fingerprint), the entries they named,
// whether they accepted its instructions, and whether they decided about
// the whole server.
type reviewDecisions struct {
	decided        map[string]bool
	names          []string
	accept, server bool
}

// decisionsOf collects what the accepted items its decide.
func decisionsOf(its []ReviewItem) *reviewDecisions {
	d := &reviewDecisions{decided: map[string]bool{}}
	for _, it := range its {
		for _, f := range it.decided {
			d.decided[f] = true
		}
		switch {
		case it.Instructions():
			d.accept = true
		case it.Tool == "":
			d.server = true
		default:
			d.names = append(d.names, it.Ref)
		}
	}
	if len(d.names) == 0 && d.accept {
		// Instructions alone are accepted with the server (no tool
		// named), as a decision about the whole server is.
		d.server = true
	}
	return d
}

// unaccepted refuses a decision about the whole server, which is
// approved by approving the server (no tool named) and so also approves
// every new tool and version, unless each of them was accepted too; nil
// when they were.
func (d *reviewDecisions) unaccepted(r *Report) *ApproveResult {
	for _, f := range r.Findings {
		if f.Severity == finding.Error && f.Kind.Approvability() == finding.Approvable && (d.accept || !f.Kind.AboutInstructions()) && !d.decided[fingerprint(f)] {
			return &ApproveResult{Refused: []pin.Refusal{{Kind: string(f.Kind),
				Reason: "a decision about the whole server is approved with every new item of it; approve them too, or use etdi pin approve"}}, Comparison: r.Comparison}
		}
	}
	return nil
}

// reviewed approves only what the person saw: every error finding of now
// the approval would act on (all: approving the whole server) must be one
// they decided on.
func (d *reviewDecisions) reviewed(now *pin.Comparison, all bool) bool {
	for _, f := range now.Findings {
		if f.Severity != finding.Error {
			continue
		}
		acts := slices.Contains(d.names, pin.ItemRef(f.Item, f.Tool)) ||
			(d.accept && f.Kind.AboutInstructions()) ||
			(all && (d.accept || !f.Kind.AboutInstructions()) && (f.Kind.Approvability() == finding.Approvable || f.Tool == ""))
		if acts && !d.decided[fingerprint(f)] {
			return false
		}
	}
	return true
}

// stillNamed are the entries of names that c still has an error finding
// about: what approving the whole server left to approve by name.
func stillNamed(names []string, c *pin.Comparison) []string {
	var byName []string
	for _, n := range names {
		for _, f := range c.Findings {
			if pin.ItemRef(f.Item, f.Tool) == n && f.Severity == finding.Error {
				byName = append(byName, n)
				break
			}
		}
	}
	return byName
}
