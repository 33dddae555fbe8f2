// Package finding is etdi's finding vocabulary (SPEC.md §11): the kinds of
// [Finding] that verification, the pin store and the gate report, their
// [Severity], and the kind table that gives each [Kind] its exit code, its
// usual severity and its [Approvability]. [ExitCode] turns a set of
// findings into the exit code etdi sets. The package does no I/O and
// imports only the standard library and the data model (package etdi).
package finding

import "github.com/etdi-dev/etdi"

// Kind names a kind of [Finding]. [Kind.ExitCode] maps kinds to exit codes
// (SPEC.md §11); the names are stable and appear in --json output.
type Kind string

// Finding kinds.
const (
	// BundleInvalid: the bundle or its payload is malformed, has the wrong
	// payloadType, or contradicts itself (subject digest mismatch).
	BundleInvalid Kind = "bundle_invalid"
	// SignatureMissing: the envelope carries no signature.
	SignatureMissing Kind = "signature_missing"
	// SignatureInvalid: no signature verifies with a key the policy trusts
	// for the claimed provider, and none with any other trusted key.
	SignatureInvalid Kind = "signature_invalid"
	// Impersonation: a key trusted only for another provider signed a
	// bundle claiming this provider, or a server lists one tool name twice.
	Impersonation Kind = "impersonation"
	// DefinitionChanged: a live tool differs from the signed definition of
	// the same name (a rug pull relative to the signed version).
	DefinitionChanged Kind = "definition_changed"
	// UnsignedTool: a live tool that the bundle does not sign.
	UnsignedTool Kind = "unsigned_tool"
	// Expired: the bundle is past its expiry or not yet issued.
	Expired Kind = "expired"
	// KeyNotValid: the signing key is outside its validity window.
	KeyNotValid Kind = "key_not_valid"
	// NotServed: a signed tool the live server does not list (information).
	NotServed Kind = "not_served"

	// The kinds below compare a server with the pin database.

	// NewTool: a tool never approved on this server.
	NewTool Kind = "new_tool"
	// NewVersion: a higher version than the approved one, same signer.
	NewVersion Kind = "new_version"
	// NewSigner: a tool approved unsigned now comes with a signature.
	NewSigner Kind = "new_signer"
	// RugPull: the same version (or, unsigned, the same tool) with another
	// definition or other permissions than approved.
	RugPull Kind = "rug_pull"
	// Downgrade: a lower version than approved, or an older bundle
	// (lower sequence) than one approved before.
	Downgrade Kind = "downgrade"
	// SignerChanged: the signer differs from the approved signer.
	SignerChanged Kind = "signer_changed"
	// Shadowing: a tool name approved on another server appears here.
	Shadowing Kind = "shadowing"
	// NameCollision: a tool name approved on another unsigned server
	// appears on this unsigned server, neither side signed, the name not a
	// look-alike, and nothing in the definition naming or imitating the
	// other server's tool (warning): hosts keep the tools of each server
	// apart, so two servers offering "search" is not impersonation. The
	// tool is a new tool, approved as one.
	NameCollision Kind = "name_collision"
	// ConfusableName: a tool name that looks like an approved one.
	ConfusableName Kind = "confusable_name"
	// Revoked: the approved tool, version or signing key was revoked.
	Revoked Kind = "revoked"
	// Removed: an approved tool the server no longer offers (information).
	Removed Kind = "removed"
	// MixedScript: a new tool name mixing scripts or holding invisible
	// characters (warning).
	MixedScript Kind = "mixed_script"
	// InstructionsChanged: the server's instructions differ from the
	// approved ones (they steer the model like a description does).
	InstructionsChanged Kind = "instructions_changed"
	// ArtifactUnresolved: a bundle names what its stdio server is made
	// of, and what the command etdi starts runs could not be resolved;
	// the trust policy's artifacts rule sets the severity.
	ArtifactUnresolved Kind = "artifact_unresolved"
	// MovingTarget: a command that runs whatever a registry serves today
	// (a package without a fixed version, an image by a moving tag), so
	// what was checked need not be what runs next (warning).
	MovingTarget Kind = "moving_target"
	// NewInstructions: a server whose tools were approved without its
	// instructions (from a bundle or a saved listing) sends instructions
	// that were never approved.
	NewInstructions Kind = "new_instructions"
	// FakeWrapper: a host configuration entry runs a program named etdi
	// with "run", as a wrapped entry does, but the program is not the
	// user's etdi: the host starts it without etdi's gate (docs/hosts.md#wrapping-host-configurations).
	FakeWrapper Kind = "fake_wrapper"
	// GateOverride: a wrapped entry's etdi run uses a trust policy, pin
	// store or lockfile other than the user's, so the gate judges the
	// server by those (docs/hosts.md#wrapping-host-configurations).
	GateOverride Kind = "gate_override"
	// AmbiguousEntry: a host configuration entry whose server is not
	// established for its host (a command and a URL, an unknown type, a
	// type its members contradict): what the host reaches may be another
	// server than the one etdi would check.
	AmbiguousEntry Kind = "ambiguous_entry"
	// ProgramUnresolved: the program of a host configuration entry could
	// not be found as the host finds it (the entry's env PATH, else the
	// host's, in the directory the host starts it in).
	ProgramUnresolved Kind = "program_unresolved"
	// MCPBSignatureInvalid: an MCPB file carries a signature block that
	// does not verify over the file (docs/registry.md#mcpb-files).
	MCPBSignatureInvalid Kind = "mcpb_signature_invalid"
	// MCPBUndeclaredTool: the server of an MCPB file serves a tool its
	// manifest.json does not declare.
	MCPBUndeclaredTool Kind = "mcpb_undeclared_tool"
	// MCPBToolMismatch: the server of an MCPB file serves a declared tool
	// with another description than its manifest.json declares.
	MCPBToolMismatch Kind = "mcpb_tool_mismatch"
	// MCPBSigner: who signed an MCPB file, or that nobody did
	// (information).
	MCPBSigner Kind = "mcpb_signer"
)

