package main

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/redact"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/release"
	"github.com/etdi-dev/etdi/strictjson"
	"github.com/spf13/cobra"
)

func (e *env) manifestCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "manifest",
		Short: "Start a tool manifest from what a server serves, or check a server against one",
	}
	cmd.AddCommand(e.manifestInitCmd(), e.manifestCheckCmd())
	return cmd
}

// listTools lists the tools of a target that is a saved tools/list or a
// live server, and the name a live server reports.
func (e *env) listTools(sf *serverFlags, t *target) ([]etdi.LiveTool, string, error) {
	if t.toolsFile != "" {
		data, err := e.readInput(t.toolsFile)
		if err != nil {
			return nil, "", err
		}
		tl, err := etdi.ParseList(data, etdi.ListOptions{})
		if err != nil {
			if uerr := notAListing(t.toolsFile, data); uerr != nil {
				return nil, "", uerr
			}
			return nil, "", fmt.Errorf("%s: %w", t.toolsFile, err)
		}
		return tl.Tools, "", nil
	}
	l, err := e.fetch(sf, t)
	if err != nil {
		return nil, "", err
	}
	return l.Tools, l.ServerName, nil
}

func (e *env) manifestCheckCmd() *cobra.Command {
	var sf serverFlags
	var asJSON bool
	var serverJSON string
	cmd := &cobra.Command{
		Use:   "check MANIFEST (--server -- CMD... | --url URL | --tools FILE | --server-json FILE) [--json]",
		Short: "Fail when a server does not serve exactly a manifest's tool definitions, or server.json disagrees with it",
		Long: `Ask a server for its tools and compare them with the definitions of a
manifest (docs/provider.md#a-server-against-its-manifest), so that CI catches drift before a release is
signed: a tool of the manifest the server does not serve, a tool the server
serves that the manifest lacks, a tool listed twice, or any member of a
definition that differs. A changed definition is shown field by field, as
RFC 6901 paths with the manifest's value and the served one; a missing or
extra tool is shown whole. Definitions are compared by digest (SPEC.md §3):
key order, whitespace, escapes and an in-band bundle never count.

Signed as it is, a manifest that drifts from its server fails every client
that verifies the server against the bundle (definition_changed, exit 11;
unsigned_tool, exit 10). Read-only: nothing is signed, pinned or written.

--server-json compares the manifest's server section with the registry
entry a server.json publishes (docs/registry.md#provider-publishing-a-signed-server), alone or beside a
server: server.registryName must be server.json's name, server.version its
version, and server.artifacts and server.endpoints must bind each of its
packages (npm and PyPI name and version, OCI image digest or tag, MCPB
fileSha256) and remotes. Each difference is named. A client checking the
registry entry against a bundle signed from such a manifest finds
impersonation (exit 12). The order of server.json's members and its
whitespace never count.

Exit codes: 0 the server serves exactly the manifest's definitions and
server.json agrees, 11 the server drifts, 12 server.json disagrees (12
when both), 1 the manifest, server.json or the server could not be read,
2 usage.
--json prints {"schemaVersion": 1, "manifest", "server", "ok", "summary",
"tools": [{"name", "status" (match, changed, missing, extra, duplicate),
"version", "manifestDigest", "servedDigest", "fields", "changes",
"definition"}], "serverJson": {"file", "name", "version", "ok",
"mismatches": [{"what", "why"}]}, "exitCode"}; "server", "summary" and
"tools" only when a server was checked, "serverJson" only with
--server-json.`,
		Example: `  etdi manifest check weather.manifest.json --server -- node server.js
  etdi manifest check weather.manifest.json --url http://127.0.0.1:8080/mcp --json
  etdi manifest check weather.manifest.json --tools live.json
  etdi manifest check weather.manifest.json --server-json server.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			pos, rest, dash := args, []string(nil), -1
			if d := cmd.ArgsLenAtDash(); d >= 0 {
				pos, rest, dash = args[:d], args[d:], 0
			}
			if len(pos) != 1 {
				return usagef("manifest check takes the manifest file, then the server: MANIFEST (--server -- CMD... | --url URL | --tools FILE | --server-json FILE)")
			}
			live := sf.tools != "" || sf.server || sf.url != "" || dash >= 0
			var t target
			if live || serverJSON == "" {
				ts, err := e.targets(&sf, rest, dash)
				if err != nil {
					return err
				}
				t = ts[0]
			}
			data, err := e.readInput(pos[0])
			if err != nil {
				return err
			}
			m, err := etdi.ParseManifest(data)
			if err != nil {
				return fmt.Errorf("%s: %w", pos[0], err)
			}
			var sjr *serverJSONCheck
			if serverJSON != "" {
				sj, err := e.readServerJSON(serverJSON)
				if err != nil {
					return err
				}
				sjr = &serverJSONCheck{File: serverJSON, Name: sj.Name, Version: sj.Version, Mismatches: []serverJSONMismatch{}}
				for _, mm := range registry.Compare(sj, m.Server) {
					sjr.Mismatches = append(sjr.Mismatches, serverJSONMismatch{mm.What, mm.Why})
				}
				sjr.OK = len(sjr.Mismatches) == 0
			}
			var results []release.ServedTool
			var summary string
			code, drifts := exitOK, false
			if live || sjr == nil {
				tools, _, err := e.listTools(&sf, &t)
				if err != nil {
					return err
				}
				results = release.CompareServed(m, tools)
				summary = release.DriftSummary(results)
				if release.CheckServed(m, tools) != nil {
					code, drifts = exitRugPull, true
				}
			}
			if sjr != nil && !sjr.OK {
				code = worse(code, exitImpersonation)
			}
			if asJSON {
				out := manifestCheckJSON{SchemaVersion: 1, Manifest: pos[0], OK: code == exitOK, ServerJSON: sjr, ExitCode: code}
				if live || sjr == nil {
					out.Server, out.Summary, out.Tools = &t.Label, &summary, &results
				}
				if err := e.writeJSON(out); err != nil {
					return err
				}
				return exitWith(code)
			}
			if live || sjr == nil {
				if !drifts {
					say(e.stdout, "OK %s: %s serves exactly the manifest's %d tool definition(s)\n", pos[0], t.Label, len(m.Tools))
				} else {
					say(e.stdout, "FAILED %s (exit %d): %s does not serve the manifest's definitions (%s)\n", pos[0], exitRugPull, t.Label, summary)
				}
				for i := range results {
					r := &results[i]
					say(e.stdout, "  %s\n", r.Summary())
					sayChanges(e.stdout, "      ", r.Changes, nil, nil)
					if r.Definition != nil {
						sayJSON(e.stdout, "      ", r.Definition)
					}
				}
			}
			if sjr != nil {
				if sjr.OK {
					say(e.stdout, "OK %s: server.json %s names the manifest's server: %s %s, every package and remote bound\n", pos[0], serverJSON, sjr.Name, sjr.Version)
				} else {
					say(e.stdout, "FAILED %s (exit %d): server.json %s disagrees with the manifest (%d difference(s)); a client checking the registry entry would find impersonation\n", pos[0], exitImpersonation, serverJSON, len(sjr.Mismatches))
					for _, mm := range sjr.Mismatches {
						say(e.stdout, "  %s: %s\n", mm.What, mm.Why)
					}
				}
			}
			return exitWith(code)
		},
	}
	sf.registerTools(cmd.Flags())
	sf.registerLive(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	cmd.Flags().StringVar(&serverJSON, "server-json", "", "compare the manifest's server section with this server.json (alone, or beside a server)")
	return cmd
}

// manifestCheckJSON is manifest check's --json output.
type manifestCheckJSON struct {
	SchemaVersion int                   `json:"schemaVersion"`
	Manifest      string                `json:"manifest"`
	Server        *string               `json:"server,omitempty"`
	OK            bool                  `json:"ok"`
	Summary       *string               `json:"summary,omitempty"`
	Tools         *[]release.ServedTool `json:"tools,omitempty"`
	ServerJSON    *serverJSONCheck      `json:"serverJson,omitempty"`
	ExitCode      int                   `json:"exitCode"`
}

// serverJSONCheck is how a manifest compares with a server.json
// (registry.Compare).
type serverJSONCheck struct {
	File       string               `json:"file"`
	Name       string               `json:"name"`
	Version    string               `json:"version"`
	OK         bool                 `json:"ok"`
	Mismatches []serverJSONMismatch `json:"mismatches"`
}

type serverJSONMismatch struct {
	What string `json:"what"`
	Why  string `json:"why"`
}

func (e *env) manifestInitCmd() *cobra.Command {
	var sf serverFlags
	var provider, providerName, serverName, toolVersion string
	var endpoints, inputs, mcpbFiles []string
	var noBind bool
	var serverJSON string
	cmd := &cobra.Command{
		Use:   "init --provider ID (--server -- CMD... | --url URL | --tools FILE | --server-json FILE)",
		Short: "Write a manifest of every tool a server serves, to complete and sign",
		Long: `Ask a server for its tools and print a manifest (SPEC.md §4) with each tool's
definition exactly as served. Every tool gets --version (default 1.0.0) and
an empty permissions list: edit both, declaring the scopes each tool needs,
then sign the manifest with etdi sign.

The server is bound to what init connected to (SPEC.md §4.1), so that
clients accept the bundle only from it: for --url, server.endpoints holds
the URL (https, or http to a loopback host; --endpoint names others, such
as the public URL of a server init reached locally); for a command,
server.artifacts holds what it runs: the npm or PyPI package from the
lockfile or the runner's cache, the OCI image's digest, or the SHA-256 of
the program or script. --no-bind leaves both out.

With --server-json, the server is the one a registry entry publishes
(docs/registry.md#provider-publishing-a-signed-server): server.registryName
is server.json's name, server.name the part after its "/" (unless
--server-name), server.version its version; server.endpoints are its
remotes' URLs (a URL with {variables} is refused: no endpoint can cover
what a host fills in), and server.artifacts bind each package: an MCPB by
the file --mcpb gives whose SHA-256 is its fileSha256 (the artifact's name
and version are the file's manifest.json's, as etdi check --mcpb compares
them), an OCI image named by digest by that digest, and an npm or
PyPI package or an image by tag by what a host's launch of it runs,
resolved as for a command once the server was listed (from the project's
lockfile, or npx's cache, where starting the package put it). Without
--server, --url or --tools the tools come from starting server.json's
first stdio package as a host would (npx -y PACKAGE@VERSION, uvx, docker
run), else from its first remote; --input NAME=VALUE gives the package's or remote's inputs (an
environment variable, a header, an argument's flag or valueHint, a URL
variable). Every package and remote must end up bound, else init fails
naming each one it could not bind: clients checking the registry entry
would refuse the bundle. --no-bind cannot be combined with --server-json.`,
		Example: `  etdi manifest init --provider acme --server -- node server.js > weather.manifest.json
  etdi manifest init --provider acme --url http://127.0.0.1:8080/mcp --endpoint https://mcp.acme.example/weather > weather.manifest.json
  etdi manifest init --provider acme --server-json server.json > weather.manifest.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := etdi.ValidateProviderID(provider); err != nil {
				return usagef("--provider: %v", err)
			}
			_, err := etdi.ParseVersion(toolVersion)
			if err != nil {
				return usagef("--version: %v", err)
			}
			if (len(inputs) > 0 || len(mcpbFiles) > 0) && serverJSON == "" {
				return usagef("--input and --mcpb need --server-json")
			}
			if noBind && serverJSON != "" {
				return usagef("--no-bind cannot be combined with --server-json: clients checking the registry entry refuse a bundle that does not bind its packages and remotes")
			}
			var sj *registry.ServerJSON
			var in registry.Inputs
			var t target
			if serverJSON != "" {
				if sj, err = e.readServerJSON(serverJSON); err != nil {
					return err
				}
				if in, err = parseRegistryInputs(inputs); err != nil {
					return err
				}
			}
			if sj != nil && sf.tools == "" && !sf.server && sf.url == "" && len(args) == 0 {
				if t, err = serverJSONTarget(serverJSON, sj, in); err != nil {
					return err
				}
			} else {
				ts, err := e.targets(&sf, args, cmd.ArgsLenAtDash())
				if err != nil {
					return err
				}
				t = ts[0]
			}
			name := serverName
			var bind etdi.Server
			for _, ep := range endpoints {
				if err := etdi.ValidateEndpoint(ep); err != nil {
					return usagef("--endpoint: %v", err)
				}
				bind.Endpoints = append(bind.Endpoints, ep)
			}
			if sj == nil && !noBind && t.toolsFile == "" {
				switch o := guard.ResolveOrigin(e.ctx, t.Server()); {
				case t.URL != "" && len(endpoints) == 0:
					ep := endpointOf(t.URL)
					if err := etdi.ValidateEndpoint(ep); err != nil {
						say(e.stderr, "etdi: not binding the bundle to %s: %s (give --endpoint with the URL clients use)\n", redact.URL(t.URL), err.Error())
					} else {
						bind.Endpoints = []string{ep}
					}
				case t.URL == "":
					if a, from, ok := o.Artifact(); ok {
						bind.Artifacts = []etdi.Artifact{a}
						say(e.stderr, "etdi: bound to %s (from %s)\n", a.String(), from)
					} else {
						say(e.stderr, "etdi: not binding the bundle to an artifact: %s\n", o.Unresolved().Error())
					}
				}
			}
			tools, served, err := e.listTools(&sf, &t)
			if err != nil {
				return err
			}
			if sj != nil {
				// Resolved once the server ran: a package npx fetched
				// to start it is then in npx's cache.
				extra := bind.Endpoints
				if bind, err = e.serverJSONBinding(serverJSON, sj, &t, in, mcpbFiles); err != nil {
					return err
				}
				for _, ep := range extra {
					if !slices.Contains(bind.Endpoints, ep) {
						bind.Endpoints = append(bind.Endpoints, ep)
					}
				}
				if name == "" {
					name = bind.Name
				}
			}
			if name == "" {
				name = served
			}
			if name == "" {
				return usagef("--server-name is required when the server's name is unknown")
			}
			if len(tools) == 0 {
				return fmt.Errorf("%s offers no tools", t.Label)
			}
			var b strings.Builder
			b.WriteString("{\n  \"provider\": ")
			b.Write(strictjson.AppendCanonical(nil, &strictjson.Value{Kind: strictjson.Object, Members: providerMembers(provider, providerName)}))
			b.WriteString(",\n  \"server\": ")
			bind.Name = name
			b.Write(strictjson.AppendCanonical(nil, etdi.ServerValue(bind)))
			b.WriteString(",\n  \"tools\": [")
			for i, lt := range tools {
				if i > 0 {
					b.WriteString(",")
				}
				def := conventionalOrder(etdi.StripMeta(lt.Definition()))
				fmt.Fprintf(&b, "\n    {\n      \"version\": %q,\n      \"permissions\": [],\n      \"definition\": ", toolVersion)
				b.Write(strictjson.AppendIndent(nil, def, "      ", "  "))
				b.WriteString("\n    }")
			}
			b.WriteString("\n  ]\n}\n")
			if _, err := etdi.ParseManifest([]byte(b.String())); err != nil {
				return fmt.Errorf("the server's tools do not make a valid manifest: %w", err)
			}
			// The same JSON value, with hidden characters as \u escapes.
			e.stdout.Write(termtext.EscapeJSON([]byte(b.String())))
			fmt.Fprintf(e.stderr, "etdi: %d tool(s); set each tool's version and declare its permissions, then run etdi sign\n", len(tools))
			return nil
		},
	}
	sf.registerTools(cmd.Flags())
	sf.registerLive(cmd.Flags())
	cmd.Flags().StringVar(&provider, "provider", "", "provider id (required)")
	cmd.Flags().StringVar(&providerName, "provider-name", "", "provider display name")
	cmd.Flags().StringVar(&serverName, "server-name", "", "server name (default: the name the server reports)")
	cmd.Flags().StringVar(&toolVersion, "version", "1.0.0", "version given to every tool")
	cmd.Flags().StringArrayVar(&endpoints, "endpoint", nil, "a URL the server is served from, for server.endpoints (repeatable; default: the --url init connected to)")
	cmd.Flags().BoolVar(&noBind, "no-bind", false, "leave server.endpoints and server.artifacts out: the bundle is accepted from any server")
	cmd.Flags().StringVar(&serverJSON, "server-json", "", "the server's server.json: take its name, version, packages and remotes, and start its first stdio package unless the server is given")
	cmd.Flags().StringArrayVar(&mcpbFiles, "mcpb", nil, "with --server-json: an MCPB file server.json names (by its fileSha256), whose manifest.json names its artifact (repeatable)")
	cmd.Flags().StringArrayVar(&inputs, "input", nil, "with --server-json: a value for an input of the package or remote started, NAME=VALUE (repeatable)")
	return cmd
}

func providerMembers(id, name string) []strictjson.Member {
	ms := []strictjson.Member{{Name: "id", Value: &strictjson.Value{Kind: strictjson.String, Str: id}}}
	if name != "" {
		ms = append(ms, strictjson.Member{Name: "name", Value: &strictjson.Value{Kind: strictjson.String, Str: name}})
	}
	return ms
}

// mcpOrder is the order MCP documents list a tool's members in.
var mcpOrder = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations", "icons", "_meta"}

// conventionalOrder puts a definition's top-level members in MCP's usual
// order, the rest after them, for people reading the manifest. The value
// (and so its digest) does not change.
func conventionalOrder(v *strictjson.Value) *strictjson.Value {
	out := &strictjson.Value{Kind: strictjson.Object}
	for _, n := range mcpOrder {
		if m := v.Get(n); m != nil {
			out.Members = append(out.Members, strictjson.Member{Name: n, Value: m})
		}
	}
	for _, m := range v.Members {
		known := false
		for _, n := range mcpOrder {
			known = known || n == m.Name
		}
		if !known {
			out.Members = append(out.Members, m)
		}
	}
	return out
}

// endpointOf is the endpoint a URL is served at: scheme, host, port and
// path, without user information, query or fragment.
func endpointOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}
