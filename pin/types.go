package pin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
)

// SignerID identifies who vouched for a tool, as a pin and the history
// record it: a provider key, an identity provider's subject, or nobody
// ([Unsigned]). Who signed a bundle, as verification established it, is
// [github.com/etdi-dev/etdi/verify.SignerIdentity].
type SignerID struct {
	// Kind is "key" (a provider key), "idp" (an identity provider's
	// issuer and subject) or "none" (an unsigned server).
	Kind string `json:"kind"`
	// ID is the key id, or "<issuer> <subject>" for "idp".
	ID string `json:"id,omitempty"`
}

func (s SignerID) String() string {
	switch s.Kind {
	case "none", "":
		return "unsigned"
	case "key":
		return "key " + s.ID
	}
	return s.Kind + " " + s.ID
}

// Unsigned is the [SignerID] of tools without a signature.
var Unsigned = SignerID{Kind: "none"}

// Item kinds: besides tools, a server lists prompts, resources and
// resource templates, whose text reaches the model too (docs/check.md#check-against-pins).
// They are pinned by digest like the tools of an unsigned server: ETDI
// bundles sign tools only. A tool's Item is empty.
const (
	ItemTool     = ""
	ItemPrompt   = "prompt"
	ItemResource = "resource"
	// ItemTemplate is a resource template (resources/templates/list).
	ItemTemplate = "resourceTemplate"
)

// Items are the item kinds other than tools, in the order they are listed.
var Items = []string{ItemPrompt, ItemResource, ItemTemplate}

// ItemRef names an item as a person writes it: a tool by its name,
// anything else as "<item>:<name>" (prompt:weather_report,
// resource:weather://cities).
func ItemRef(item, name string) string {
	if item == ItemTool {
		return name
	}
	return item + ":" + name
}

// Pin is one approved tool (or other item) of one server.
type Pin struct {
	Server string `json:"server"`
	// Item is the kind of what is pinned; empty for a tool.
	Item string `json:"item,omitempty"`
	// Tool is the name of the tool or prompt, the URI of a resource, the
	// URI template of a resource template.
	Tool string `json:"tool"`
	// Version is the approved version; empty for unsigned servers, whose
	// tools have none.
	Version     string            `json:"version,omitempty"`
	Digest      string            `json:"digest"`
	Signer      SignerID          `json:"signer"`
	Provider    string            `json:"provider,omitempty"`
	Permissions []etdi.Permission `json:"permissions"`
	// Scopes are the permission scopes the person who approved an unsigned
	// tool gave it (docs/storage.md#scopes-of-unsigned-tools): call-time policies see them as they see
	// a signed tool's permissions. A signed tool has none (its provider's
	// permissions are its scopes). Sorted, each once.
	Scopes []string `json:"scopes,omitempty"`
	// Definition is the canonical JSON of the approved definition, kept so
	// that later differences can be shown field by field.
	Definition json.RawMessage `json:"definition"`
	ApprovedBy string          `json:"approvedBy"`
	ApprovedAt time.Time       `json:"approvedAt"`
	// Sequence is the bundle sequence at approval (0 if unsigned).
	Sequence uint64 `json:"sequence,omitempty"`
	// Served is what served the tool at approval (Observation.Served).
	Served string `json:"served,omitempty"`
	// ServedAt is where the file that served the tool at approval was
	// (Observation.ServedAt), for a file artifact whose Served names only
	// its base name: an edit of that file is an update, a file of the
	// same name elsewhere is not (IsUpdate).
	ServedAt string `json:"servedAt,omitempty"`
	// Binding names the history record that approved the pin (schema 3).
	Binding
	// Variants are the definitions approved earlier that stay approved
	// beside this one, the latest approval, oldest first (docs/storage.md#approved-variants):
	// the same server configured with other arguments, in another host or
	// time zone. Each is a whole pin bound to its own approval record and
	// holds no variants of its own. Pins written before variants have
	// none.
	Variants []Variant `json:"variants,omitempty"`
}

// Variant is an approved definition kept beside a pin's latest one: the
// members of a [Pin] but Variants.
type Variant struct {
	Server      string            `json:"server"`
	Item        string            `json:"item,omitempty"`
	Tool        string            `json:"tool"`
	Version     string            `json:"version,omitempty"`
	Digest      string            `json:"digest"`
	Signer      SignerID          `json:"signer"`
	Provider    string            `json:"provider,omitempty"`
	Permissions []etdi.Permission `json:"permissions"`
	Scopes      []string          `json:"scopes,omitempty"`
	Definition  json.RawMessage   `json:"definition"`
	ApprovedBy  string            `json:"approvedBy"`
	ApprovedAt  time.Time         `json:"approvedAt"`
	Sequence    uint64            `json:"sequence,omitempty"`
	Served      string            `json:"served,omitempty"`
	ServedAt    string            `json:"servedAt,omitempty"`
	Binding
}

// pin is v as a pin without variants.
func (v *Variant) pin() Pin {
	return Pin{Server: v.Server, Item: v.Item, Tool: v.Tool, Version: v.Version, Digest: v.Digest, Signer: v.Signer,
		Provider: v.Provider, Permissions: v.Permissions, Scopes: v.Scopes, Definition: v.Definition, ApprovedBy: v.ApprovedBy,
		ApprovedAt: v.ApprovedAt, Sequence: v.Sequence, Served: v.Served, ServedAt: v.ServedAt, Binding: v.Binding}
}

