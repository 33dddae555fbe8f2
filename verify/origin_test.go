package verify

import (
	"errors"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/trust"
)

// boundStatement is a statement whose server names what it is bound to.
func boundStatement(endpoints []string, artifacts []etdi.Artifact) *etdi.Statement {
	return &etdi.Statement{
		Provider: etdi.Provider{ID: "acme"},
		Server:   etdi.Server{Name: "weather", Endpoints: endpoints, Artifacts: artifacts},
		Tools:    []etdi.Tool{{Name: "get_forecast", Version: "1.0.0"}},
	}
}

var weatherArtifacts = []etdi.Artifact{{Type: "npm", Name: "@acme/weather", Version: "1.0.0"}}

// only returns the one finding of fs, failing unless there is exactly one
// of the kind and severity.
func only(t *testing.T, fs []finding.Finding, kind finding.Kind, sev finding.Severity) finding.Finding {
	t.Helper()
	if len(fs) != 1 || fs[0].Kind != kind || fs[0].Severity != sev {
		t.Fatalf("findings %+v, want one %s %s", fs, sev, kind)
	}
	return fs[0]
}

// A bundle bound to its endpoints, replayed by a server elsewhere, is
// impersonation however valid its signature; the same bundle fetched
// from one of its endpoints is bound as it says.
func TestOriginURLOutsideEndpoints(t *testing.T) {
	st := boundStatement([]string{"https://mcp.acme.example/weather"}, nil)
	p := &trust.Policy{}
	f := only(t, OriginFindings(st, p, &Origin{URL: "https://evil.example/weather"}, ""), finding.Impersonation, finding.Error)
	if !strings.Contains(f.Message, "served only from https://mcp.acme.example/weather") || !strings.Contains(f.Message, "evil.example") {
		t.Errorf("message does not name where the bundle is served and where the tools came from: %s", f.Message)
	}
	for _, url := range []string{"https://mcp.acme.example/weather", "https://mcp.acme.example/weather/mcp"} {
		if fs := OriginFindings(st, p, &Origin{URL: url}, ""); len(fs) != 0 {
			t.Errorf("tools from %s, an endpoint of the bundle: %+v", url, fs)
		}
	}
}

// A bundle bound to a stdio server's artifacts does not vouch for tools
// fetched over HTTP, and a bundle bound to endpoints does not vouch for
// tools of a command etdi started.
func TestOriginWrongTransport(t *testing.T) {
	p := &trust.Policy{}
	stdio := boundStatement(nil, weatherArtifacts)
	f := only(t, OriginFindings(stdio, p, &Origin{URL: "https://mcp.acme.example/weather"}, ""), finding.Impersonation, finding.Error)
	if !strings.Contains(f.Message, "bound to a stdio server's artifacts") {
		t.Errorf("message: %s", f.Message)
	}
	http := boundStatement([]string{"https://mcp.acme.example/weather"}, nil)
	matched := func([]etdi.Artifact) error { return nil }
	f = only(t, OriginFindings(http, p, &Origin{Launched: true, Match: matched}, ""), finding.Impersonation, finding.Error)
	if !strings.Contains(f.Message, "came from a command etdi started") {
		t.Errorf("message: %s", f.Message)
	}
}

// A started command is checked against the bundle's artifacts: one that
// runs something else is impersonation, and so is a command nothing
// resolved (no matcher: fail closed). One that runs the named artifact is
// bound as the bundle says.
func TestOriginLaunchedArtifacts(t *testing.T) {
	p := &trust.Policy{}
	st := boundStatement(nil, weatherArtifacts)
	var got []etdi.Artifact
	other := func(signed []etdi.Artifact) error {
		got = signed
		return errors.New("the command runs @evil/weather@1.0.0")
	}
	f := only(t, OriginFindings(st, p, &Origin{Launched: true, Match: other}, ""), finding.Impersonation, finding.Error)
	if !strings.Contains(f.Message, "@evil/weather") || len(got) != 1 || got[0] != weatherArtifacts[0] {
		t.Errorf("the matcher saw %+v; message: %s", got, f.Message)
	}
	only(t, OriginFindings(st, p, &Origin{Launched: true}, ""), finding.Impersonation, finding.Error)
	same := func([]etdi.Artifact) error { return nil }
	if fs := OriginFindings(st, p, &Origin{Launched: true, Match: same}, ""); len(fs) != 0 {
		t.Errorf("the command runs the bundle's artifact: %+v", fs)
	}
}

// What a command runs that cannot be resolved is what the trust policy's
// artifacts rule says: an error under require, a warning by default and
// under warn, information under ignore. The matcher is not consulted.
func TestOriginUnresolvedFollowsArtifactsRule(t *testing.T) {
	st := boundStatement(nil, weatherArtifacts)
	matchCalled := false
	o := &Origin{Launched: true, Unresolved: errors.New("npx: no package.json"),
		Match: func([]etdi.Artifact) error { matchCalled = true; return nil }}
	for rule, sev := range map[trust.ArtifactRule]finding.Severity{
		trust.ArtifactsRequire: finding.Error, trust.ArtifactsWarn: finding.Warning, "": finding.Warning, trust.ArtifactsIgnore: finding.Info,
	} {
		f := only(t, OriginFindings(st, &trust.Policy{Artifacts: rule}, o, ""), finding.ArtifactUnresolved, sev)
		if !strings.Contains(f.Message, "no package.json") {
			t.Errorf("rule %q: message does not say why: %s", rule, f.Message)
		}
	}
	if matchCalled {
		t.Error("an unresolved command was matched against the bundle's artifacts")
	}
}

// A statement that names neither endpoints nor artifacts, or tools that
// came from no server (a saved listing), check no binding.
func TestOriginUnboundOrOffline(t *testing.T) {
	p := &trust.Policy{Artifacts: trust.ArtifactsRequire}
	unbound := boundStatement(nil, nil)
	for _, o := range []*Origin{{URL: "https://anywhere.example/"}, {Launched: true}} {
		if fs := OriginFindings(unbound, p, o, ""); len(fs) != 0 {
			t.Errorf("unbound statement, origin %+v: %+v", o, fs)
		}
	}
	if fs := OriginFindings(boundStatement([]string{"https://mcp.acme.example/"}, weatherArtifacts), p, nil, ""); len(fs) != 0 {
		t.Errorf("no origin: %+v", fs)
	}
}
