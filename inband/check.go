package inband

import (
	"context"
	"fmt"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/release"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CheckServer lists server over an in-memory connection, as a client lists
// it (every tools/list page, each tool as the raw JSON the server sends),
// and compares its tools with the definitions of manifest, the JSON of an
// etdi manifest (SPEC.md §4). It returns nil when the server serves
// exactly those definitions, and otherwise an [*release.DriftError] that names
// every tool missing, extra, listed twice or served with another
// definition, with the fields that differ (docs/provider.md#a-server-against-its-manifest). Key order and
// whitespace never count, nor does the bundle [Attach] adds.
//
// It is meant for the server's own unit test: a tool whose definition
// changes in the code fails the test until the manifest (and the tool's
// version) says so, before a release is signed.
//
//	func TestServerMatchesManifest(t *testing.T) {
//		manifest, _ := os.ReadFile("weather.manifest.json")
//		if err := inband.CheckServer(context.Background(), newServer(), manifest); err != nil {
//			t.Fatal(err)
//		}
//	}
func CheckServer(ctx context.Context, server *mcp.Server, manifest []byte) error {
	m, err := etdi.ParseManifest(manifest)
	if err != nil {
		return fmt.Errorf("inband: manifest: %w", err)
	}
	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverEnd, nil)
	if err != nil {
		return fmt.Errorf("inband: connecting the server: %w", err)
	}
	defer ss.Close()
	conn, err := clientEnd.Connect(ctx)
	if err != nil {
		return fmt.Errorf("inband: connecting to the server: %w", err)
	}
	defer conn.Close()
	l, err := mcpclient.ListSession(ctx, mcpclient.SDKSession(conn), mcpclient.Options{})
	if err != nil {
		return fmt.Errorf("inband: listing the server: %w", err)
	}
	return release.CheckServed(m, l.Tools)
}
