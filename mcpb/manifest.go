package mcpb

import (
	"errors"
	"fmt"
	"sort"

	"github.com/etdi-dev/etdi/strictjson"
)

// MaxManifestSize bounds manifest.json, in bytes.
const MaxManifestSize = 1 << 20

// Bounds of what a manifest declares.
const (
	maxTools      = 4096
	maxArgs       = 1024
	maxEnv        = 1024
	maxUserConfig = 256
	maxStringLen  = 64 << 10
)

// Server types a manifest may name (MANIFEST.md, server.type).
const (
	TypeNode   = "node"
	TypePython = "python"
	TypeBinary = "binary"
	TypeUV     = "uv"
)

// Manifest is an MCPB file's manifest.json, the members etdi reads. Members
// it does not read are tolerated, as later manifest versions add them.
type Manifest struct {
	// ManifestVersion is manifest_version (or the older dxt_version).
	ManifestVersion string
	Name            string
	DisplayName     string
	Version         string
	Description     string
	Server          Server
	// Tools are the tools the manifest declares.
	Tools []Tool
	// ToolsGenerated says the server generates further tools at run time.
	ToolsGenerated bool
	// UserConfig are the options the host asks the user for, by key.
	UserConfig map[string]UserConfigOption
}

// Server is the manifest's server member: how the host starts it.
type Server struct {
	Type       string
	EntryPoint string
	MCPConfig  MCPConfig
}

// MCPConfig is the command line a host builds the server's launch from,
// before variable substitution.
type MCPConfig struct {
	Command string
	Args    []string
	// HasArgs and HasEnv say whether args and env were given, as a
	// platform override replaces only the members it gives.
	HasArgs bool
	Env     map[string]string
	HasEnv  bool
	// PlatformOverrides replace command, args or env on one platform
	// (darwin, win32, linux).
	PlatformOverrides map[string]MCPConfig
}

// Tool is a tool the manifest declares.
type Tool struct {
	Name string
	// Description is the declared description; HasDescription says
	// whether the manifest gives one.
	Description    string
	HasDescription bool
}

// UserConfigOption is one option of user_config.
type UserConfigOption struct {
	Type      string
	Title     string
	Required  bool
	Sensitive bool
	// Default is the default value as the host substitutes it: a string,
	// "true"/"false", a number as JSON writes it, or several strings
	// (Multiple) for a list. HasDefault says whether there is one.
	Default    []string
	HasDefault bool
	Multiple   bool
}

// supportedVersions are the manifest versions etdi reads.
var supportedVersions = map[string]bool{"0.1": true, "0.2": true, "0.3": true, "0.4": true}

// ParseManifest reads a manifest.json strictly: valid UTF-8, no duplicate
// member names, at most [MaxManifestSize] bytes, every member etdi reads
// of the type MANIFEST.md gives it. Unknown members are tolerated.
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > MaxManifestSize {
		return nil, fmt.Errorf("manifest.json: larger than %d bytes", MaxManifestSize)
	}
	v, err := strictjson.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	root, err := strictjson.Root(v).Object()
	if err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	var m Manifest
	mv, err := optStr(root.Field("manifest_version"))
	if err != nil {
		return nil, err
	}
	dv, err := optStr(root.Field("dxt_version"))
	if err != nil {
		return nil, err
	}
	switch {
	case mv == "" && dv == "":
		return nil, errors.New("manifest.json: no manifest_version")
	case mv != "" && dv != "" && mv != dv:
		return nil, fmt.Errorf("manifest.json: manifest_version %q and dxt_version %q differ", mv, dv)
	case mv == "":
		mv = dv
	}
	if !supportedVersions[mv] {
		return nil, fmt.Errorf("manifest.json: manifest_version %q is not one etdi reads (0.1 to 0.4)", mv)
	}
	m.ManifestVersion = mv
	if m.Name, err = str(root.Field("name")); err != nil {
		return nil, err
	}
	if m.Name == "" {
		return nil, errors.New("manifest.json: name is empty")
	}
	if m.Version, err = str(root.Field("version")); err != nil {
		return nil, err
	}
	if m.DisplayName, err = optStr(root.Field("display_name")); err != nil {
		return nil, err
	}
	if m.Description, err = optStr(root.Field("description")); err != nil {
		return nil, err
	}
	if m.Server, err = parseServer(root.Field("server")); err != nil {
		return nil, err
	}
	if m.Tools, err = parseTools(root.Field("tools")); err != nil {
		return nil, err
	}
	if f := root.Field("tools_generated"); f.V != nil {
		if err := f.Want(strictjson.Bool); err != nil {
			return nil, err
		}
		m.ToolsGenerated = f.V.Bool
	}
	if m.UserConfig, err = parseUserConfig(root.Field("user_config")); err != nil {
		return nil, err
	}
	return &m, nil
}

