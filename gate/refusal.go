package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/internal/redact"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/pin"
)

// Refusal is etdi run's answer when what it would start is not what was
// approved ([Preflight]): the server is not started, and the host's
// session is answered by etdi itself ([ServeRefusal]), so that the host
// shows the server connected with a message the person can act on,
// instead of a connection that closed.
type Refusal struct {
	// Server names the server (its pin key, else the name it was given).
	Server string
	// Findings are what Preflight found, every one of them; at least one
	// is an error.
	Findings []finding.Finding
	// Code is the exit code of the findings (finding.ExitCode): etdi run
	// exits with it once the host has left.
	Code int
	// Review is the exact command that shows the person what changed;
	// Approve, when not "", the one that approves it (the items named).
	Review, Approve string
	// Version is etdi's own version, given as the session's serverInfo.
	Version string
}

// maxRefusalShown bounds the findings a refusal's text names; the rest
// are counted.
const maxRefusalShown = 5

// Message is the refusal as one text, for a person: what etdi did not
// start and why (the first findings, escaped and clipped), and the
// command that reviews it (never the one that approves it: see below).
func (r *Refusal) Message() string {
	var b strings.Builder
	fmt.Fprintf(&b, "etdi did not start %s: what it would run is not what was approved (exit %d).", orUnknown(r.Server), r.Code)
	n := 0
	for _, f := range r.Findings {
		if f.Severity != finding.Error {
			continue
		}
		if n++; n > maxRefusalShown {
			continue
		}
		fmt.Fprintf(&b, " %s: %s.", f.Kind, strings.TrimSuffix(termtext.Escape(clipText(f.Message)), "."))
	}
	if n > maxRefusalShown {
		fmt.Fprintf(&b, " And %d more.", n-maxRefusalShown)
	}
	// Only the review command: what the host is told may reach a model,
	// and a model that can run commands must not be handed the one that
	// approves without asking (etdi pin approve --tool). The person finds
	// it on etdi's stderr and in the review.
	fmt.Fprintf(&b, " Review it with: %s", r.Review)
	return b.String()
}

// Preflight decides, before anything is started or fetched, whether the
// server opts name may be started from o: a bundle that names its
// server's endpoints or artifacts must be served by them ([guard.CheckOrigin]),
// and the tools pinned for a server without one must be served by what
// served them at approval ([guard.CheckPinnedOrigin]). It returns every finding,
// and a [Refusal] when any of them is an error (whatever its kind): then
// the server must not be started. The refusal's Review is opts.Review
// (default "etdi check"), with " --approve" when approving can resolve a
// finding, and opts.ReviewTarget; Approve names the items to approve with
// etdi pin approve. Secrets of opts.Credentials are masked in the
// findings. An error (pins that cannot be read) starts nothing either.
func Preflight(o *guard.Origin, opts Options) ([]finding.Finding, *Refusal, error) {
	findings := guard.CheckOrigin(opts.Bundle, o, opts.Policy)
	pinned, err := guard.CheckPinnedOrigin(o, opts.Options)
	if err != nil {
		return nil, nil, err
	}
	findings = append(findings, pinned...)
	var secrets redact.Set
	for _, c := range opts.Credentials {
		secrets.Add(c.Value)
	}
	for i := range findings {
		findings[i].Message = secrets.String(findings[i].Message)
	}
	code := finding.ExitCode(findings)
	if code == finding.ExitOK {
		return findings, nil, nil
	}
	server := opts.Options.ServerKey()
	if server == "" {
		server = opts.Name
	}
	review := opts.Review
	if review == "" {
		review = "etdi check"
	}
	var named []string
	approvable := false
	for _, f := range findings {
		if f.Severity != finding.Error {
			continue
		}
		switch f.Kind.Approvability() {
		case finding.Approvable:
			approvable = true
		case finding.ApprovableByName:
			approvable = true
			if ref := pin.ItemRef(f.Item, f.Tool); f.Tool != "" && !slices.Contains(named, ref) {
				named = append(named, ref) // etdi pin approve --tool names any item so
			}
		}
	}
	r := &Refusal{Server: server, Findings: findings, Code: code}
	approve := ""
	if approvable && !opts.ReadOnly {
		approve = " --approve"
	}
	r.Review = joinCommand(review+approve, opts.ReviewTarget)
	if len(named) > 0 && !opts.ReadOnly && strings.Contains(review, "etdi check") {
		tools := ""
		for _, t := range named {
			tools += " --tool " + termtext.ShellQuote(t)
		}
		r.Approve = joinCommand(strings.Replace(review, "etdi check", "etdi pin approve", 1)+tools, opts.ReviewTarget)
	}
	return findings, r, nil
}

func joinCommand(cmd, target string) string {
	if target == "" {
		return cmd
	}
	return cmd + " " + target
}

