package gate

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/atomicfile"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/pin"
)

// savePending saves the gate's own listing for review while it withholds
// something of it, and removes the file it saved once it withholds
// nothing: the review command names the file. items are the item kinds
// the listing l holds (the gate lists some kinds again alone, after their
// list_changed); withheld says whether it withheld something of them.
//
// The file is one per server, of every kind: the kinds listed now replace
// those in the file this session saved, and the kinds not listed now are
// kept from it as they were (with the server's instructions), so that
// listing resources again never drops the withheld tools the printed
// review command is for (docs/gate.md#runtime-gate, "Pending review files"). A listing
// that shows a configured credential is never saved (SPEC.md §14).
func (g *Gate) savePending(l *guard.Listing, items []string, withheld bool) {
	if g.opts.ReadOnly {
		return // nothing is written beside read-only pins
	}
	name := g.st.server
	if name == "" {
		name = pin.UnsignedServerKey(g.opts.Name)
	}
	path := filepath.Join(filepath.Dir(g.opts.Options.LocalPins()), "pending", safeFileName(name)+".json")
	if abs, err := filepath.Abs(path); err == nil {
		path = abs // the host's working directory is not the person's
	}
	if g.st.pendingKinds == nil {
		g.st.pendingKinds = map[string]bool{}
	}
	// Which kinds withhold something: an entry of this listing that is
	// not approved as listed. A listing the caller withheld nothing of
	// (or one that shows a credential, which is never saved) counts as
	// withholding nothing.
	for _, item := range items {
		g.st.pendingKinds[item] = false
		for _, e := range entries(l, item) {
			if withheld && g.st.approved[item][e.Name] != e.Digest.String() {
				g.st.pendingKinds[item] = true
				break
			}
		}
	}
	still := false
	for _, w := range g.st.pendingKinds {
		still = still || w
	}
	if !still {
		if g.saved == path {
			os.Remove(path)
			g.saved = ""
		}
		return
	}
	saved := *l
	if g.saved == path {
		merged, err := g.mergePending(path, l, items)
		if err != nil {
			g.logf("could not read the listing saved for review (%v): it is saved again with what was listed now", err)
		} else {
			saved = *merged
		}
	}
	if len(guard.CredentialFindings(&saved, g.opts.Credentials)) > 0 {
		return
	}
	// What served the listing is saved with it: approving from the file
	// records it in the pins, as approving the live server would.
	saved.Served, saved.ServedAt = g.opts.Origin.Served(), g.opts.Origin.ServedAt()
	write, err := saved.Saver()
	if err == nil {
		if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
			err = atomicfile.WriteFunc(path, 0o600, write)
		}
	}
	if err != nil {
		g.logf("could not save the listing for review (%v)", err)
		return
	}
	g.saved = path
}

// mergePending is the listing to save for review when l lists only the
// item kinds items: those from l, every other kind (and the server's
// instructions, and the in-band bundle when the tools are not listed
// now) from the file at path, which this session saved.
func (g *Gate) mergePending(path string, l *guard.Listing, items []string) (*guard.Listing, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	old, err := guard.ReadListing(data)
	if err != nil {
		return nil, err
	}
	out := *old
	out.Listed = nil
	if slices.Contains(items, itemTool) {
		out.Tools, out.Metas, out.ToolMetas, out.Pages = l.Tools, l.Metas, l.ToolMetas, l.Pages
	}
	if l.Live {
		out.Live, out.Instructions = true, l.Instructions
		out.ServerName, out.ServerVersion, out.ProtocolVersion = l.ServerName, l.ServerVersion, l.ProtocolVersion
	}
	for _, item := range pin.Items {
		if !slices.Contains(items, item) {
			if slices.Contains(old.Listed, item) {
				out.Listed = append(out.Listed, item)
			}
			continue
		}
		switch item {
		case itemPrompt:
			out.Prompts = l.Prompts
		case itemResource:
			out.Resources = l.Resources
		case itemTemplate:
			out.Templates = l.Templates
		}
		out.Listed = append(out.Listed, item)
	}
	return &out, nil
}

// safeFileName turns a server key into a file name: letters, digits, '.',
// '-' and '_' are kept, anything else becomes '_'. A key that had to be
// changed (or cut at 100 bytes) gets the first 12 hex digits of its
// SHA-256 appended, so two servers never share a file ("c d" and "c_d").
func safeFileName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 100 {
		b = b[:100]
	}
	out := strings.TrimLeft(string(b), ".")
	if out != s {
		sum := sha256.Sum256([]byte(s))
		out += "-" + hex.EncodeToString(sum[:6])
	}
	return out
}

// review is the command that reviews what the gate withheld for a
// finding of kind ("" for several): with --approve where approving can
// resolve it, else the check alone, which shows why (a revoked tool, a
// bad signature, a tool no bundle signs: there is nothing to approve).
func (g *Gate) review(kind string) string {
	approve := " --approve"
	if k := finding.Kind(kind); g.opts.ReadOnly || k.Known() && k.Approvability() == finding.NotApprovable && !k.AboutInstructions() {
		approve = ""
	}
	if g.saved != "" {
		return g.opts.Review + " --tools " + termtext.ShellQuote(g.saved) + approve
	}
	if g.opts.ReviewTarget != "" {
		return g.opts.Review + approve + " " + g.opts.ReviewTarget
	}
	return g.opts.Review + approve
}
