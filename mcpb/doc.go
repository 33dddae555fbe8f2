// Package mcpb reads MCPB files (.mcpb, the zip archives desktop hosts
// install as extensions) as hostile input: [Open] and [Read] bound the
// archive (file size, entry count, uncompressed sizes and compression
// ratio), refuse entries that could escape the directory they are
// extracted into (absolute names, "..", symbolic links, names given
// twice), parse manifest.json strictly ([ParseManifest]), compute the
// file's SHA-256 and verify the signature block mcpb sign appends (a
// detached PKCS#7 signature over everything before it), reporting who
// signed ([Signer]).
//
// [File.Extract] unpacks the archive into a new private directory and
// [Manifest.Launch] builds the command line a desktop host starts the
// server with from the manifest's server.mcp_config. The package decides
// nothing about trust: a signature that verifies says only that the
// certificate's key signed the file (docs/registry.md#mcpb-files).
package mcpb
