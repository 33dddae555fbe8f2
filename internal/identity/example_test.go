package identity_test

import (
	"fmt"

	"github.com/etdi-dev/etdi/internal/identity"
)

func Example() {
	fmt.Println(identity.Command([]string{"docker", "run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN=ghp_x", "ghcr.io/github/github-mcp-server:v1"}, ""))
	fmt.Println(identity.Command([]string{"npx", "-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/home/me"}, ""))
	fmt.Println(identity.URL("https://me:pw@mcp.example.com/v1/mcp?key=abc"))
	// Output:
	// ghcr.io/github/github-mcp-server
	// @modelcontextprotocol/server-filesystem
	// mcp.example.com/v1/mcp
}
