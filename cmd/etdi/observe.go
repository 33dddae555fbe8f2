package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
	"github.com/spf13/pflag"
)

// serverFlags are the flags that say which server is checked and how:
// trust policy, bundle, saved tools/list, name of an unsigned server.
type serverFlags struct {
	policy, bundle, tools, name, at string
}

func (f *serverFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.policy, "trust", defaultPath("trust.json"), "trust policy file")
	fs.StringVar(&f.bundle, "bundle", "", "the provider's signed bundle (omit for a server without one)")
	fs.StringVar(&f.tools, "tools", "", "saved tools/list result of the server")
	fs.StringVar(&f.name, "name", "", "name of a server without a bundle (its identity in the pin database)")
	fs.StringVar(&f.at, "at", "", "verify the bundle as of this RFC 3339 time instead of now")
}

// pinFlags locate the pin database.
type pinFlags struct {
	path        string
	lockTimeout time.Duration
	by          string
}

func (f *pinFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.path, "pins", defaultPath("pins.db"), "pin database file")
	fs.DurationVar(&f.lockTimeout, "lock-timeout", pin.DefaultLockTimeout, "how long to wait for another etdi process holding the database")
}

func (f *pinFlags) registerBy(fs *pflag.FlagSet) {
	fs.StringVar(&f.by, "by", "", "who approves, recorded in the history (default: the current user)")
}

func (f *pinFlags) open(readOnly bool) (*pin.Store, error) {
	if readOnly {
		if _, err := os.Stat(f.path); errors.Is(err, os.ErrNotExist) {
			return nil, &hintError{fmt.Errorf("no pin database at %s", f.path), "approve a server first: etdi pin approve --pins " + f.path + " ..."}
		}
	}
	s, err := pin.Open(f.path, pin.Options{LockTimeout: f.lockTimeout, ReadOnly: readOnly})
	if errors.Is(err, pin.ErrLocked) {
		return nil, &hintError{err, "another etdi is using the database; retry, or raise --lock-timeout"}
	}
	return s, err
}

func (f *pinFlags) who() string {
	if f.by != "" {
		return f.by
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "unknown"
}

// observation is what a server offers, established from the flags.
type observation struct {
	obs *pin.Observation
	// result is the bundle verification (nil without a bundle).
	result *verify.Result
	// findings are those of verification and of the unsigned rule.
	findings []verify.Finding
	policy   *trust.Policy
}

// blocked reports whether verification failed so that the pins must not be
// compared (the tools are not established).
func (o *observation) blocked() bool { return o.obs == nil }

func (e *env) observe(f *serverFlags) (*observation, error) {
	now, err := parseTimeFlag("at", f.at)
	if err != nil {
		return nil, err
	}
	if f.bundle == "" && f.tools == "" {
		return nil, usagef("give --bundle, --tools, or both")
	}
	if f.bundle != "" && f.name != "" {
		return nil, usagef("--name is for servers without a bundle; a signed server is known by its provider and server name")
	}
	if f.bundle == "" && f.name == "" {
		return nil, usagef("a server without a bundle needs --name NAME to be pinned under")
	}
	p, err := loadPolicy(f.policy)
	if err != nil {
		return nil, err
	}
	var live *etdi.ToolsList
	if f.tools != "" {
		data, err := e.readInput(f.tools)
		if err != nil {
			return nil, err
		}
		if live, err = etdi.ParseToolsList(data); err != nil {
			return nil, fmt.Errorf("%s: %w", f.tools, err)
		}
	}
	o := &observation{policy: p}
	if f.bundle == "" {
		return o.unsigned(f.name, live, p.Unsigned)
	}
	data, err := e.readInput(f.bundle)
	if err != nil {
		return nil, err
	}
	r := verify.Verify(data, p, verify.Options{Now: now, Live: live})
	r.Source = f.bundle
	o.result = r
	o.findings = r.Findings
	if !r.Verified {
		return o, nil
	}
	st := r.Statement
	signer := pin.Signer{Kind: "key", ID: r.Signer.KeyID}
	obs := &pin.Observation{Server: pin.SignedServerKey(st.Provider.ID, st.Server.Name), Provider: st.Provider.ID,
		Name: st.Server.Name, Sequence: st.Sequence}
	if live == nil {
		for _, t := range st.Tools {
			obs.Tools = append(obs.Tools, pin.Observed{Name: t.Name, Version: t.Version, Digest: t.Digest,
				Canonical: t.Canonical, Permissions: t.Permissions, Signer: signer})
		}
	} else {
		for _, lt := range live.Tools {
			ob := pin.Observed{Name: lt.Name, Digest: lt.Digest, Canonical: lt.Canonical, Signer: pin.Unsigned}
			if t := st.Tool(lt.Name); t != nil {
				ob.Version, ob.Permissions, ob.Signer = t.Version, t.Permissions, signer
			}
			obs.Tools = append(obs.Tools, ob)
		}
	}
	o.obs = obs
	return o, nil
}

// unsigned builds the observation of a server without a bundle, applying
// the policy's unsigned rule.
func (o *observation) unsigned(name string, live *etdi.ToolsList, rule trust.UnsignedRule) (*observation, error) {
	if err := pin.ValidateUnsignedName(name); err != nil {
		return nil, &usageError{err}
	}
	server := pin.UnsignedServerKey(name)
	if rule == trust.Block {
		var names []string
		for _, t := range live.Tools {
			names = append(names, t.Name)
		}
		o.findings = append(o.findings, verify.Finding{Kind: verify.UnsignedTool, Severity: verify.Error, Server: server,
			Message: fmt.Sprintf("server %s has no bundle and the trust policy blocks unsigned tools (tools %s)", server, strings.Join(names, ", "))})
		return o, nil
	}
	obs := &pin.Observation{Server: server, Name: name}
	for _, lt := range live.Tools {
		obs.Tools = append(obs.Tools, pin.Observed{Name: lt.Name, Digest: lt.Digest, Canonical: lt.Canonical, Signer: pin.Unsigned})
		if rule == trust.Warn {
			o.findings = append(o.findings, verify.Finding{Kind: verify.UnsignedTool, Severity: verify.Warning, Server: server,
				Tool: lt.Name, Live: lt.Digest.String(), Message: fmt.Sprintf("tool %q of %s is not signed (policy: warn); pinned by digest", lt.Name, server)})
		}
	}
	o.obs = obs
	return o, nil
}

// auditKeyPaths returns the audit key and verifier key paths for a pin
// database: audit.key and audit.pub beside it, unless given.
func auditKeyPaths(pins, key string) (string, string) {
	if key == "" {
		key = filepath.Join(filepath.Dir(pins), "audit.key")
	}
	return key, strings.TrimSuffix(key, ".key") + ".pub"
}
