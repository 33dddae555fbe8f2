package pin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
)

// Signer identifies who vouched for a tool: a provider key, or nobody.
type Signer struct {
	// Kind is "key" (a provider key), "idp" (an identity provider's
	// issuer and subject) or "none" (an unsigned server).
	Kind string `json:"kind"`
	// ID is the key id, or "<issuer> <subject>" for "idp".
	ID string `json:"id,omitempty"`
}

func (s Signer) String() string {
	switch s.Kind {
	case "none", "":
		return "unsigned"
	case "key":
		return "key " + s.ID
	}
	return s.Kind + " " + s.ID
}

// Unsigned is the Signer of tools without a signature.
var Unsigned = Signer{Kind: "none"}

// Item kinds: besides tools, a server lists prompts, resources and
// resource templates, whose text reaches the model too (SPEC.md §15).
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
	Signer      Signer            `json:"signer"`
	Provider    string            `json:"provider,omitempty"`
	Permissions []etdi.Permission `json:"permissions"`
	// Definition is the canonical JSON of the approved definition, kept so
	// that later differences can be shown field by field.
	Definition json.RawMessage `json:"definition"`
	ApprovedBy string          `json:"approvedBy"`
	ApprovedAt time.Time       `json:"approvedAt"`
	// Sequence is the bundle sequence at approval (0 if unsigned).
	Sequence uint64 `json:"sequence,omitempty"`
	// Served is what served the tool at approval (Observation.Served).
	Served string `json:"served,omitempty"`
	// Binding names the history record that approved the pin (schema 3).
	Binding
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
// version, or of every tool signed by a key.
type Revocation struct {
	Server  string    `json:"server,omitempty"`
	Tool    string    `json:"tool,omitempty"`
	Version string    `json:"version,omitempty"`
	KeyID   string    `json:"keyId,omitempty"`
	By      string    `json:"by"`
	At      time.Time `json:"at"`
	Reason  string    `json:"reason,omitempty"`
	// Binding names the history record of the revocation (schema 3).
	Binding
}

func (r *Revocation) key() []byte {
	if r.KeyID != "" {
		return []byte("key:" + r.KeyID)
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
