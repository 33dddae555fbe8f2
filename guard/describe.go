package guard

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/hostconfig"
	"github.com/etdi-dev/etdi/internal/identity"
	"github.com/etdi-dev/etdi/internal/redact"
)

// ServerSpec describes one server as etdi check, etdi run and a Go host
// reach it: the command that starts it or the URL it answers at, what it
// is configured with, the secrets and credentials of that configuration,
// and the name a server without a bundle is pinned under. [Describe]
// builds one from a command line or a URL, [DescribeEntry] from a host
// configuration entry; [ServerSpec.Server] turns it into what [Fetch],
// [StartServer] and [ResolveOrigin] take. [Options.Spec] holds it to the
// check (moving_target).
type ServerSpec struct {
	// Label names the server in output, its secrets masked: the command
	// line (redact.Args), the URL (redact.URL), or the entry's name, host
	// and file.
	Label string
	// Name is what a server without a bundle is pinned under
	// (unsigned:<Name>): given, or the entry's name, or derived from what
	// the command runs or the URL's host and path (internal/identity),
	// never from a secret; "" when nothing could be derived.
	Name string
	// Command is the command line that starts the server (nil for a URL,
	// or for an entry etdi does not start).
	Command []string
	// Env is the environment the command is configured with, before
	// Server removes what the server is not given.
	Env []string
	// SecretEnv names the variables etdi read a secret from; KeepEnv
	// those the configuration sets for the server on purpose, or the
	// person passes on (Server, ServerEnv).
	SecretEnv, KeepEnv []string
	// Dir is the directory the command starts in ("" the current one).
	Dir string
	// URL and Header reach a Streamable HTTP server.
	URL    string
	Header http.Header
	// Bundle is the out-of-band bundle an entry's etdi run names,
	// resolved against Dir when relative.
	Bundle string
	// Secrets are the values of the configuration that are never shown:
	// env and header values, URL user information and query values,
	// NAME=VALUE arguments, and credentials (docs/storage.md#pin-database).
	Secrets redact.Set
	// Credentials are those of the secrets that are credentials: a
	// definition that shows one is not checked (Options.Credentials).
	Credentials []Credential
	// Problems keep the server from being checked as configured (an
	// entry's), secrets masked.
	Problems []string
	// Findings are those about the configuration entry itself
	// (docs/hosts.md#wrapping-host-configurations): a program that imitates etdi's gate, a gate that judges by
	// other files than the user's.
	Findings []finding.Finding
	// Entry is the host configuration entry described, as its host reads
	// it (docs/hosts.md#host-configuration-files); nil for a command line or a URL.
	Entry *hostconfig.Entry
	// Launch is the launch digest of an entry of a project-scoped file
	// ("" for an entry etdi does not start).
	Launch string
}

// Describe describes a server given on a command line: started as
// command, or reached at url with header (exactly one of them). name,
// when given, is what it is pinned under without a bundle; otherwise the
// name is derived from what the command runs or from the URL, never from
// a secret. environ is the environment a command is started with.
//
// A gate passes its own environment on to the server it starts, so with
// inherit the credentials of environ ([InheritedCredentials]) are the
// server's too, and every credential is a secret.
func Describe(command []string, url string, header http.Header, name string, environ []string, inherit bool) *ServerSpec {
	s := &ServerSpec{Name: name}
	if url != "" {
		s.Label, s.URL, s.Header = redact.URL(url), url, header
		s.Secrets.AddURL(url)
		for _, vs := range header {
			s.Secrets.Add(vs...)
		}
		s.Credentials = URLCredentials(url, header)
	} else {
		s.Label, s.Command, s.Env = strings.Join(redact.Args(command), " "), command, environ
		s.Secrets.AddArgs(command)
		s.Credentials = CommandCredentials(command)
	}
	if inherit {
		s.Credentials = append(s.Credentials, InheritedCredentials(environ)...)
		for _, c := range s.Credentials {
			s.Secrets.Add(c.Value)
		}
	}
	if s.Name == "" {
		if url == "" {
			s.Name = identity.CommandFor(command, "", &s.Secrets)
		} else if s.Name = identity.URL(url); s.Secrets.Holds(s.Name) {
			s.Name = ""
		}
	}
	return s
}

