package artifact_test

import (
	"fmt"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/artifact"
)

func ExampleMoving() {
	fmt.Println(artifact.Moving([]string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me"}))
	fmt.Println(artifact.Moving([]string{"uvx", "mcp-server-fetch==0.6.2"}))
	// Output:
	// true npx runs whatever version of @modelcontextprotocol/server-filesystem the registry calls latest; pin it: @modelcontextprotocol/server-filesystem@<version>
	// false
}

func ExampleMatch() {
	got := &artifact.Resolved{Artifact: etdi.Artifact{Type: etdi.ArtifactFile, Name: "weather-server",
		Digest: "sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"}}
	signed := []etdi.Artifact{{Type: etdi.ArtifactOCI, Name: "ghcr.io/acme/weather",
		Digest: "sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"}}
	fmt.Println(artifact.Match(got, signed))
	// Output:
	// file weather-server is not what the bundle names: the bundle names only oci artifacts; this launch runs a file
}
