package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/internal/registrytest"
	"github.com/etdi-dev/etdi/registry"
	"github.com/rogpeppe/go-internal/testscript"
)

// The fixture of the scripts about MCP registries: the official registry
// server on PostgreSQL (internal/registrytest), one shared by the scripts
// of a test run, or one of a script's own.
//
// Condition:
//
//	[registry]   the registry fixture runs here (PostgreSQL installed, the
//	             registry built); a script starts with
//	             [!registry] skip 'REASON'. Under CI=true a script that
//	             needs the fixture fails instead, with the reason.
//
// Environment of a script that names the condition, $REGISTRY or a
// registry-* command:
//
//	$REGISTRY  the URL of the shared registry (http://127.0.0.1:PORT). The
//	           scripts share it: each publishes server names of its own
//	           (a namespace named after the script, say), and none counts
//	           what the whole registry lists
//
// Commands (on the script's registry: the shared one, or its own after
// registry-start):
//
//	registry-start                 starts a registry of the script's own, stopped when
//	                               the script ends, and sets $REGISTRY to its URL: for a
//	                               script that counts entries or publishes names
//	                               another script may publish
//	registry-publish FILE...       publishes each server.json FILE through the registry's
//	                               publish API; ! registry-publish expects the registry
//	                               to refuse the first FILE, and prints its answer
//	registry-edit FILE             replaces the published version of FILE's name and
//	                               version with FILE, as a registry's operator can
//	registry-status NAME VERSION STATUS
//	                               sets a version's status (active, deprecated, deleted)
//	registry-get NAME VERSION      prints the registry's entry of NAME at VERSION
//	                               ("latest" for the latest) as it answers it;
//	                               ! registry-get expects it not to be found
//
// and, for the bundles entries name:
//
//	release-host VAR DIR           serves the files of DIR (created if missing) over
//	                               http on 127.0.0.1, as a release page serves the
//	                               bundle a server.json names, until the script ends;
//	                               a file replaced in DIR is served replaced. Sets VAR
//	                               to its URL, http://127.0.0.1:PORT
//	release-attach IN BUNDLE URL OUT
//	                               writes the server.json IN to OUT with its dev.etdi
//	                               metadata naming the bundle at URL with the SHA-256
//	                               of the file BUNDLE (registry.SetEtdiMeta), as a
//	                               provider's release publishes it
//	registry-mcp-publisher VAR     sets VAR to the path of the registry's own
//	                               mcp-publisher, built from the same module
func init() {
	scriptConditions["registry"] = func() bool {
		_, err := registrytest.SharedRegistry()
		return err == nil
	}
	scriptSetups = append(scriptSetups, setupRegistry)
	scriptCmds["release-host"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: release-host VAR DIR")
		}
		dir := ts.MkAbs(args[1])
		ts.Check(os.MkdirAll(dir, 0o755))
		srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
		ts.Defer(srv.Close)
		ts.Setenv(args[0], srv.URL)
	}
	scriptCmds["release-attach"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 4 {
			ts.Fatalf("usage: release-attach IN BUNDLE URL OUT")
		}
		bundle, err := os.ReadFile(ts.MkAbs(args[1]))
		ts.Check(err)
		out, err := registry.SetEtdiMeta([]byte(ts.ReadFile(args[0])), registry.EtdiMeta{Bundle: args[2], Digest: registry.Digest(bundle)})
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs(args[3]), out, 0o644))
	}
	scriptCmds["registry-start"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 0 {
			ts.Fatalf("usage: registry-start")
		}
		sr := scriptRegistryOf(ts)
		r, err := registrytest.StartOwn()
		ts.Check(err)
		ts.Defer(r.Stop)
		sr.r = r
		ts.Setenv("REGISTRY", r.URL)
	}
	scriptCmds["registry-publish"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) == 0 {
			ts.Fatalf("usage: registry-publish FILE...")
		}
		r := scriptRegistryOf(ts).get(ts)
		for _, f := range args {
			err := r.Publish(context.Background(), []byte(ts.ReadFile(f)))
			if neg {
				var se *registrytest.StatusError
				if err == nil {
					ts.Fatalf("the registry published %s", f)
				}
				if !errors.As(err, &se) {
					ts.Fatalf("publishing %s: %v", f, err)
				}
				fmt.Fprintf(ts.Stdout(), "%d %s\n", se.Status, se.Body)
				return
			}
			ts.Check(err)
		}
	}
	scriptCmds["registry-edit"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: registry-edit FILE")
		}
		r := scriptRegistryOf(ts).get(ts)
		ts.Check(r.Edit(context.Background(), []byte(ts.ReadFile(args[0]))))
	}
	scriptCmds["registry-status"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 3 {
			ts.Fatalf("usage: registry-status NAME VERSION STATUS")
		}
		r := scriptRegistryOf(ts).get(ts)
		ts.Check(r.SetStatus(context.Background(), args[0], args[1], args[2]))
	}
	scriptCmds["registry-mcp-publisher"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: registry-mcp-publisher VAR")
		}
		bin, err := registrytest.PublisherProgram()
		ts.Check(err)
		ts.Setenv(args[0], bin)
	}
	scriptCmds["registry-get"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 2 {
			ts.Fatalf("usage: registry-get NAME VERSION")
		}
		r := scriptRegistryOf(ts).get(ts)
		b, err := r.Get(context.Background(), args[0], args[1])
		var se *registrytest.StatusError
		switch {
		case neg && errors.As(err, &se) && se.Status == 404:
		case neg && err == nil:
			ts.Fatalf("the registry has %s %s", args[0], args[1])
		case err != nil:
			ts.Fatalf("%v", err)
		default:
			ts.Stdout().Write(append(b, '\n'))
		}
	}
}

