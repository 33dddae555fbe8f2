package mcpb

import (
	"fmt"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/termtext"
	"unicode/utf8"
)

// Artifact is the file as a bundle's server.artifacts names it (SPEC.md
// §4.1): type mcpb, the manifest's name and version, and the file's
// SHA-256 (server.json's fileSha256).
func (f *File) Artifact() etdi.Artifact {
	return etdi.Artifact{Type: etdi.ArtifactMCPB, Name: f.Manifest.Name, Version: f.Manifest.Version, Digest: f.Digest}
}

// SignatureFindings reports the file's signature: an mcpb_signer
// information finding saying who signed it (or that nobody did), and an
// mcpb_signature_invalid error when the block does not verify.
func (f *File) SignatureFindings() []finding.Finding {
	s := f.Signature
	switch {
	case s == nil:
		return []finding.Finding{{Kind: finding.MCPBSigner, Severity: finding.Info, Message: "the MCPB file is unsigned"}}
	case s.Err != nil:
		msg := s.Err.Error()
		if s.Signer != nil {
			msg = fmt.Sprintf("claimed signer %s: %s", termtext.Escape(s.Signer.String()), msg)
		}
		return []finding.Finding{{Kind: finding.MCPBSignatureInvalid, Severity: finding.Error, Message: msg}}
	}
	return []finding.Finding{{Kind: finding.MCPBSigner, Severity: finding.Info,
		Message: fmt.Sprintf("signed by %s, certificate sha256 %s", termtext.Escape(s.Signer.String()), s.Signer.Fingerprint)}}
}

// CheckServed compares the tools a server serves with those the manifest
// declares: a served tool it does not declare is mcpb_undeclared_tool (an
// error, or a warning when the manifest says tools_generated: it declares
// that its server makes tools of its own at run time, which the trust
// policy and the pins still judge), and a declared tool served with
// another description than the one declared is mcpb_tool_mismatch. A
// declared tool without a description matches any. A declared tool the
// server does not serve is not a finding: hosts show the declared list at
// installation, and serving less is no attack.
func (m *Manifest) CheckServed(tools []etdi.LiveTool) []finding.Finding {
	var out []finding.Finding
	for _, t := range tools {
		decl, ok := m.Tool(t.Name)
		if !ok {
			f := finding.Finding{Kind: finding.MCPBUndeclaredTool, Severity: finding.Error, Tool: t.Name,
				Message: fmt.Sprintf("the server serves %q, which manifest.json of MCPB %q does not declare", cut(t.Name), cut(m.Name))}
			if m.ToolsGenerated {
				f.Severity = finding.Warning
				f.Message += " (it says tools_generated: the server makes tools of its own)"
			}
			out = append(out, f)
			continue
		}
		if !decl.HasDescription {
			continue
		}
		desc := ""
		if d := t.Definition().Get("description"); d != nil {
			desc = d.Str
		}
		if desc != decl.Description {
			out = append(out, finding.Finding{Kind: finding.MCPBToolMismatch, Severity: finding.Error, Tool: t.Name,
				Fields: []string{"description"},
				Message: fmt.Sprintf("the server describes %q as %q; manifest.json of MCPB %q declares %q",
					cut(t.Name), cut(desc), cut(m.Name), cut(decl.Description))})
		}
	}
	return out
}

// cut bounds text a server or a manifest chose before it is quoted into
// a message.
func cut(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
