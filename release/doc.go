// Package release compares what a provider is about to publish with what
// clients already pinned or what a server actually serves.
//
// [Compare] is the release guard of etdi sign --previous (docs/provider.md#a-release-against-the-previous-one):
// it compares the statement of a release with the previous release's, as
// a client that pinned the previous one would see it, and refuses a rug
// pull, a downgrade, an unmeant removal or a sequence that does not
// increase; [RequiredBump] says which semantic version bump a change calls
// for (docs/provider.md#the-bump-a-change-calls-for). [CompareServed] and [CheckServed] compare a manifest with
// the tools a server lists (docs/provider.md#a-server-against-its-manifest).
//
// The package does no I/O.
package release