func str(f strictjson.Field) (string, error) {
	s, err := f.Str()
	if err == nil && len(s) > maxStringLen {
		return "", f.Errorf("longer than %d bytes", maxStringLen)
	}
	return s, err
}

func optStr(f strictjson.Field) (string, error) {
	if f.V == nil {
		return "", nil
	}
	return str(f)
}

func parseServer(f strictjson.Field) (Server, error) {
	var s Server
	o, err := f.Object()
	if err != nil {
		return s, err
	}
	if s.Type, err = str(o.Field("type")); err != nil {
		return s, err
	}
	switch s.Type {
	case TypeNode, TypePython, TypeBinary, TypeUV:
	default:
		return s, o.Field("type").Errorf("server type %q is not node, python, binary or uv", s.Type)
	}
	if s.EntryPoint, err = optStr(o.Field("entry_point")); err != nil {
		return s, err
	}
	mc := o.Field("mcp_config")
	if mc.V == nil {
		return s, mc.Errorf("missing: the host builds the server's command line from it")
	}
	if s.MCPConfig, err = parseMCPConfig(mc, true); err != nil {
		return s, err
	}
	return s, nil
}

func parseMCPConfig(f strictjson.Field, top bool) (MCPConfig, error) {
	var c MCPConfig
	o, err := f.Object()
	if err != nil {
		return c, err
	}
	if top {
		if c.Command, err = str(o.Field("command")); err != nil {
			return c, err
		}
		if c.Command == "" {
			return c, o.Field("command").Errorf("empty")
		}
	} else if c.Command, err = optStr(o.Field("command")); err != nil {
		return c, err
	}
	if a := o.Field("args"); a.V != nil {
		arr, err := a.Array()
		if err != nil {
			return c, err
		}
		if arr.Len() > maxArgs {
			return c, arr.Errorf("more than %d arguments", maxArgs)
		}
		c.HasArgs = true
		c.Args = make([]string, 0, arr.Len())
		for i := 0; i < arr.Len(); i++ {
			s, err := str(arr.Elem(i))
			if err != nil {
				return c, err
			}
			c.Args = append(c.Args, s)
		}
	}
	if e := o.Field("env"); e.V != nil {
		eo, err := e.Object()
		if err != nil {
			return c, err
		}
		if len(e.V.Members) > maxEnv {
			return c, e.Errorf("more than %d variables", maxEnv)
		}
		c.HasEnv = true
		c.Env = make(map[string]string, len(e.V.Members))
		for _, mem := range e.V.Members {
			s, err := str(eo.Field(mem.Name))
			if err != nil {
				return c, err
			}
			if mem.Name == "" || containsAny(mem.Name, "=\x00") {
				return c, e.Errorf("variable name %q is not one an environment can hold", mem.Name)
			}
			c.Env[mem.Name] = s
		}
	}
	if top {
		if p := o.Field("platform_overrides"); p.V != nil {
			po, err := p.Object()
			if err != nil {
				return c, err
			}
			c.PlatformOverrides = map[string]MCPConfig{}
			for _, mem := range p.V.Members {
				oc, err := parseMCPConfig(po.Field(mem.Name), false)
				if err != nil {
					return c, err
				}
				c.PlatformOverrides[mem.Name] = oc
			}
		}
	}
	return c, nil
}