// AboutInstructions reports whether the kind is about the server's
// instructions, which --accept-instructions approves.
func (k Kind) AboutInstructions() bool { return k == InstructionsChanged || k == NewInstructions }

// Severity says whether a finding fails verification.
type Severity string

// Severities.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
	Info    Severity = "info"
)

// Finding is one result of verification with its evidence.
type Finding struct {
	Kind     Kind     `json:"kind"`
	Severity Severity `json:"severity"`
	// Item is the kind of item Tool names when it is not a tool: "prompt",
	// "resource" (Tool is its URI) or "resourceTemplate" (its URI
	// template).
	Item    string `json:"item,omitempty"`
	Tool    string `json:"tool,omitempty"`
	Version string `json:"version,omitempty"`
	Message string `json:"message"`
	// KeyID is the key concerned (signer or hint).
	KeyID string `json:"keyId,omitempty"`
	// TrustedFor lists the providers the signing key is trusted for, for
	// impersonation findings.
	TrustedFor []string `json:"trustedFor,omitempty"`
	// Signed and Live are the definition digests compared.
	Signed string `json:"signedDigest,omitempty"`
	Live   string `json:"liveDigest,omitempty"`
	// Fields lists the top-level fields that differ; Changes the details.
	Fields  []string      `json:"fields,omitempty"`
	Changes []etdi.Change `json:"changes,omitempty"`

	// Evidence of pin comparisons.
	Server        string `json:"server,omitempty"`
	PinnedVersion string `json:"pinnedVersion,omitempty"`
	PinnedDigest  string `json:"pinnedDigest,omitempty"`
	PinnedSigner  string `json:"pinnedSigner,omitempty"`
	CurrentSigner string `json:"currentSigner,omitempty"`
	// Servers names the other servers involved (shadowing, look-alikes).
	Servers []string `json:"servers,omitempty"`
	// LooksLike is the approved name a confusable name imitates.
	LooksLike string   `json:"looksLike,omitempty"`
	Scripts   []string `json:"scripts,omitempty"`
	// Permissions is what approving a new tool would grant; Added and
	// Removed what approving a new version would change.
	Permissions        []etdi.Permission `json:"permissions,omitempty"`
	PermissionsAdded   []etdi.Permission `json:"permissionsAdded,omitempty"`
	PermissionsRemoved []etdi.Permission `json:"permissionsRemoved,omitempty"`
	// Pointer (an RFC 6901 JSON Pointer into the definition) and Match
	// locate suspicious text.
	Pointer string `json:"pointer,omitempty"`
	Match   string `json:"match,omitempty"`
	// PinnedServed and Served are what served the server's approved
	// definitions and what serves them now (server_updated).
	PinnedServed string `json:"pinnedServed,omitempty"`
	Served       string `json:"served,omitempty"`
	// Rule is the trust policy rule that decided the finding's severity
	// and exit code (server_updated: allow, ask or block).
	Rule string `json:"rule,omitempty"`
}

// SecretInDefinition: a server shows the model a secret it is configured
// with (an env or header value, URL credentials, a credential argument) in
// a tool definition, its instructions or its tools/list _meta (error,
// SPEC.md §14). The definition is not compared, approved or recorded, and
// the finding never carries the secret: only where it is configured.
const SecretInDefinition Kind = "secret_in_definition"

// SuspiciousText: a definition's text hides characters (controls, bidi,
// zero-width, tags, variation selectors) or addresses the model with
// instruction-like content: tags such as <IMPORTANT>, "ignore previous
// instructions", "do not tell the user", sensitive paths, or the names of
// tools approved on other servers (warning, docs/output.md#escaping-untrusted-text). The finding
// carries the JSON Pointer and the matched text.
const SuspiciousText Kind = "suspicious_text"