// DescribeEntry describes the server of a host configuration entry as its
// host starts or reaches it: the program the host finds (never one on
// etdi's own PATH), its arguments, environment and working directory, or
// its URL and headers. An entry that is ambiguous for its host, or whose
// program etdi does not start, has neither command nor URL. lookup reads
// etdi's own environment, environ is the environment the command starts
// from: a variable the entry sets to etdi's own value is not kept for the
// server (it would pass on what etdi read).
func DescribeEntry(en *hostconfig.Entry, lookup func(string) (string, bool), environ []string) *ServerSpec {
	label := fmt.Sprintf("%s (%s, %s)", en.Name, en.Host, en.File)
	if en.Host == "" { // a file of no known host
		label = fmt.Sprintf("%s (%s)", en.Name, en.File)
	}
	s := &ServerSpec{Label: label, Name: en.Name, URL: en.URL, Dir: en.Cwd, Bundle: en.Bundle, Launch: en.Launch, Entry: en}
	if en.Dir != "" {
		s.Dir = en.Dir // where the host starts it
	}
	if s.Bundle != "" && !filepath.IsAbs(s.Bundle) && s.Dir != "" {
		s.Bundle = filepath.Join(s.Dir, s.Bundle)
	}
	en.AddSecrets(&s.Secrets)
	s.Credentials = EntryCredentials(en)
	if en.Command != "" && en.Program != "" && en.Ambiguous == "" && !en.NotStarted() {
		// The program the host starts, found as the host finds it, never
		// on etdi's own PATH.
		s.Command = append([]string{en.Program}, en.Args...)
		s.Env = environ
		for _, k := range en.EnvKeys {
			s.Env = append(s.Env, k+"="+en.Env[k])
			// Set to etdi's own value (an expansion of it), a variable is
			// not set for the server on purpose: it would pass on what
			// etdi read (ServerEnv removes it then).
			if own, ok := lookup(k); !ok || own != en.Env[k] {
				s.KeepEnv = append(s.KeepEnv, k)
			}
		}
	}
	if en.Ambiguous != "" || en.NotStarted() {
		s.URL, s.Launch = "", ""
	}
	if len(en.Headers) > 0 {
		s.Header = http.Header{}
		for k, v := range en.Headers {
			s.Header.Set(k, v)
		}
	}
	for _, p := range en.Problems {
		s.Problems = append(s.Problems, s.Secrets.String(p))
	}
	s.Findings = EntryFindings(en, &s.Secrets)
	return s
}

// EntryCredentials are the credentials of a host configuration entry:
// env values of variables named like a credential (API_KEY, GITHUB_TOKEN,
// ...) or looking like one, and the credentials of its headers, URL and
// arguments.
func EntryCredentials(en *hostconfig.Entry) []Credential {
	cs := EnvCredentials(en.Env)
	h := http.Header{}
	for k, v := range en.Headers {
		h.Set(k, v)
	}
	cs = append(cs, URLCredentials(en.URL, h)...)
	return append(cs, CommandCredentials(en.Args)...)
}

// EntryFindings are the findings about how an entry runs its server: a
// program that imitates etdi's gate (fake_wrapper), and a gate that
// judges by another trust policy, pin store or lockfile than the user's
// (gate_override). Entry text is masked with secrets.
func EntryFindings(en *hostconfig.Entry, secrets *redact.Set) []finding.Finding {
	var out []finding.Finding
	if en.Imitation != "" {
		out = append(out, finding.Finding{Kind: finding.FakeWrapper, Severity: finding.Error, Server: en.Name,
			Message: secrets.String("the entry imitates etdi's gate: " + en.Imitation + "; its whole command is checked as the server. Remove the entry, or if the program is an etdi of yours, check with --etdi PATH")})
	}
	for _, o := range en.GateOverrides {
		// The files are shown as named (the point of the finding); only
		// a URL's credentials are not.
		if strings.Contains(o.Entry, "://") {
			o.Entry = secrets.String(redact.URL(o.Entry))
		}
		fix := "; to use yours: etdi unwrap --config " + en.File + " --name " + en.Name + ", then etdi wrap again"
		if v, ok := strings.CutPrefix(o.Via, "env "); ok {
			fix = "; to use yours: remove " + v + " from the entry's env in " + en.File
		}
		out = append(out, finding.Finding{Kind: finding.GateOverride, Severity: finding.Error, Server: en.Name, Message: o.String() + fix})
	}
	return out
}

