package finding

// The finding vocabulary (SPEC.md §11): every kind knows its exit code,
// the severity it usually has, whether and how it can be approved, and
// what it means. verify, pin, guard and the CLI all read this one table.

// Exit codes of the findings (SPEC.md §11). CI and launch gating depend on
// them. The codes only the etdi command sets (1, an operational error; 2,
// bad flags or arguments) are not a finding's and are not here.
const (
	ExitOK            = 0
	ExitSignature     = 10 // missing or invalid signature
	ExitRugPull       = 11 // rug pull or downgrade
	ExitImpersonation = 12 // impersonation
	ExitApproval      = 13 // approval required: new tool or new version
	ExitRevoked       = 14 // revoked or expired
)

// ServerUpdated: what an unsigned server runs changed (a new version of
// its package, an edit of its file) while every definition it offers is
// one approved, served by the earlier version of the same artifact. The
// trust policy's update rule decides it ([Finding.Rule]): ask, an approval
// required (exit 13); allow, a warning; block, an error of exit 11.
const ServerUpdated Kind = "server_updated"

// Approvability says whether a [Finding] can be resolved by approving the
// tool, and how: it is a column of the kind table ([Kind.Approvability]).
type Approvability int

const (
	// NotApprovable: the finding is never approved away (revoked, a name
	// listed twice, a bad signature, ...).
	NotApprovable Approvability = iota
	// Approvable: approving the server's new tools and versions resolves
	// it (new_tool, new_version, new_signer; new_instructions are
	// accepted with --accept-instructions): it asks for a decision rather
	// than reporting an attack.
	Approvable
	// ApprovableByName: only approving the tool by name resolves it
	// (a rug pull, a downgrade, another signer, shadowing, a look-alike
	// name): the person decides about that tool alone.
	ApprovableByName
)

type kindInfo struct {
	exit     int
	severity Severity
	approval Approvability
	about    string
}

var kinds = map[Kind]kindInfo{
	BundleInvalid:       {ExitSignature, Error, NotApprovable, "The bundle or its signed statement is malformed or contradicts itself."},
	SignatureMissing:    {ExitSignature, Error, NotApprovable, "The bundle carries no signature."},
	SignatureInvalid:    {ExitSignature, Error, NotApprovable, "No signature verifies with a key the trust policy holds for the claimed provider."},
	UnsignedTool:        {ExitSignature, Error, NotApprovable, "A tool is not signed by any bundle."},
	Impersonation:       {ExitImpersonation, Error, NotApprovable, "A key trusted only for another provider signed the bundle, or a tool is listed twice."},
	DefinitionChanged:   {ExitRugPull, Error, NotApprovable, "A live tool definition differs from the signed one."},
	Expired:             {ExitRevoked, Error, NotApprovable, "The bundle is expired or not yet valid."},
	KeyNotValid:         {ExitRevoked, Error, NotApprovable, "The signing key is outside its validity window."},
	NotServed:           {0, Info, NotApprovable, "A signed tool is not offered by the server."},
	NewTool:             {ExitApproval, Error, Approvable, "A tool (or a prompt, resource or resource template, named by the finding's item) was never approved: approval required."},
	NewVersion:          {ExitApproval, Error, Approvable, "A tool has a new version: approval required."},
	NewSigner:           {ExitApproval, Error, Approvable, "A tool approved unsigned is now signed: approval required."},
	RugPull:             {ExitRugPull, Error, ApprovableByName, "A tool's definition or permissions changed since approval without a new version (or a prompt, resource or resource template changed): it equals none of the approved definitions; approving it by name adds it beside them."},
	Downgrade:           {ExitRugPull, Error, ApprovableByName, "A tool version or bundle is older than the approved one."},
	SignerChanged:       {ExitImpersonation, Error, ApprovableByName, "A tool is signed by someone other than the approved signer."},
	Shadowing:           {ExitImpersonation, Error, ApprovableByName, "A tool name approved on another server appears on this one."},
	NameCollision:       {ExitApproval, Warning, Approvable, "A tool name approved on another unsigned server appears on this unsigned server, and neither names nor imitates the other's tool: hosts keep each server's tools apart, so it is approved as a new tool is (its new_tool finding sets exit 13 until then)."},
	ConfusableName:      {ExitImpersonation, Error, ApprovableByName, "A tool name looks like an approved one."},
	Revoked:             {ExitRevoked, Error, NotApprovable, "A tool, version or signing key was revoked."},
	Removed:             {0, Info, NotApprovable, "An approved tool (or prompt, resource, resource template) is no longer offered."},
	MixedScript:         {0, Warning, NotApprovable, "A new tool name mixes scripts or holds invisible characters."},
	InstructionsChanged: {ExitRugPull, Error, NotApprovable, "The server's instructions changed since approval."},
	MovingTarget:        {0, Warning, NotApprovable, "The command runs a package without a fixed version or an image by a moving tag (latest): what was checked need not be what runs next."},
	ArtifactUnresolved:  {ExitImpersonation, Error, NotApprovable, "The bundle names what its server is made of, and what the command etdi starts runs could not be resolved (the trust policy's artifacts rule: an error under require, a warning under warn)."},
	NewInstructions:     {ExitApproval, Error, Approvable, "The server sends instructions, and its tools were approved without them (from a bundle or a saved listing): accepting them is required."},
	// A definition that shows a configured secret is hostile as it stands
	// and cannot be approved: blocked as a rug pull is (SPEC.md §14).
	SecretInDefinition: {ExitRugPull, Error, NotApprovable, "The server shows the model a secret it is configured with (env or header value, URL credentials, credential argument); the definition is not approved or recorded."},
	SuspiciousText:     {0, Warning, NotApprovable, "A definition hides characters or carries text aimed at the model (instruction tags, overrides, secret paths, other servers' tool names)."},
	// A program that only looks like etdi's gate, or etdi's gate judging
	// by files that are not the user's, stands in for the check the user
	// relies on: refused as impersonation is.
	FakeWrapper:  {ExitImpersonation, Error, NotApprovable, "A host configuration entry runs a program named etdi as if it were etdi's gate (etdi run), but the program is not the etdi you run: the host starts it without the gate."},
	GateOverride: {ExitImpersonation, Error, NotApprovable, "A wrapped entry's etdi run uses a trust policy, pin store or lockfile other than yours: the gate would judge the server by those."},
	// Another server than the one checked may be reached: blocked as an
	// unresolved artifact is (docs/hosts.md#host-configuration-files).
	AmbiguousEntry: {ExitImpersonation, Error, NotApprovable, "A host configuration entry names a server its host does not read in one established way (a command and a URL, an unknown type, a type its members contradict): the entry is not checked, and wrap refuses it."},
	ServerUpdated:  {ExitApproval, Error, Approvable, "What an unsigned server runs changed (a new package version, an edited file) and every definition it offers is still an approved one: the trust policy's update rule decides (ask: approval required; allow: a warning; block: an error of exit 11)."},
	// What an MCPB file declares is what its host showed the user at
	// installation: a server that serves otherwise changed what was
	// installed, blocked as a rug pull is, and only a new MCPB resolves
	// it (docs/registry.md#mcpb-files).
	MCPBSignatureInvalid: {ExitSignature, Error, NotApprovable, "An MCPB file carries a signature block that does not verify over the file (changed after signing, or malformed)."},
	MCPBUndeclaredTool:   {ExitRugPull, Error, NotApprovable, "The server of an MCPB file serves a tool its manifest.json does not declare (a warning when the manifest says tools_generated)."},
	MCPBToolMismatch:     {ExitRugPull, Error, NotApprovable, "The server of an MCPB file serves a declared tool with another description than its manifest.json declares."},
	MCPBSigner:           {0, Info, NotApprovable, "Who signed an MCPB file (subject, issuer, certificate fingerprint), or that it is unsigned."},
	ProgramUnresolved:    {ExitImpersonation, Error, NotApprovable, "The program of a host configuration entry cannot be found as its host finds it (the entry's env PATH, else the host's own, in the directory the host starts it in): the entry is not checked."},
}

