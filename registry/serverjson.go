package registry

import (
	"encoding/json"
	"fmt"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/strictjson"
)

// Limits on what a registry or a server.json may send.
const (
	// MaxServerJSONSize bounds one server.json document, in bytes.
	MaxServerJSONSize = 1 << 20
	// MaxPublisherMeta bounds the publisher-provided _meta object of a
	// server.json, in bytes of its compact JSON, as the registry does.
	MaxPublisherMeta = 4096
	// MaxPackages bounds a server.json's packages and, separately, its
	// remotes.
	MaxPackages = 64
)

// Registry types of a [Package], as server.json names them.
const (
	PackageNPM   = "npm"
	PackagePyPI  = "pypi"
	PackageOCI   = "oci"
	PackageNuGet = "nuget"
	PackageMCPB  = "mcpb"
)

// Transport types of a [Transport].
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// The member of a server.json's _meta that holds what the publisher adds,
// and etdi's member inside it.
const (
	PublisherProvidedKey = "io.modelcontextprotocol.registry/publisher-provided"
	OfficialKey          = "io.modelcontextprotocol.registry/official"
	EtdiKey              = "dev.etdi"
)

// ServerJSON is a server.json document (schema 2025-12-11, as the
// registry's API v0.1 serves it): a server's name in its namespace, its
// version, and how it is run (Packages) or reached (Remotes).
type ServerJSON struct {
	Schema      string      `json:"$schema,omitempty"`
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	Title       string      `json:"title,omitempty"`
	Version     string      `json:"version"`
	WebsiteURL  string      `json:"websiteUrl,omitempty"`
	Repository  *Repository `json:"repository,omitempty"`
	Packages    []Package   `json:"packages,omitempty"`
	Remotes     []Transport `json:"remotes,omitempty"`
	// Meta is the document's _meta: publisher-provided metadata.
	Meta map[string]json.RawMessage `json:"_meta,omitempty"`

	// Raw is the document as it was read: [SetEtdiMeta] rewrites it
	// keeping every member, the ones this type does not name included.
	Raw []byte `json:"-"`
}

// Repository is where a server's source lives.
type Repository struct {
	URL       string `json:"url,omitempty"`
	Source    string `json:"source,omitempty"`
	ID        string `json:"id,omitempty"`
	Subfolder string `json:"subfolder,omitempty"`
}

// Package is one way to run a server: a package of a registry (npm,
// PyPI, OCI, NuGet) or an MCPB file, with the runtime and arguments a
// host starts it with.
type Package struct {
	RegistryType    string `json:"registryType"`
	RegistryBaseURL string `json:"registryBaseUrl,omitempty"`
	// Identifier is the package name, the image reference, or for an
	// MCPB the file's URL.
	Identifier string `json:"identifier"`
	Version    string `json:"version,omitempty"`
	// FileSHA256 is the SHA-256 of the package file, 64 lowercase hex
	// digits: required for an MCPB.
	FileSHA256           string          `json:"fileSha256,omitempty"`
	RuntimeHint          string          `json:"runtimeHint,omitempty"`
	Transport            Transport       `json:"transport"`
	RuntimeArguments     []Argument      `json:"runtimeArguments,omitempty"`
	PackageArguments     []Argument      `json:"packageArguments,omitempty"`
	EnvironmentVariables []KeyValueInput `json:"environmentVariables,omitempty"`
}

// Transport is how a package speaks MCP (stdio, streamable-http, sse),
// or a remote: its URL and headers.
type Transport struct {
	Type      string           `json:"type"`
	URL       string           `json:"url,omitempty"`
	Headers   []KeyValueInput  `json:"headers,omitempty"`
	Variables map[string]Input `json:"variables,omitempty"`
}

// Input is a value a host fills in: given, defaulted or asked for.
type Input struct {
	Description string   `json:"description,omitempty"`
	IsRequired  bool     `json:"isRequired,omitempty"`
	Format      string   `json:"format,omitempty"`
	Value       string   `json:"value,omitempty"`
	IsSecret    bool     `json:"isSecret,omitempty"`
	Default     string   `json:"default,omitempty"`
	Placeholder string   `json:"placeholder,omitempty"`
	Choices     []string `json:"choices,omitempty"`
	// Variables fill {name} placeholders in Value.
	Variables map[string]Input `json:"variables,omitempty"`
}

// KeyValueInput is an environment variable or a header.
type KeyValueInput struct {
	Input
	Name string `json:"name"`
}

// Argument is a positional or named (--flag) argument.
type Argument struct {
	Input
	Type       string `json:"type"`
	Name       string `json:"name,omitempty"`
	ValueHint  string `json:"valueHint,omitempty"`
	IsRepeated bool   `json:"isRepeated,omitempty"`
}

// ParseServerJSON reads a server.json document: at most
// [MaxServerJSONSize] bytes, etdi's strict JSON profile (no duplicate
// names: two readers must not see two documents), a name of the registry's
// form, a version, at most [MaxPackages] packages and remotes. Members it
// does not know are kept in Raw, not refused: the format grows.
func ParseServerJSON(data []byte) (*ServerJSON, error) {
	if len(data) > MaxServerJSONSize {
		return nil, fmt.Errorf("server.json is larger than %d bytes", MaxServerJSONSize)
	}
	v, err := strictjson.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("server.json: %w", err)
	}
	if v.Kind != strictjson.Object {
		return nil, fmt.Errorf("server.json: want an object, not %s", v.Kind)
	}
	if err := checkMemberCase(v); err != nil {
		return nil, fmt.Errorf("server.json: %w", err)
	}
	var s ServerJSON
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("server.json: %w", err)
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("server.json: %w", err)
	}
	s.Raw = append([]byte(nil), data...)
	return &s, nil
}

func (s *ServerJSON) validate() error {
	if err := etdi.ValidateRegistryName(s.Name); err != nil {
		return fmt.Errorf("name: %w", err)
	}
	if s.Version == "" || len(s.Version) > 255 {
		return fmt.Errorf("version: want 1 to 255 bytes")
	}
	if len(s.Packages) > MaxPackages || len(s.Remotes) > MaxPackages {
		return fmt.Errorf("more than %d packages or remotes", MaxPackages)
	}
	for i, p := range s.Packages {
		if p.RegistryType == "" || p.Identifier == "" {
			return fmt.Errorf("packages[%d]: registryType and identifier are required", i)
		}
		if p.FileSHA256 != "" && !hex64(p.FileSHA256) {
			return fmt.Errorf("packages[%d].fileSha256: want 64 lowercase hex digits", i)
		}
	}
	for i, r := range s.Remotes {
		if r.URL == "" {
			return fmt.Errorf("remotes[%d].url is required", i)
		}
	}
	return nil
}

func hex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
