package mcpb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// Launch is the command line a desktop host starts an MCPB's server with.
type Launch struct {
	// Command is the program: a name the host looks up on its PATH (node,
	// python, uv), or an absolute path inside the extension's directory.
	Command string
	Args    []string
	// Env are the variables the manifest sets, added to the host's
	// environment.
	Env map[string]string
}

// ConfigError is returned by [Manifest.Launch] when user_config options
// the command line needs have no value.
type ConfigError struct {
	// Keys are the options, sorted.
	Keys []string
}

func (e *ConfigError) Error() string {
	return "user_config " + strings.Join(e.Keys, ", ") + " has no value (the host asks the user for it)"
}

// Platform is the name MCPB manifests give the running platform in
// platform_overrides (Node's process.platform: darwin, win32, linux).
func Platform() string {
	if runtime.GOOS == "windows" {
		return "win32"
	}
	return runtime.GOOS
}

// Launch builds the command line from the manifest's server.mcp_config as
// the desktop host does (mcpb's getMcpConfigForManifest): the running
// platform's override replaces command, args or env; ${__dirname} is dir
// (the extension's directory, absolute), ${HOME}, ${DESKTOP},
// ${DOCUMENTS} and ${DOWNLOADS} the user's directories, ${pathSeparator}
// and ${/} the path separator, ${user_config.X} the value given for X in
// userConfig, else the manifest's default (an argument that is exactly
// ${user_config.X} of a list default becomes one argument per element).
// Each string is substituted once, left to right: a substituted value is
// not read again. A ${user_config.X} with no value, or a required option
// with none, is an error naming X (the host would not start the server,
// or would start it with the placeholder). A relative command holding a
// slash is a file of the extension. A command that resolves outside dir
// while naming ${__dirname} is refused.
func (m *Manifest) Launch(dir string, userConfig map[string]string) (*Launch, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("mcpb: Launch: directory %q is not absolute", dir)
	}
	c := m.Server.MCPConfig
	l := &Launch{Command: c.Command, Args: c.Args, Env: c.Env}
	// command is the command as written, before substitution: the
	// platform's override when it has one.
	command := c.Command
	if o, ok := c.PlatformOverrides[Platform()]; ok {
		if o.Command != "" {
			l.Command, command = o.Command, o.Command
		}
		if o.HasArgs && len(o.Args) > 0 {
			l.Args = o.Args
		}
		if o.HasEnv && len(o.Env) > 0 {
			l.Env = o.Env
		}
	}
	var missing []string
	for key, opt := range m.UserConfig {
		if _, given := userConfig[key]; opt.Required && !given && (!opt.HasDefault || len(opt.Default) == 0 || opt.Default[0] == "") {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, &ConfigError{Keys: missing}
	}
	vars := map[string][]string{
		"__dirname":     {dir},
		"pathSeparator": {string(filepath.Separator)},
		"/":             {string(filepath.Separator)},
	}
	if home, err := os.UserHomeDir(); err == nil {
		vars["HOME"] = []string{home}
		vars["DESKTOP"] = []string{filepath.Join(home, "Desktop")}
		vars["DOCUMENTS"] = []string{filepath.Join(home, "Documents")}
		vars["DOWNLOADS"] = []string{filepath.Join(home, "Downloads")}
	}
	for key, opt := range m.UserConfig {
		if opt.HasDefault {
			vars["user_config."+key] = opt.Default
		}
	}
	for key, v := range userConfig {
		vars["user_config."+key] = []string{v}
	}
	var err error
	if l.Command, err = substitute(l.Command, vars); err != nil {
		return nil, err
	}
	args := make([]string, 0, len(l.Args))
	for _, a := range l.Args {
		if strings.HasPrefix(a, "${user_config.") && strings.HasSuffix(a, "}") && strings.Count(a, "${") == 1 {
			name := a[2 : len(a)-1]
			v, ok := vars[name]
			if !ok {
				return nil, &ConfigError{Keys: []string{strings.TrimPrefix(name, "user_config.")}}
			}
			args = append(args, v...)
			continue
		}
		s, err := substitute(a, vars)
		if err != nil {
			return nil, err
		}
		args = append(args, s)
	}
	l.Args = args
	env := make(map[string]string, len(l.Env))
	for k, v := range l.Env {
		if env[k], err = substitute(v, vars); err != nil {
			return nil, err
		}
	}
	l.Env = env
	if l.Command == "" {
		return nil, fmt.Errorf("MCPB %s: the command is empty", m.Name)
	}
	if !filepath.IsAbs(l.Command) && strings.ContainsAny(l.Command, `/\`) {
		l.Command = filepath.Join(dir, filepath.FromSlash(l.Command))
		if !inside(dir, l.Command) {
			return nil, fmt.Errorf("MCPB %s: command %q leaves the extension's directory", m.Name, command)
		}
	}
	if strings.Contains(command, "${__dirname}") && !inside(dir, l.Command) {
		return nil, fmt.Errorf("MCPB %s: command %q leaves the extension's directory", m.Name, command)
	}
	return l, nil
}

// inside reports whether p is dir or lies under it, lexically.
func inside(dir, p string) bool {
	rel, err := filepath.Rel(dir, filepath.Clean(p))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// substitute replaces each ${name} of s that vars holds, once, left to
// right. A ${user_config.X} vars does not hold is an error; other unknown
// variables stay as written, as the host leaves them.
func substitute(s string, vars map[string][]string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		name := s[i+2 : i+j]
		b.WriteString(s[:i])
		v, ok := vars[name]
		switch {
		case ok && len(v) == 1:
			b.WriteString(v[0])
		case ok:
			return "", fmt.Errorf("%s is a list and cannot be part of %q", name, s)
		case strings.HasPrefix(name, "user_config."):
			return "", &ConfigError{Keys: []string{strings.TrimPrefix(name, "user_config.")}}
		default:
			b.WriteString(s[i : i+j+1])
		}
		s = s[i+j+1:]
	}
}

// Launch builds the server's command line for the file extracted into
// dir: see [Manifest.Launch].
func (f *File) Launch(dir string, userConfig map[string]string) (*Launch, error) {
	if f.Manifest == nil {
		return nil, errors.New("mcpb: Launch of a File without a manifest")
	}
	return f.Manifest.Launch(dir, userConfig)
}
