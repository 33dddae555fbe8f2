// Package registry reads MCP Registry documents and answers: server.json
// (a server's name in a verified namespace, its packages and remotes,
// publisher-provided metadata) and the registry API's entries and pages
// (the v0.1 API: list, versions, one version).
//
// Everything a registry or a server.json holds is hostile input: documents
// are bounded in bytes ([MaxServerJSONSize], [MaxResponseSize]) and
// parsed under etdi's strict JSON profile before they are decoded, the
// client bounds every request in time, and the bundle a server.json names
// ([EtdiMeta]) is fetched only over https (or http to a loopback host) and
// refused unless its SHA-256 is the one named.
//
// A provider records where its signed bundle is published in server.json
// with [SetEtdiMeta]; a client reads it with [ServerJSON.EtdiMeta], fetches
// it with [FetchBundle] and checks with [Binding] that the bundle was made
// for this entry's packages, remotes and name.
package registry
