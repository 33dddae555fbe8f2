package mcpb

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/etdi-dev/etdi/strictjson"
)

// Directories a desktop host keeps its installed MCPB extensions in,
// under its own settings directory (Claude Desktop: Claude in
// ~/Library/Application Support on macOS, %APPDATA% on Windows): each
// extension's extracted files, and its settings (isEnabled, userConfig).
const (
	ExtensionsDir        = "Claude Extensions"
	ExtensionSettingsDir = "Claude Extensions Settings"
	// MaxExtensions bounds the extensions read.
	MaxExtensions = 1024
	maxSettings   = 1 << 20
)

// NotWrappedReason says why etdi wrap leaves installed extensions alone.
const NotWrappedReason = "the host starts an installed extension from its own record of the MCPB " +
	"(extensions-installations.json keeps the manifest and the file's hash, and an update replaces the directory), " +
	"so a rewritten launch is not one the host is established to keep; check the MCPB file with etdi check --mcpb FILE, " +
	"or add the server to the host's configuration file and wrap it there"

// Extension is an MCPB extension a desktop host installed.
type Extension struct {
	// ID is the directory's name, the host's id for the extension.
	ID string
	// Dir is the extension's directory: the MCPB's files, extracted.
	Dir string
	// Manifest is its manifest.json, nil when Err says why it could not
	// be read.
	Manifest *Manifest
	Err      error
	// Enabled is the settings file's isEnabled, nil when absent.
	Enabled *bool
}

// Installed lists the extensions installed under a host's settings
// directory hostDir (the directory of claude_desktop_config.json), by
// ID; none when it has no extensions directory. Each manifest.json is read
// as [ParseManifest] reads it, a regular file (not a link) of at most
// [MaxManifestSize] bytes. Nothing is written.
func Installed(hostDir string) ([]Extension, error) {
	root := filepath.Join(hostDir, ExtensionsDir)
	f, err := os.Open(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(MaxExtensions + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(ents) > MaxExtensions {
		return nil, fmt.Errorf("%s: more than %d extensions", root, MaxExtensions)
	}
	var out []Extension
	for _, de := range ents {
		if !de.IsDir() {
			continue
		}
		x := Extension{ID: de.Name(), Dir: filepath.Join(root, de.Name())}
		data, err := readRegular(filepath.Join(x.Dir, "manifest.json"), MaxManifestSize)
		if err == nil {
			x.Manifest, err = ParseManifest(data)
		}
		x.Err = err
		if b, err := readRegular(filepath.Join(hostDir, ExtensionSettingsDir, de.Name()+".json"), maxSettings); err == nil {
			if v, err := strictjson.Parse(b); err == nil {
				if e := v.Get("isEnabled"); e != nil && e.Kind == strictjson.Bool {
					on := e.Bool
					x.Enabled = &on
				}
			}
		}
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// readRegular reads a regular file (not a link) of at most limit bytes.
func readRegular(path string, limit int64) ([]byte, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return b, err
}
