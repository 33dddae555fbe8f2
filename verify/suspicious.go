package verify

// SuspiciousText: a definition's text hides characters (controls, bidi,
// zero-width, tags, variation selectors) or addresses the model with
// instruction-like content: tags such as <IMPORTANT>, "ignore previous
// instructions", "do not tell the user", sensitive paths, or the names of
// tools approved on other servers (warning, docs/output.md#escaping-untrusted-text). The finding
// carries the JSON Pointer and the matched text.
const SuspiciousText Kind = "suspicious_text"