// registryKey keys a script's *scriptRegistry in its values.
type registryKey struct{}

// scriptRegistry is the registry of one script: the shared one unless
// the script started its own.
type scriptRegistry struct {
	r *registrytest.Registry
}

func scriptRegistryOf(ts *testscript.TestScript) *scriptRegistry {
	sr, ok := ts.Value(registryKey{}).(*scriptRegistry)
	if !ok {
		ts.Fatalf("the registry fixture was not set up")
	}
	return sr
}

func (sr *scriptRegistry) get(ts *testscript.TestScript) *registrytest.Registry {
	if sr.r == nil {
		r, err := registrytest.SharedRegistry()
		ts.Check(err)
		sr.r = r
	}
	return sr.r
}

// usesRegistry finds in a script's text the condition [registry], the
// variable $REGISTRY or a registry-* command.
var usesRegistry = regexp.MustCompile(`\[!?registry\]|\$\{?REGISTRY\b|(?m)^\s*(!\s*)?registry-[a-z]+\b`)

// setupRegistry gives $REGISTRY to a script that uses the registry
// fixture, starting the shared registry on first use; a script that does
// not is left alone, so that runs of other scripts do not start it. Under
// CI=true a script that uses the fixture where it cannot run fails.
func setupRegistry(env *testscript.Env) error {
	env.Values[registryKey{}] = &scriptRegistry{}
	named, ok := env.T().(interface{ Name() string })
	if !ok {
		return nil
	}
	_, file, _ := strings.Cut(named.Name(), "/")
	text, err := os.ReadFile(filepath.Join("testdata", "script", file+".txtar"))
	if err != nil {
		return nil // not one of testdata/script's files
	}
	if i := strings.Index(string(text), "\n-- "); i >= 0 {
		text = text[:i] // the script, not its files
	}
	if !usesRegistry.Match(text) {
		return nil
	}
	r, err := registrytest.SharedRegistry()
	var u *registrytest.UnavailableError
	switch {
	case errors.As(err, &u) && !registrytest.InCI():
		return nil // [registry] is false: the script skips, saying why
	case err != nil:
		return fmt.Errorf("the registry fixture: %w", err)
	}
	env.Setenv("REGISTRY", r.URL)
	return nil
}

// TestScriptUsesRegistry: the scripts that name the registry fixture get
// it, and the others do not start it.
func TestScriptUsesRegistry(t *testing.T) {
	for text, want := range map[string]bool{
		"[!registry] skip 'no registry'\n":             true,
		"[registry] etdi check --registry $REGISTRY\n": true,
		"etdi check --registry ${REGISTRY} x\n":        true,
		"registry-start\n":                             true,
		"  ! registry-publish bad.json\n":              true,
		"etdi registry audit $REGISTRY_URL\n":          false,
		"# a comment on registry-publish\n":            false,
		"etdi check --registry-ns x\n":                 false,
		"pinenv\netdi check\n":                         false,
	} {
		if got := usesRegistry.MatchString(text); got != want {
			t.Errorf("%q: uses the registry %v, want %v", text, got, want)
		}
	}
}
