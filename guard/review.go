package guard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/verify"
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
var kindCategory = map[verify.Kind]Category{
	verify.NewTool:         CategoryNewTools,
	verify.NewVersion:      CategoryNewTools,
	verify.NewSigner:       CategoryNewTools,
	verify.NewInstructions: CategoryNewTools,
	verify.RugPull:         CategoryChanges,
	verify.Downgrade:       CategoryChanges,
	verify.SignerChanged:   CategoryImpersonation,
	verify.Shadowing:       CategoryImpersonation,
	verify.ConfusableName:  CategoryImpersonation,
	"server_updated":       CategoryUpdates,
	"name_collision":       CategoryCollisions,
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
// them (ReviewItem.Selected), in review order.
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
// approving the server resolves it (verify.Approvable), never when the
// tool must be named. A warning is one only when its kind is named in
// the table (a name collision is a warning on a new tool).
func CategoryOf(f verify.Finding) (Category, bool) {
	if c, ok := kindCategory[f.Kind]; ok && (f.Severity == verify.Error || f.Severity == verify.Warning) {
		if f.Severity == verify.Warning && c != CategoryCollisions {
			return "", false
		}
		return c, true
	}
	if f.Severity != verify.Error || f.Kind.Approval() == verify.NotApprovable {
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
	return verify.Kind(c).Approval() == verify.Approvable
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
		if !known && verify.Kind(c).Approval() == verify.NotApprovable {
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
	Kinds []verify.Kind `json:"kinds"`
	// Bulk says whether naming its categories approves it (Selected).
	Bulk bool `json:"bulk"`
	// Findings are the error findings decided on and every warning about
	// the item (suspicious text, a collision), for the person to see.
	Findings []verify.Finding `json:"findings"`
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
	return slices.ContainsFunc(it.Kinds, verify.Kind.AboutInstructions)
}

// fingerprint identifies a finding as a person saw it.
func fingerprint(f verify.Finding) string {
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
		// A new server: something is new and nothing matches, differs
		// from or misses a pin of its own.
		newServer := false
		for _, t := range r.Tools {
			if t.Status == "ok" || t.Status == "changed" || t.Status == "removed" {
				newServer = false
				break
			}
			newServer = newServer || t.Status == "new"
		}
		groups := map[string][]verify.Finding{}
		var order []string
		for _, f := range r.Findings {
			key := pin.ItemRef(f.Item, f.Tool)
			if f.Kind.AboutInstructions() {
				key = "\x00instructions"
			}
			if _, ok := groups[key]; !ok {
				order = append(order, key)
			}
			groups[key] = append(groups[key], f)
		}
		for _, key := range order {
			fs := groups[key]
			it := &ReviewItem{Report: i, Server: r.Server, Item: fs[0].Item, Tool: fs[0].Tool, Ref: pin.ItemRef(fs[0].Item, fs[0].Tool), Bulk: true}
			if key == "\x00instructions" {
				it.Item, it.Tool, it.Ref = "", "", ""
			}
			asks, blocked := false, false
			for _, f := range fs {
				it.Findings = append(it.Findings, f)
				c, ok := CategoryOf(f)
				if f.Severity == verify.Error {
					it.decided = append(it.decided, fingerprint(f))
					switch {
					case !ok:
						blocked = true // revoked, or otherwise never approved
					case f.Kind.Approval() != verify.Approvable:
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
				if !slices.Contains(it.Kinds, f.Kind) {
					it.Kinds = append(it.Kinds, f.Kind)
				}
				if !slices.Contains(it.Categories, c) {
					it.Categories = append(it.Categories, c)
				}
				if it.Category == "" || categoryRank(c) > categoryRank(it.Category) {
					it.Category = c
				}
				it.Bulk = it.Bulk && categoryBulk(c)
			}
			if !asks || blocked {
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

// approvable reports whether anything of r can be approved: its
// verification found no error, and every error finding about the whole
// server is of a category approved in bulk (an update): any other (a
// replayed older bundle, a revoked key) refuses everything.
func approvable(r *Report) bool {
	for _, f := range r.Observed() {
		if f.Severity == verify.Error {
			return false
		}
	}
	for _, f := range r.Findings {
		if f.Severity != verify.Error || f.Tool != "" || f.Kind.AboutInstructions() {
			continue
		}
		if c, ok := CategoryOf(f); !ok || !categoryBulk(c) {
			return false
		}
	}
	return true
}

// Applied is what Apply did for one report.
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
// from, in one Approve per report, and records each approval in the
// history as Approve does. An item is approved only as the person saw
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
		err := withPins(r.opts, true, func(s *pin.Store) error {
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
	decided := map[string]bool{}
	var names []string
	accept, server := false, false
	for _, it := range its {
		for _, d := range it.decided {
			decided[d] = true
		}
		switch {
		case it.Instructions():
			accept = true
		case it.Tool == "":
			server = true
		default:
			names = append(names, it.Ref)
		}
	}
	if len(names) == 0 && accept {
		// Instructions alone are accepted with the server (no tool
		// named), as a decision about the whole server is.
		server = true
	}
	if server {
		// A decision about the whole server is approved by approving the
		// server (no tool named), which also approves every new tool and
		// version: only when each of them was accepted too.
		for _, f := range r.Findings {
			if f.Severity == verify.Error && f.Kind.Approval() == verify.Approvable && (accept || !f.Kind.AboutInstructions()) && !decided[fingerprint(f)] {
				return &ApproveResult{Refused: []pin.Refusal{{Kind: string(f.Kind),
					Reason: "a decision about the whole server is approved with every new item of it; approve them too, or use etdi pin approve"}}, Comparison: r.Comparison}, nil
			}
		}
	}
	// review: approve only what the person saw; any error finding the
	// approval would act on must be one they decided on.
	review := func(now *pin.Comparison, all bool) bool {
		for _, f := range now.Findings {
			if f.Severity != verify.Error {
				continue
			}
			acts := slices.Contains(names, pin.ItemRef(f.Item, f.Tool)) ||
				(accept && f.Kind.AboutInstructions()) ||
				(all && (accept || !f.Kind.AboutInstructions()) && (f.Kind.Approval() == verify.Approvable || f.Tool == ""))
			if acts && !decided[fingerprint(f)] {
				return false
			}
		}
		return true
	}
	var total *ApproveResult
	if server {
		res, err := Approve(ctx, r, ApproveOptions{AcceptInstructions: accept, Review: func(now *pin.Comparison) bool { return review(now, true) }})
		if err != nil || res.Withdrawn {
			return res, err
		}
		total = res
		var byName []string
		for _, n := range names {
			for _, f := range res.Comparison.Findings {
				if pin.ItemRef(f.Item, f.Tool) == n && f.Severity == verify.Error {
					byName = append(byName, n)
					break
				}
			}
		}
		if names = byName; len(names) == 0 {
			return total, nil
		}
		accept = false
	}
	res, err := Approve(ctx, r, ApproveOptions{Tools: names, AcceptInstructions: accept, Review: func(now *pin.Comparison) bool { return review(now, false) }})
	if err != nil || total == nil {
		return res, err
	}
	total.Approved = append(total.Approved, res.Approved...)
	total.Refused = res.Refused
	total.Comparison, total.Withdrawn = res.Comparison, res.Withdrawn
	total.InstructionsRecorded = total.InstructionsRecorded || res.InstructionsRecorded
	return total, nil
}
