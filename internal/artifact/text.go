package artifact

// String names the artifact for messages: "npm @acme/weather@1.2.0
// (sha512-…)", the digest cut to 24 characters.
func (a Artifact) String() string {
	s := a.Type + " " + a.Name
	if a.Version != "" {
		s += "@" + a.Version
	}
	d := a.Digest
	if len(d) > 24 {
		d = d[:24] + "…"
	}
	return s + " (" + d + ")"
}
