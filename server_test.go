package etdi

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

const boundServer = `"server": {"name": "weather", "version": "1.0.0",
    "endpoints": ["https://mcp.acme.example/weather", "http://127.0.0.1:8080/mcp"],
    "artifacts": [
      {"type": "npm", "name": "@acme/weather", "version": "1.2.0", "digest": "sha512-` + sha512B64 + `"},
      {"type": "file", "name": "weather", "digest": "sha256:` + hex64 + `"}]}`

const (
	sha512B64 = "z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="
	hex64     = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// A manifest's server may name its endpoints and artifacts; both reach the
// signed statement unchanged and parse back.
func TestServerBinding(t *testing.T) {
	data := strings.Replace(goodManifest, `"server": {"name": "weather", "version": "1.0.0"}`, boundServer, 1)
	m, err := ParseManifest([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Server.Endpoints) != 2 || len(m.Server.Artifacts) != 2 || m.Server.Artifacts[0].Version != "1.2.0" || m.Server.Artifacts[1].Version != "" {
		t.Fatalf("server %+v", m.Server)
	}
	st, err := NewStatement(m, time.Unix(1e9, 0), time.Unix(2e9, 0), 1)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseStatement(st.Payload())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(st.Payload()), `"artifacts":[{"digest":"sha512-`) {
		t.Fatalf("payload %s", st.Payload())
	}
	if len(back.Server.Endpoints) != 2 || back.Server.Endpoints[1] != "http://127.0.0.1:8080/mcp" || back.Server.Artifacts[0] != m.Server.Artifacts[0] || back.Server.Artifacts[1] != m.Server.Artifacts[1] {
		t.Fatalf("statement server %+v", back.Server)
	}
	// Without a binding the payload is what it always was.
	plain, _ := ParseManifest([]byte(goodManifest))
	st, _ = NewStatement(plain, time.Unix(1e9, 0), time.Unix(2e9, 0), 1)
	if strings.Contains(string(st.Payload()), "endpoints") || strings.Contains(string(st.Payload()), "artifacts") {
		t.Fatal("an unbound server writes binding members")
	}
}

func TestServerBindingErrors(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{`"https://mcp.acme.example/weather"`, `"http://mcp.acme.example/weather"`, "http is accepted only for a loopback host"},
		{`"https://mcp.acme.example/weather"`, `"ftp://mcp.acme.example/"`, "scheme"},
		{`"https://mcp.acme.example/weather"`, `"https://u:p@mcp.acme.example/"`, "user information"},
		{`"https://mcp.acme.example/weather"`, `"https://mcp.acme.example/w?k=1"`, "query or fragment"},
		{`"https://mcp.acme.example/weather"`, `"https://mcp.acme.example/a/../b"`, "dot segment"},
		{`"https://mcp.acme.example/weather"`, `"https:///x"`, "no host"},
		{`"https://mcp.acme.example/weather", "http://127.0.0.1:8080/mcp"`, ``, "1 to 64 endpoints"},
		{`"type": "npm"`, `"type": "deb"`, `artifact type "deb" is unknown`},
		{`"digest": "sha512-` + sha512B64 + `"`, `"digest": "sha256:` + hex64 + `"`, "is not an integrity string"},
		{`"digest": "sha512-` + sha512B64 + `"`, `"digest": "sha512-AAAA"`, "is not an integrity string"},
		{`"digest": "sha256:` + hex64 + `"`, `"digest": "` + hex64 + `"`, "is not sha256:<64 lowercase hex digits>"},
		{`"name": "weather", "digest"`, `"name": "", "digest"`, "no name"},
		{`"name": "weather", "digest"`, `"name": "w", "size": 1, "digest"`, `unknown field "size"`},
	} {
		data := strings.Replace(goodManifest, `"server": {"name": "weather", "version": "1.0.0"}`, boundServer, 1)
		if !strings.Contains(data, c.from) {
			t.Fatalf("%q not in the manifest", c.from)
		}
		_, err := ParseManifest([]byte(strings.Replace(data, c.from, c.to, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s → %s: %v, want %q", c.from, c.to, err, c.want)
		}
	}
}

// Covers: same scheme, host and port, and a path at or below the prefix
// on a segment boundary.
func TestServerCovers(t *testing.T) {
	s := Server{Endpoints: []string{"https://mcp.acme.example/weather", "http://127.0.0.1:8080/mcp/", "https://root.example"}}
	for _, c := range []struct {
		url  string
		want bool
	}{
		{"https://mcp.acme.example/weather", true},
		{"https://MCP.acme.example:443/weather/v2?session=1", true},
		{"https://mcp.acme.example/weather/", true},
		{"https://mcp.acme.example/weatherx", false},
		{"https://mcp.acme.example/other", false},
		{"https://mcp.acme.example/weather/../admin", false},
		{"https://mcp.acme.example/weather/%2e%2e/admin", false},
		{"https://mcp.acme.example/weather/..%2Fadmin/mcp", false},
		{"https://mcp.acme.example/weather/..%5cadmin", false},
		{"https://mcp.acme.example/weather/..;/admin", false},
		{"https://mcp.acme.example/weather//admin", false},
		{"http://mcp.acme.example/weather", false},
		{"https://mcp.acme.example:8443/weather", false},
		{"https://mcp.acme.example.evil.example/weather", false},
		{"https://evil.example/weather", false},
		{"https://user@mcp.acme.example/weather", false},
		{"http://127.0.0.1:8080/mcp", true},
		{"http://127.0.0.1:8081/mcp", false},
		{"http://localhost:8080/mcp", false},
		{"https://root.example/anything", true},
		{"https://root.example", true},
		{"::not a url", false},
	} {
		if got := s.Covers(c.url); got != c.want {
			t.Errorf("Covers(%q) = %v, want %v", c.url, got, c.want)
		}
	}
	if (&Server{}).Covers("https://mcp.acme.example/weather") {
		t.Error("a server without endpoints covers a URL")
	}
}

// FuzzServerCovers: any endpoint and URL; an endpoint that validates
// covers only URLs of its own host and port, and never one with a dot
// segment.
func FuzzServerCovers(f *testing.F) {
	f.Add("https://mcp.acme.example/weather", "https://mcp.acme.example/weather/v2?x=1")
	f.Add("http://127.0.0.1:8080/mcp/", "http://127.0.0.1:8080/mcp/../x")
	f.Add("https://a.example", "https://A.EXAMPLE:443")
	f.Fuzz(func(t *testing.T, endpoint, rawURL string) {
		s := Server{Endpoints: []string{endpoint}}
		covered := s.Covers(rawURL)
		if ValidateEndpoint(endpoint) != nil {
			if covered {
				t.Fatalf("an invalid endpoint %q covers %q", endpoint, rawURL)
			}
			return
		}
		if !covered {
			return
		}
		e, _ := url.Parse(endpoint)
		u, err := url.Parse(rawURL)
		if err != nil || !strings.EqualFold(e.Hostname(), u.Hostname()) || strings.Contains(u.EscapedPath(), "/../") || strings.HasSuffix(u.EscapedPath(), "/..") {
			t.Fatalf("%q covers %q", endpoint, rawURL)
		}
	})
}
