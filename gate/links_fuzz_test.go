package gate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
)

// FuzzRememberLinks feeds tool results a server chooses to the reading of
// the resources they name: it never panics, remembers only URIs in normal
// form that the result holds, each under the tool that returned it, and
// never more than maxLinks.
func FuzzRememberLinks(f *testing.F) {
	for _, seed := range []string{
		`{"content":[{"type":"resource_link","uri":"weather://station/7","name":"s"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///a/b.txt","text":"x"}}]}`,
		`{"content":[{"type":"resource_link","uri":"a://x","uri":"a://y"}]}`,
		`{"content":[{"type":"resource_link","uri":"a://x","URI":"a://y"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"a://b/../c"}}]}`,
		`{"content":[{"type":"resource_link","uri":"\u0061://x"}],"Content":[]}`,
		`{"content":{"type":"resource_link","uri":"a://x"}}`,
		`{"content":[1,"x",null,{"type":7,"uri":"a://x"},{"type":"resource","resource":"a://x"}]}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, result string) {
		if !json.Valid([]byte(result)) {
			return // a decoded message's result is valid JSON
		}
		g := &Gate{}
		g.rememberLinks("tool", "sha256:x", []byte(result))
		if len(g.links.by) > maxLinks {
			t.Fatalf("%d remembered", len(g.links.by))
		}
		for uri, l := range g.links.by {
			if why := uriNotNormal(uri); why != "" || uri == "" || len(uri) > etdi.MaxURILen {
				t.Fatalf("remembered %q: %s", uri, why)
			}
			if l.tool != "tool" || l.digest != "sha256:x" {
				t.Fatalf("remembered %q under %+v", uri, l)
			}
			b, _ := json.Marshal(uri)
			if !strings.Contains(result, uri) && !strings.Contains(result, strings.Trim(string(b), `"`)) && !strings.Contains(result, `\u`) {
				t.Fatalf("remembered %q, which %s does not hold", uri, result)
			}
		}
	})
}
