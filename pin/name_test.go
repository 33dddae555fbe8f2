package pin

import "testing"

// Derived names hold '/' (an npm scope, an image path, a URL path);
// references still split at the last '/'.
func TestUnsignedNameWithSlash(t *testing.T) {
	for _, n := range []string{"@modelcontextprotocol/server-everything", "ghcr.io/github/github-mcp-server", "127.0.0.1:3001/mcp", "weather"} {
		if err := ValidateUnsignedName(n); err != nil {
			t.Errorf("%q: %v", n, err)
		}
		server, tool, version, err := ParseRef(UnsignedServerKey(n) + "/get_weather@1.2.0")
		if err != nil || server != UnsignedServerKey(n) || tool != "get_weather" || version != "1.2.0" {
			t.Errorf("ParseRef: %q %q %q %v", server, tool, version, err)
		}
	}
	for _, n := range []string{"", "a\nb", "a\x7f", string(make([]byte, 129))} {
		if ValidateUnsignedName(n) == nil {
			t.Errorf("%q accepted", n)
		}
	}
}