// Server is the server s describes as [Fetch], [StartServer] and
// [ResolveOrigin] take it: a command is started without every ETDI_*
// variable and those named in [ServerSpec.SecretEnv], but those in
// [ServerSpec.KeepEnv] ([ServerEnv]).
func (s *ServerSpec) Server() Launch {
	if len(s.Command) == 0 {
		return Launch{URL: s.URL, Header: s.Header}
	}
	return Launch{Command: s.Command, Env: ServerEnv(s.Env, s.SecretEnv, s.KeepEnv), SecretEnv: s.SecretEnv, KeepEnv: s.KeepEnv, Dir: s.Dir}
}

// MovingTarget is the moving_target warning about server (its pin
// identity) of a command that runs a package without a fixed version or
// an image by a moving tag ([MovingTarget]): what was checked need not be
// what runs next. nil for a URL or a fixed command.
func (s *ServerSpec) MovingTarget(server string) []finding.Finding {
	if s == nil || len(s.Command) == 0 {
		return nil
	}
	if moving, what := MovingTarget(s.Command); moving {
		return []finding.Finding{{Kind: finding.MovingTarget, Severity: finding.Warning, Server: server, Message: s.Secrets.String(what)}}
	}
	return nil
}

// HeaderError is a header given as text ("Name: value", or
// "Name=VARIABLE" for one read from the environment) that is not one.
// Its message never quotes the text, which may be all secret.
type HeaderError struct {
	// Index is the header's position among those given (0 the first),
	// Len the length of its text.
	Index, Len int
}

func (e *HeaderError) Error() string {
	return fmt.Sprintf("header #%d (%d bytes, not shown): want \"Name: value\"", e.Index+1, e.Len)
}

// ParseHeaders parses headers given as "Name: value", name and value
// trimmed of spaces.
func ParseHeaders(kvs []string) (http.Header, error) {
	h := http.Header{}
	for i, kv := range kvs {
		k, v, ok := strings.Cut(kv, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, &HeaderError{Index: i, Len: len(kv)}
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return h, nil
}

// HeaderEnvError is a header to read from the environment given as
// something other than Name=VARIABLE (Unset false; Arg is shown, as it
// names a variable, not a value), or naming a variable that is not set
// or empty (Unset).
type HeaderEnvError struct {
	Arg            string
	Name, Variable string
	Unset          bool
}

func (e *HeaderEnvError) Error() string {
	if e.Unset {
		return fmt.Sprintf("header %s: environment variable %s is not set", e.Name, e.Variable)
	}
	return fmt.Sprintf("header %q: want Name=VARIABLE", e.Arg)
}

// AddHeaderEnv adds to h the headers given as Name=VARIABLE, each with
// the value of its variable as lookup reads it; a variable that is not
// set, or empty, is an error rather than an empty credential.
func AddHeaderEnv(h http.Header, kvs []string, lookup func(string) (string, bool)) error {
	for _, kv := range kvs {
		k, variable, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" || variable == "" {
			return &HeaderEnvError{Arg: kv}
		}
		v, ok := lookup(variable)
		if !ok || v == "" {
			return &HeaderEnvError{Arg: kv, Name: k, Variable: variable, Unset: true}
		}
		h.Add(strings.TrimSpace(k), v)
	}
	return nil
}

// HeaderEnvVariables are the variables headers given as Name=VARIABLE
// read: a server etdi starts is not given them ([ServerSpec.SecretEnv]).
func HeaderEnvVariables(kvs []string) []string {
	var out []string
	for _, kv := range kvs {
		_, variable, _ := strings.Cut(kv, "=")
		out = append(out, variable)
	}
	return out
}
