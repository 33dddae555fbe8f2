package guard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/artifact"
	"github.com/etdi-dev/etdi/internal/redact"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
)

// Origin is where a listing comes from: the URL it was fetched from, or
// the command etdi starts and what that command runs, resolved before it
// is started (SPEC.md §4.1). A bundle that names its server's endpoints
// or artifacts is accepted only from them, and a pin records what served
// its tool, so that another implementation under the same definitions is
// a rug pull. Make one with [ResolveOrigin].
type Origin struct {
	url      string
	launched bool
	res      *artifact.Resolved
	err      error
}

// ResolveOrigin resolves what s is: for a URL, the URL; for a command,
// the artifact it runs (an npm or PyPI package from the lockfile or the
// runner's cache, an OCI image present locally, else the file the program
// or script is). A command whose artifact cannot be resolved still gives
// an [Origin], which says why (Unresolved).
func ResolveOrigin(ctx context.Context, s Launch) *Origin {
	if s.URL != "" {
		return &Origin{url: s.URL}
	}
	o := &Origin{launched: true}
	env := s.Env
	if env != nil {
		// The program is looked up as it will be started: on this
		// process's PATH (os/exec), whatever PATH the server is given.
		env = append(append([]string{}, env...), "PATH="+os.Getenv("PATH"))
	}
	o.res, o.err = artifact.Resolve(ctx, artifact.Launch{Argv: s.Command, Dir: s.Dir, Env: env})
	return o
}

// MCPBOrigin is the origin of a server started from an MCPB file that
// etdi read, hashed and extracted itself (package mcpb): what runs is what
// the file holds, so the file is the artifact, a (type mcpb, the
// manifest's name and version, the file's SHA-256), and a bundle that
// names MCPB artifacts is accepted only from that file.
func MCPBOrigin(a etdi.Artifact, file string) *Origin {
	return &Origin{launched: true, res: &artifact.Resolved{Artifact: a, From: "mcpb file " + file}}
}

// Artifact is what the command runs, and where that was read from; false
// when the origin is a URL or the artifact could not be resolved.
func (o *Origin) Artifact() (a etdi.Artifact, from string, ok bool) {
	if o == nil || o.res == nil {
		return etdi.Artifact{}, "", false
	}
	return o.res.Artifact, o.res.From, true
}

// Unresolved says why a command's artifact could not be resolved; nil
// when it was, or for a URL.
func (o *Origin) Unresolved() error {
	if o == nil {
		return nil
	}
	return o.err
}

// Served is what a pin records as serving its tools: "TYPE NAME@VERSION
// DIGEST" for an artifact, the URL's scheme, host, port and path for an
// endpoint (in lower case but the path; never its user information or
// query, and a path segment that looks like a credential is replaced by
// the first 12 hex digits of its SHA-256), "" when unknown.
func (o *Origin) Served() string {
	switch {
	case o == nil:
		return ""
	case o.url != "":
		u, err := url.Parse(o.url)
		if err != nil || u.Host == "" {
			return ""
		}
		scheme := strings.ToLower(u.Scheme)
		port := u.Port()
		if port == "" {
			port = map[string]string{"https": "443", "http": "80"}[scheme]
		}
		segs := strings.Split(u.EscapedPath(), "/")
		for i, seg := range segs {
			if redact.SegmentSecret(seg) {
				sum := sha256.Sum256([]byte(seg))
				segs[i] = "secret-" + hex.EncodeToString(sum[:6])
			}
		}
		return fmt.Sprintf("url %s://%s:%s%s", scheme, strings.ToLower(u.Hostname()), port, strings.Join(segs, "/"))
	case o.res != nil:
		a := o.res.Artifact
		s := a.Type + " " + a.Name
		if a.Version != "" {
			s += "@" + a.Version
		}
		return s + " " + a.Digest
	}
	return ""
}

