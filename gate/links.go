package gate

import (
	"bytes"
	"sync"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/mcpclient"
)

// maxLinks bounds the resource URIs one session remembers from the
// results of tool calls; beyond it, new ones are not remembered (and
// counted). Each is at most etdi.MaxURILen bytes.
const maxLinks = 10_000

// links are the resources tools returned in this session (docs/gate.md#runtime-gate):
// the URI of each resource_link and embedded resource of a tools/call
// result the gate relayed, with the tool that returned it and its digest
// then. The host may read them while that tool stays approved as it was.
type links struct {
	mu      sync.Mutex
	by      map[string]returnedLink
	dropped int
}

type returnedLink struct{ tool, digest string }

// returnedBy says which tool returned uri in this session, and its digest
// when it did.
func (g *Gate) returnedBy(uri string) (tool, digest string, ok bool) {
	g.links.mu.Lock()
	defer g.links.mu.Unlock()
	l, ok := g.links.by[uri]
	return l.tool, l.digest, ok
}

// rememberLinks remembers the resources a result of tool (of that digest)
// names, before the result reaches the host: a resource_link's uri, an
// embedded resource's resource.uri, each read strictly (an element with a
// member twice, or under another case, names nothing: the host might read
// another URI than etdi), in normal form (uriNotNormal).
func (g *Gate) rememberLinks(tool, digest string, result []byte) {
	if !bytes.Contains(result, []byte("resource")) && !bytes.Contains(result, []byte(`\u`)) {
		return // no link, however spelled: not worth parsing
	}
	p, err := strictObject(result, "result", "content")
	if err != nil || p["content"] == nil {
		return
	}
	var uris []string
	mcpclient.MapElements(result, "content", func(_ int, elem []byte) []byte {
		c, err := strictObject(elem, "content", "type", "uri", "resource")
		if err != nil {
			return nil
		}
		typ, _, err := strictString(c["type"], "type")
		if err != nil {
			return nil
		}
		raw := c["uri"]
		switch typ {
		case "resource_link":
		case "resource":
			r, err := strictObject(c["resource"], "resource", "uri")
			if err != nil {
				return nil
			}
			raw = r["uri"]
		default:
			return nil
		}
		// A URI longer than a listing may hold is not remembered: the
		// bound on what the gate keeps is maxLinks of those.
		if uri, ok, err := strictString(raw, "uri"); err == nil && ok && uri != "" && len(uri) <= etdi.MaxURILen && uriNotNormal(uri) == "" {
			uris = append(uris, uri)
		}
		return nil
	})
	if len(uris) == 0 {
		return
	}
	g.links.mu.Lock()
	defer g.links.mu.Unlock()
	if g.links.by == nil {
		g.links.by = map[string]returnedLink{}
	}
	dropped := 0
	for _, uri := range uris {
		if _, ok := g.links.by[uri]; !ok && len(g.links.by) >= maxLinks {
			dropped++
			continue
		}
		g.links.by[uri] = returnedLink{tool, digest}
	}
	if dropped > 0 {
		if g.links.dropped == 0 {
			g.logf("remembered %d resources tools returned in this session: the host cannot read those returned from now on", maxLinks)
		}
		g.links.dropped += dropped
	}
}
