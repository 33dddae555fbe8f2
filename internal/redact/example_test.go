package redact_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/etdi-dev/etdi/internal/redact"
)

func Example() {
	argv := []string{"docker", "run", "-i", "--rm", "-e", "API_TOKEN=tok-123456", "mcp/fetch"}
	var s redact.Set
	s.AddArgs(argv)
	s.AddURL("https://me:pw-98765@mcp.example.com/mcp?key=k-55555")
	fmt.Println(strings.Join(redact.Args(argv), " "))
	fmt.Println(redact.URL("https://me:pw-98765@mcp.example.com/mcp?key=k-55555"))
	fmt.Println(s.Error(errors.New("server stderr: bad token tok-123456 for key k-55555")))
	// Output:
	// docker run -i --rm -e API_TOKEN=[redacted] mcp/fetch
	// https://mcp.example.com/mcp?key=[redacted]
	// server stderr: bad token [redacted] for key [redacted]
}