// refusalProtocols are the MCP versions a refusal session answers in
// when the host asks for one of them; any other gets
// mcpclient.ProtocolVersion.
var refusalProtocols = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// ServeRefusal answers the host's session itself, with r, until the host
// ends it (nil) or ctx is done (its error); the server is never started:
//
//   - initialize gets etdi's own serverInfo ("etdi"), capabilities for
//     tools, prompts, resources and logging, and instructions that say
//     what happened (r.Message);
//   - after notifications/initialized, one notifications/message at level
//     warning (logger etdi) with the message, the findings and the
//     commands;
//   - ping and logging/setLevel get an empty result; tools/list,
//     prompts/list, resources/list and resources/templates/list an empty
//     list;
//   - every other request (a tools/call, prompts/get, resources/read, any
//     method) is refused with BlockedCode, naming the review command.
//
// Log, if not nil, gets a line for each request refused.
func ServeRefusal(ctx context.Context, host guard.Conn, r *Refusal, log func(string)) error {
	defer host.Close()
	msg := r.Message()
	kind := ""
	for _, f := range r.Findings {
		if f.Severity == finding.Error {
			kind = string(f.Kind)
			break
		}
	}
	told := false
	for {
		data, err := host.Read(ctx)
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case errors.Is(err, io.EOF):
				return nil
			}
			return fmt.Errorf("reading from the host: %w", err)
		}
		m, err := mcpclient.Decode(data)
		if err != nil {
			if err := host.Write(ctx, mcpclient.EncodeError(nil, -32700, "etdi: not a JSON-RPC message: "+clipText(err.Error()), nil)); err != nil {
				return err
			}
			continue
		}
		if !m.Request {
			continue // an answer to nothing etdi asked
		}
		var out []byte
		switch m.Method {
		case "notifications/initialized":
			if m.ID != nil {
				out = mcpclient.EncodeError(m.ID, -32600, "etdi: notifications/initialized is a notification, not a request", nil)
				break
			}
			if told {
				continue
			}
			told = true
			out = refusalNotice(r, msg)
		case "initialize":
			if m.ID == nil {
				continue
			}
			out = mcpclient.EncodeResult(m.ID, refusalInitialize(m.Params, r, msg))
		case "ping", "logging/setLevel":
			if m.ID == nil {
				continue
			}
			out = mcpclient.EncodeResult(m.ID, []byte(`{}`))
		case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
			if m.ID == nil {
				continue
			}
			out = mcpclient.EncodeResult(m.ID, []byte(refusalLists[m.Method]))
		default:
			if m.ID == nil {
				continue // a notification (cancelled, roots changed) has nothing to stop
			}
			if log != nil {
				log(termtext.Escape("etdi: refused " + clipText(m.Method) + " of the host: the server was not started (review: " + r.Review + ")"))
			}
			data, _ := json.Marshal(map[string]any{"etdi": "blocked", "kind": kind, "server": r.Server,
				"review": r.Review, "message": msg})
			out = mcpclient.EncodeError(m.ID, BlockedCode, msg, data)
		}
		if err := host.Write(ctx, out); err != nil {
			return err
		}
	}
}

// refusalLists are the empty answers of a refusal session's listings.
var refusalLists = map[string]string{
	"tools/list": `{"tools":[]}`, "prompts/list": `{"prompts":[]}`,
	"resources/list": `{"resources":[]}`, "resources/templates/list": `{"resourceTemplates":[]}`,
}

// refusalInitialize is the result of a refusal session's initialize.
func refusalInitialize(params []byte, r *Refusal, msg string) []byte {
	version := mcpclient.ProtocolVersion
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(params, &p) == nil && slices.Contains(refusalProtocols, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	v := r.Version
	if v == "" {
		v = "dev"
	}
	out, _ := json.Marshal(map[string]any{
		"protocolVersion": version,
		"capabilities": map[string]any{
			"tools": map[string]any{}, "prompts": map[string]any{}, "resources": map[string]any{}, "logging": map[string]any{},
		},
		"serverInfo":   map[string]any{"name": "etdi", "version": v},
		"instructions": msg,
	})
	return out
}

// refusalNotice is the notifications/message of a refusal session.
func refusalNotice(r *Refusal, msg string) []byte {
	type entry struct {
		Item    string `json:"item,omitempty"`
		Name    string `json:"name,omitempty"`
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}
	var es []entry
	for _, f := range r.Findings {
		if f.Severity == finding.Error && len(es) < maxTold {
			es = append(es, entry{f.Item, clipText(f.Tool), string(f.Kind), clipText(f.Message)})
		}
	}
	params, _ := json.Marshal(map[string]any{"level": "warning", "logger": EtdiLogger,
		"data": map[string]any{"message": msg, "server": r.Server, "refused": es, "review": r.Review, "exitCode": r.Code}})
	return mcpclient.EncodeRequest(nil, "notifications/message", params)
}