// variantOf is p, without its variants, as a variant.
func variantOf(p *Pin) Variant {
	return Variant{Server: p.Server, Item: p.Item, Tool: p.Tool, Version: p.Version, Digest: p.Digest, Signer: p.Signer,
		Provider: p.Provider, Permissions: p.Permissions, Scopes: p.Scopes, Definition: p.Definition, ApprovedBy: p.ApprovedBy,
		ApprovedAt: p.ApprovedAt, Sequence: p.Sequence, Served: p.Served, ServedAt: p.ServedAt, Binding: p.Binding}
}

// variantsOf is ps as variants.
func variantsOf(ps []Pin) []Variant {
	if len(ps) == 0 {
		return nil
	}
	out := make([]Variant, len(ps))
	for i := range ps {
		out[i] = variantOf(&ps[i])
	}
	return out
}

// MaxVariants bounds the approved definitions of one item (the pin and
// its variants): an approval of one more is refused, naming the command
// that revokes an old one.
const MaxVariants = 16

// All returns the approved definitions of the item in the order they were
// approved: the variants, then the pin itself (the latest), each without
// variants of its own.
func (p *Pin) All() []Pin {
	out := make([]Pin, 0, len(p.Variants)+1)
	for i := range p.Variants {
		out = append(out, p.Variants[i].pin())
	}
	latest := *p
	latest.Variants = nil
	return append(out, latest)
}

// Ref returns "server/tool" ("server/prompt:name" for other items).
func (p *Pin) Ref() string { return p.Server + "/" + ItemRef(p.Item, p.Tool) }

// key is the pin's key in the pins bucket.
func (p *Pin) key() []byte { return pinKeyOf(p.Server, p.Item, p.Tool) }

// ServerInfo describes one server of the database.
type ServerInfo struct {
	Key      string `json:"key"`
	Provider string `json:"provider,omitempty"`
	Name     string `json:"name"`
	// MaxSequence is the highest bundle sequence approved for the server;
	// a lower one later is a rollback.
	MaxSequence uint64 `json:"maxSequence,omitempty"`
	// InstructionsKnown says whether the server's instructions were seen at
	// approval (only a live server shows them); Instructions holds them,
	// nil if the server sent none.
	InstructionsKnown bool    `json:"instructionsKnown,omitempty"`
	Instructions      *string `json:"instructions,omitempty"`
}

// Revocation withdraws an approval: of a tool (all versions), of one
// version, of one approved definition (variant) of a tool or another
// item, or of every tool signed by a key.
type Revocation struct {
	Server string `json:"server,omitempty"`
	// Item is the kind of item Tool names, with Digest only.
	Item    string `json:"item,omitempty"`
	Tool    string `json:"tool,omitempty"`
	Version string `json:"version,omitempty"`
	// Digest, when set, revokes only the approved definition with this
	// digest: the item's other variants stay approved.
	Digest string    `json:"digest,omitempty"`
	KeyID  string    `json:"keyId,omitempty"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
	// Binding names the history record of the revocation (schema 3).
	Binding
}

func (r *Revocation) key() []byte {
	if r.KeyID != "" {
		return []byte("key:" + r.KeyID)
	}
	if r.Digest != "" {
		// NUL cannot occur in an approved name or item kind.
		return []byte(r.Server + "/" + itemKey(r.Item, r.Tool) + "\x00" + r.Digest)
	}
	k := r.Server + "/" + r.Tool
	if r.Version != "" {
		k += "@" + r.Version
	}
	return []byte(k)
}

// SignedServerKey returns the server key of a server with a verified
// bundle: "<provider>:<server name>".
func SignedServerKey(provider, server string) string { return provider + ":" + server }

// UnsignedServerKey returns the server key of a server without a bundle.
func UnsignedServerKey(name string) string { return "unsigned:" + name }

// ValidateUnsignedName checks the name of a server without a bundle: 1 to
// 128 bytes, no control characters. It may hold '/' (an npm scope, an
// image path, a URL path): references split at the last '/'.
func ValidateUnsignedName(name string) error {
	if name == "" {
		return errors.New("server name must not be empty")
	}
	if len(name) > 128 {
		return errors.New("server name longer than 128 bytes")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("server name %q: no control characters", name)
		}
	}
	return nil
}

// ParseRef splits "SERVER/TOOL[@VERSION]" at the last '/' (server keys
// may contain '/' in a server name; tool names in practice do not).
func ParseRef(ref string) (server, tool, version string, err error) {
	i := strings.LastIndexByte(ref, '/')
	if i <= 0 || i == len(ref)-1 {
		return "", "", "", fmt.Errorf("%q is not SERVER/TOOL[@VERSION]", ref)
	}
	server, tool = ref[:i], ref[i+1:]
	if j := strings.LastIndexByte(tool, '@'); j > 0 {
		tool, version = tool[:j], tool[j+1:]
		if _, err := etdi.ParseVersion(version); err != nil {
			return "", "", "", fmt.Errorf("%q: %v", ref, err)
		}
	}
	return server, tool, version, nil
}
