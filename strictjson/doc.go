// Package strictjson is etdi's JSON profile (SPEC.md §2): a parser that
// refuses what other parsers would read differently, and the RFC 8785
// canonical form that definition digests are computed over.
//
// [Parse] accepts RFC 8259 JSON restricted to I-JSON (RFC 7493): valid
// UTF-8, no duplicate member names, no lone surrogate escapes, finite
// numbers of magnitude at most 2^53-1, nesting at most [MaxDepth] and at
// most [MaxNodes] values. Nothing is normalized silently: input outside the
// profile is a [SyntaxError]. [ParseStream] hands the elements of chosen
// arrays to a function one by one, so a large list never exists as one
// tree. [AppendCanonical] and [Canonicalize] write the canonical form;
// [Field] reads typed members strictly and names the path in every error.
//
// The package does no I/O.
package strictjson