func containsAny(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		for j := 0; j < len(chars); j++ {
			if s[i] == chars[j] {
				return true
			}
		}
	}
	return false
}

func parseTools(f strictjson.Field) ([]Tool, error) {
	if f.V == nil {
		return nil, nil
	}
	arr, err := f.Array()
	if err != nil {
		return nil, err
	}
	if arr.Len() > maxTools {
		return nil, arr.Errorf("more than %d tools", maxTools)
	}
	seen := map[string]bool{}
	out := make([]Tool, 0, arr.Len())
	for i := 0; i < arr.Len(); i++ {
		o, err := arr.Elem(i).Object()
		if err != nil {
			return nil, err
		}
		var t Tool
		if t.Name, err = str(o.Field("name")); err != nil {
			return nil, err
		}
		if seen[t.Name] {
			return nil, o.Field("name").Errorf("tool %q is declared twice", t.Name)
		}
		seen[t.Name] = true
		if d := o.Field("description"); d.V != nil {
			if t.Description, err = str(d); err != nil {
				return nil, err
			}
			t.HasDescription = true
		}
		out = append(out, t)
	}
	return out, nil
}

func parseUserConfig(f strictjson.Field) (map[string]UserConfigOption, error) {
	if f.V == nil {
		return nil, nil
	}
	o, err := f.Object()
	if err != nil {
		return nil, err
	}
	if len(f.V.Members) > maxUserConfig {
		return nil, f.Errorf("more than %d options", maxUserConfig)
	}
	out := make(map[string]UserConfigOption, len(f.V.Members))
	for _, mem := range f.V.Members {
		of, err := o.Field(mem.Name).Object()
		if err != nil {
			return nil, err
		}
		var u UserConfigOption
		if u.Type, err = optStr(of.Field("type")); err != nil {
			return nil, err
		}
		if u.Title, err = optStr(of.Field("title")); err != nil {
			return nil, err
		}
		for _, b := range []struct {
			name string
			dst  *bool
		}{{"required", &u.Required}, {"sensitive", &u.Sensitive}, {"multiple", &u.Multiple}} {
			bf := of.Field(b.name)
			if bf.V == nil {
				continue
			}
			if err := bf.Want(strictjson.Bool); err != nil {
				return nil, err
			}
			*b.dst = bf.V.Bool
		}
		if d := of.Field("default"); d.V != nil {
			vals, err := defaultValues(d)
			if err != nil {
				return nil, err
			}
			u.Default, u.HasDefault = vals, true
		}
		out[mem.Name] = u
	}
	return out, nil
}

// defaultValues turns a default into the strings a host substitutes, as
// mcpb's getMcpConfigForManifest does: a boolean as "true" or "false", a
// number as JavaScript's String writes it, a list element by element.
func defaultValues(f strictjson.Field) ([]string, error) {
	switch f.V.Kind {
	case strictjson.String:
		return []string{f.V.Str}, nil
	case strictjson.Bool:
		if f.V.Bool {
			return []string{"true"}, nil
		}
		return []string{"false"}, nil
	case strictjson.Number:
		b := strictjson.AppendCanonical(nil, f.V)
		return []string{string(b)}, nil
	case strictjson.Array:
		var out []string
		for _, e := range f.V.Elems {
			if e.Kind != strictjson.String {
				return nil, f.Errorf("a list default holds only strings")
			}
			out = append(out, e.Str)
		}
		return out, nil
	}
	return nil, f.Errorf("a default is a string, number, boolean or list of strings")
}

// ToolNames returns the declared tools' names, sorted.
func (m *Manifest) ToolNames() []string {
	out := make([]string, 0, len(m.Tools))
	for _, t := range m.Tools {
		out = append(out, t.Name)
	}
	sort.Strings(out)
	return out
}

// Tool returns the declared tool of that name, if any.
func (m *Manifest) Tool(name string) (Tool, bool) {
	for _, t := range m.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}
