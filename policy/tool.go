package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/strictjson"
)

// Tool is what policies know of a tool: its definition as approved and
// verified.
type Tool struct {
	// Server is the server's pin identity; Name the tool's.
	Server, Name string
	// Version and Provider are empty for an unsigned tool.
	Version, Provider string
	// Signed says a trusted provider signed the definition.
	Signed bool
	// Scopes are the approved permission scopes.
	Scopes []string
	// Annotations are the definition's MCP annotations; policies see them
	// only when Signed.
	Annotations Annotations
}

// Annotations are MCP's tool annotation hints; nil is a hint the
// definition does not state as a boolean.
type Annotations struct {
	ReadOnly, Destructive, Idempotent, OpenWorld *bool
}

// ToolOf returns the [Tool] of a verified observation (a gate's listing) of
// the server with that pin identity and provider.
func ToolOf(server, provider string, o pin.Observed) Tool {
	return tool(server, provider, o.Name, o.Version, o.Signer, o.Permissions, nil, o.Canonical)
}

// ToolOfApproved is [ToolOf] with the scopes the approval of the matching
// definition gave an unsigned tool ([pin.ToolState.Scopes], docs/storage.md#scopes-of-unsigned-tools):
// the policies see them as they see a signed tool's permissions. A signed
// tool's scopes are its provider's permissions alone: given scopes are
// ignored.
func ToolOfApproved(server, provider string, o pin.Observed, given []string) Tool {
	return tool(server, provider, o.Name, o.Version, o.Signer, o.Permissions, given, o.Canonical)
}

// ToolOfPin returns the [Tool] of an approved pin, with the scopes its
// approval gave it when unsigned.
func ToolOfPin(p *pin.Pin) Tool {
	return tool(p.Server, p.Provider, p.Tool, p.Version, p.Signer, p.Permissions, p.Scopes, p.Definition)
}

func tool(server, provider, name, version string, signer pin.SignerID, perms []etdi.Permission, given []string, def []byte) Tool {
	t := Tool{Server: server, Name: name, Version: version, Signed: signer.Kind != "" && signer.Kind != pin.Unsigned.Kind}
	if t.Signed {
		t.Provider = provider
	}
	for _, p := range perms {
		t.Scopes = append(t.Scopes, p.Scope)
	}
	if !t.Signed {
		t.Scopes = append(t.Scopes, given...)
	}
	t.Annotations = AnnotationsOf(def)
	return t
}

// AnnotationsOf reads the annotations of a tool definition (JSON); a hint
// that is not a boolean, or a definition that is not an object, gives
// none.
func AnnotationsOf(def []byte) Annotations {
	var a Annotations
	v, err := strictjson.Parse(def)
	if err != nil || v.Kind != strictjson.Object {
		return a
	}
	ann := v.Get("annotations")
	if ann == nil || ann.Kind != strictjson.Object {
		return a
	}
	hint := func(name string) *bool {
		h := ann.Get(name)
		if h == nil || h.Kind != strictjson.Bool {
			return nil
		}
		b := h.Bool
		return &b
	}
	a.ReadOnly, a.Destructive = hint("readOnlyHint"), hint("destructiveHint")
	a.Idempotent, a.OpenWorld = hint("idempotentHint"), hint("openWorldHint")
	return a
}

// ArgumentsDigest is the digest of a call's arguments that call records
// and policies see: "sha256:" and the hex SHA-256 of their RFC 8785 form,
// or "raw-sha256:" and that of the bytes when they are not JSON of etdi's
// profile. Absent arguments are {}.
func ArgumentsDigest(raw []byte) string {
	if raw == nil {
		raw = []byte("{}")
	}
	if v, err := strictjson.Parse(raw); err == nil {
		return etdi.Digest(sha256.Sum256(strictjson.AppendCanonical(nil, v))).String()
	}
	sum := sha256.Sum256(raw)
	return "raw-sha256:" + hex.EncodeToString(sum[:])
}

// Bounds of an arguments summary.
const (
	summaryMembers = 16
	summaryValue   = 96
	summaryTotal   = 2048
)

// SummarizeArguments describes a call's arguments for a person deciding
// whether to allow the call: one line per member (at most 16), each value
// cut to 96 bytes, the whole at most 2 KiB, every piece escaped for a
// terminal (termtext.Escape): the arguments come from the model, which a
// server's text may have steered.
func SummarizeArguments(raw []byte) string {
	s, _ := ShowArguments(raw)
	return s
}

// ShowArguments is [SummarizeArguments], and whether the summary shows the
// arguments whole: nothing cut, and JSON of etdi's profile (arguments
// that are not, a member twice or a number beyond 2^53, are shown by
// their length only, and a server reads them as it pleases). A person
// should be asked to allow a call only about what they can see.
func ShowArguments(raw []byte) (summary string, whole bool) {
	if len(raw) == 0 {
		return "(no arguments)", true
	}
	v, err := strictjson.Parse(raw)
	if err != nil {
		return fmt.Sprintf("(%d bytes that are not JSON)", len(raw)), false
	}
	if v.Kind != strictjson.Object {
		c := termtext.Escape(string(strictjson.AppendCanonical(nil, v)))
		return "(not an object) " + cut(c, summaryValue), len(c) <= summaryValue
	}
	if len(v.Members) == 0 {
		return "(no arguments)", true
	}
	members := slices.Clone(v.Members)
	slices.SortFunc(members, func(a, b strictjson.Member) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	whole = true
	for i, m := range members {
		if i == summaryMembers {
			fmt.Fprintf(&b, "... and %d more", len(members)-i)
			whole = false
			break
		}
		// A string's quotes are escaped, so that it cannot show as more
		// than one value (Escape writes every backslash as an escape).
		val := `"` + strings.ReplaceAll(termtext.Escape(m.Value.Str), `"`, `\"`) + `"`
		if m.Value.Kind != strictjson.String {
			val = termtext.Escape(string(strictjson.AppendCanonical(nil, m.Value)))
		}
		name := termtext.Escape(m.Name)
		if len(name) > summaryValue || len(val) > summaryValue {
			whole = false
		}
		line := cut(name, summaryValue) + ": " + cut(val, summaryValue) + "\n"
		if b.Len()+len(line) > summaryTotal {
			fmt.Fprintf(&b, "... and %d more", len(members)-i)
			whole = false
			break
		}
		b.WriteString(line)
	}
	return strings.TrimSuffix(b.String(), "\n"), whole
}

// cut shortens s to at most n bytes, on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "..."
}