// ServedAt is where the file Served names was found, for a file
// artifact (whose Served names only its base name): the path the launch
// names it by, before symbolic links are followed (a link a package
// manager repoints at each version stays the same file). [pin.IsUpdate]
// tells an edit of the approved file from a file of the same name
// elsewhere by it. Empty for any other artifact, a URL or an unresolved
// launch.
func (o *Origin) ServedAt() string {
	if o == nil || o.res == nil || o.res.Artifact.Type != etdi.ArtifactFile {
		return ""
	}
	if o.res.Path != "" {
		return o.res.Path
	}
	return strings.TrimPrefix(o.res.From, "file ")
}

// Verified reports whether etdi established what the command runs
// itself ([pin.Observation.ServedVerified]): a file it hashed, an image by
// its digest or from the local image store, a package of npm's own npx
// cache; not a version and integrity a project's lockfile records, which
// the repository writes whatever its node_modules holds.
func (o *Origin) Verified() bool {
	if o == nil || o.res == nil {
		return false
	}
	// Each by its artifact's type: a lockfile's From ends with the
	// directory it was found in, which may be named anything, " image
	// inspect" too.
	from := o.res.From
	switch o.res.Artifact.Type {
	case etdi.ArtifactFile:
		return strings.HasPrefix(from, "file ")
	case etdi.ArtifactNPM:
		return strings.HasPrefix(from, "npx cache ")
	case etdi.ArtifactOCI:
		return from == "image reference" || strings.HasSuffix(from, " image inspect")
	case etdi.ArtifactMCPB:
		return strings.HasPrefix(from, "mcpb file ")
	}
	return false
}

// verifyOrigin is the origin as package verify compares it.
func (o *Origin) verifyOrigin() *verify.Origin {
	if o == nil {
		return nil
	}
	if o.url != "" {
		return &verify.Origin{URL: o.url}
	}
	vo := &verify.Origin{Launched: true, Unresolved: o.err}
	if o.res != nil {
		res := o.res
		vo.Match = func(signed []etdi.Artifact) error { return artifact.Match(res, signed) }
	}
	return vo
}

// CheckOrigin holds a bundle that names its server's endpoints or
// artifacts to o before anything is started or fetched: etdi run with an
// out-of-band bundle refuses to start a server that is not the one the
// bundle was made for. The statement's signature is not verified here
// (refusing to start trusts nothing; the listing's check verifies it). It
// returns the findings: an impersonation, or what the trust policy's
// artifacts rule makes of an artifact that could not be resolved; none
// when the bundle names neither or does not parse.
func CheckOrigin(bundle []byte, o *Origin, p *trust.Policy) []finding.Finding {
	st := claimedStatement(bundle)
	if st == nil || p == nil {
		return nil
	}
	return verify.OriginFindings(st, p, o.verifyOrigin(), "")
}

// claimedStatement is the statement a bundle carries, its signature not
// verified; nil when the bundle or the statement does not parse.
func claimedStatement(bundle []byte) *etdi.Statement {
	b, err := etdi.ParseBundle(bundle)
	if err != nil {
		return nil
	}
	st, err := etdi.ParseStatement(b.Envelope.Payload)
	if err != nil {
		return nil
	}
	return st
}

// MovingTarget reports whether a command runs a moving target: a package
// runner without a fixed version (npx -y pkg, pkg@latest, uvx pkg), or an
// image without a digest by the tag latest or none; the text says what,
// and how to pin it.
func MovingTarget(argv []string) (bool, string) { return artifact.Moving(argv) }

