// Package mirror serves a read-only MCP Registry that lists only the
// entries of another registry (the upstream) that etdi approves: hosts
// pointed at it see the servers an organisation signed off and nothing
// else.
//
// A [Handler] answers the registry API v0.1's three reading endpoints, as
// the official registry shapes them (ServerListResponse, ServerResponse,
// and its problem documents for errors):
//
//	GET /v0.1/servers                                   (cursor, limit, search, updated_since, version)
//	GET /v0.1/servers/{name}/versions                   (the name URL-escaped: io.github.acme%2Fweather)
//	GET /v0.1/servers/{name}/versions/{version}         ("latest": the upstream's latest version)
//
// Every entry it serves was decided by a [Judge] for that request: entries
// that are unsigned, fail verification, impersonate another name or are
// not approved (or no longer are: revoked in the team store) are left out
// of listings and answered 404 by the other two endpoints. Each entry
// served carries the verdict under its _meta, as [VerdictKey]. Nothing is
// cached between requests, so a revocation takes effect on the next
// request.
//
// Listings are paginated over the filtered result with cursors of the
// handler's own: opaque, authenticated with a key of the handler's (a
// cursor it did not issue is a 400, never a request upstream of the
// client's choosing) and bound to the listing's filters. Every other
// method and path is a 404 or a 405: nothing is published and no
// authentication endpoint is served. What the upstream sends is bounded
// by the [registry.Client] that reads it, and each request by
// [Handler.RequestTimeout] and [Handler.MaxUpstreamPages].
package mirror