// Kinds returns every finding kind etdi knows.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	return out
}

// Known reports whether k is a kind etdi knows.
func (k Kind) Known() bool { _, ok := kinds[k]; return ok }

// ExitCode is the exit code an error finding of this kind sets: 10 to 14,
// or 0 for kinds that are only ever warnings or information, but 13 for
// name_collision, a warning that comes with the new_tool finding that
// sets it. A kind etdi
// does not know is 10: an unknown error never passes.
func (k Kind) ExitCode() int {
	if info, ok := kinds[k]; ok {
		return info.exit
	}
	return ExitSignature
}

// DefaultSeverity is the severity the kind usually has: error if it has
// an exit code, warning if it is only ever a warning, else info. A finding
// carries its own (unsigned_tool is an error or a warning as the policy
// says); this is, for instance, the SARIF rule's default level.
func (k Kind) DefaultSeverity() Severity {
	if info, ok := kinds[k]; ok {
		return info.severity
	}
	return Error
}

// Approvability says whether and how approving a tool resolves the kind.
func (k Kind) Approvability() Approvability { return kinds[k].approval }

// AsksApproval reports whether the kind asks for a decision (new tool, new
// version, new signer) rather than reporting an attack. Shown as
// "APPROVAL REQUIRED"; exit 13.
func (k Kind) AsksApproval() bool { return kinds[k].approval == Approvable }

// About is one sentence saying what a finding of the kind means.
func (k Kind) About() string { return kinds[k].about }

// ExitCode returns the exit code of a set of findings: the most severe
// code of the error findings (12 > 11 > 10 > 14 > 13), or 0. Warnings and
// information never set it.
func ExitCode(findings []Finding) int {
	code := ExitOK
	for _, f := range findings {
		if f.Severity != Error {
			continue
		}
		c := f.ExitCode()
		if c == ExitOK {
			c = ExitSignature // an error of a kind that is never one still fails
		}
		code = Worse(code, c)
	}
	return code
}

// ExitCode is the exit code the finding sets as an error: its kind's,
// but a server_updated the trust policy blocks is 11.
func (f *Finding) ExitCode() int {
	if f.Kind == ServerUpdated && f.Rule == "block" {
		return ExitRugPull
	}
	return f.Kind.ExitCode()
}

// AsksApproval reports whether approving resolves the finding as it
// resolves a new tool: its kind asks for a decision, and the trust policy
// did not block it.
func (f *Finding) AsksApproval() bool {
	if f.Kind == ServerUpdated && f.Rule == "block" {
		return false
	}
	return f.Kind.AsksApproval()
}

// severityRank orders exit codes when several findings apply.
var severityRank = map[int]int{
	ExitImpersonation: 5,
	ExitRugPull:       4,
	ExitSignature:     3,
	ExitRevoked:       2,
	ExitApproval:      1,
}

// Worse returns the more severe of two exit codes (12 > 11 > 10 > 14 >
// 13 > the rest).
func Worse(a, b int) int {
	if severityRank[b] > severityRank[a] {
		return b
	}
	return a
}