// CheckPinnedOrigin compares what the command of a server without a bundle
// runs with what served its pinned tools at approval (docs/check.md#check-against-pins), before
// the server is started: etdi run refuses to start a replaced
// implementation rather than relay it. It returns a rug_pull finding per
// tool approved served by something else; none when the options carry a
// bundle (its own binding speaks for it), name no server, or nothing is
// known on either side. An unsigned server that runs an update of the
// artifact that served its pins ([pin.IsUpdate]) is one server_updated
// finding instead, decided by the trust policy's update rule: an error
// under block (the server is not started), else a warning (the gate
// starts it and judges its definitions at listing).
func CheckPinnedOrigin(o *Origin, opts Options) ([]finding.Finding, error) {
	now := o.Served()
	if now == "" && o.Unresolved() == nil {
		return nil, nil
	}
	server := opts.ServerKey()
	if server == "" {
		return nil, nil
	}
	shown := now
	if now == "" {
		shown = "what cannot be resolved (" + o.Unresolved().Error() + ")"
	}
	var out []finding.Finding
	var from, updated []string
	err := opts.WithPins(true, func(s *pin.Store) error {
		pins, err := s.ServerPins(server)
		if err != nil {
			return err
		}
		for _, p := range pins {
			if p.ServedAccepts(now) { // any approved variant (docs/storage.md#approved-variants)
				continue
			}
			if was := updatedFrom(&p, server, now, o.ServedAt()); was != "" {
				updated = append(updated, pin.ItemRef(p.Item, p.Tool))
				if !slices.Contains(from, was) {
					from = append(from, was)
				}
				continue
			}
			out = append(out, finding.Finding{Kind: finding.RugPull, Severity: finding.Error, Server: server, Item: p.Item, Tool: p.Tool,
				Fields: []string{"served"}, Changes: []etdi.Change{{Path: "/served", Op: "changed", Old: p.Served, New: now}},
				Message: fmt.Sprintf("%s %s was approved served by %s; the command now runs %s", pin.ItemWord(p.Item), pin.ItemRef(p.Item, p.Tool), p.Served, shown)})
		}
		return nil
	})
	if errors.Is(err, errNoPins) {
		return nil, nil
	}
	if len(updated) > 0 {
		out = append(out, startUpdateFinding(server, from, now, len(updated), opts.Policy.OnUpdate()))
	}
	return out, err
}

// updatedFrom is what served one of p's approved definitions when what
// the command runs now is an update of it (pin.IsUpdate), else "".
func updatedFrom(p *pin.Pin, server, now, nowAt string) string {
	for _, v := range p.All() {
		if v.Served != "" && pin.IsUpdate(server, v.Served, v.ServedAt, now, nowAt) {
			return v.Served
		}
	}
	return ""
}

// startUpdateFinding is the server_updated finding of a server about to
// be started: an error under the update rule block, else a warning (the
// definitions are judged once the server lists them).
func startUpdateFinding(server string, from []string, now string, n int, rule trust.UpdateRule) finding.Finding {
	was := strings.Join(from, ", ")
	f := finding.Finding{Kind: finding.ServerUpdated, Severity: finding.Warning, Server: server, Rule: string(rule),
		PinnedServed: was, Served: now, Fields: []string{"served"},
		Changes: []etdi.Change{{Path: "/served", Op: "changed", Old: was, New: now}}}
	what := fmt.Sprintf("server %s was updated: %s -> %s (%d approved item(s))", server, was, now, n)
	if rule == trust.UpdateBlock {
		f.Severity = finding.Error
		f.Message = what + "; the trust policy blocks updates of unsigned servers (its unsigned onUpdate rule is block: etdi trust unsigned --help)"
		return f
	}
	f.Message = what + "; starting it: its definitions are relayed only if they are the approved ones (trust policy: " + string(rule) + ")"
	return f
}

// ServerKey is the pin key of the server opts name: the one its bundle
// claims (the signature is verified once the server lists its tools,
// and refusing to start trusts nothing), or opts.Name unsigned; "" when
// they name none.
func (opts Options) ServerKey() string {
	switch {
	case opts.Bundle != nil:
		if st := claimedStatement(opts.Bundle); st != nil {
			return pin.SignedServerKey(st.Provider.ID, st.Server.Name)
		}
	case opts.Name != "" && pin.ValidateUnsignedName(opts.Name) == nil:
		return pin.UnsignedServerKey(opts.Name)
	}
	return ""
}
