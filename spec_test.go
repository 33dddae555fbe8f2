package etdi

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/strictjson"
)

// TestSpecExamples recomputes the values quoted in SPEC.md §13 from the
// files under testdata, so the specification cannot drift from them.
func TestSpecExamples(t *testing.T) {
	spec, err := os.ReadFile("SPEC.md")
	if err != nil {
		t.Fatal(err)
	}
	mustContain := func(what, s string) {
		t.Helper()
		if !bytes.Contains(spec, []byte(s)) {
			t.Errorf("SPEC.md does not contain the %s %q", what, s)
		}
	}
	dir := "testdata/vectors/valid_ed25519/"
	tl, err := ParseList(mustRead(t, dir+"tools.json"), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, lt := range tl.Tools {
		mustContain("digest of "+lt.Name, lt.Digest.String()+"  "+lt.Name)
	}
	forecast := tl.Tools[1]
	mustContain("canonical definition", string(forecast.Canonical))
	mustContain("sha256sum output", forecast.Digest.Hex())

	b, err := ParseBundle(mustRead(t, dir+"bundle.etdi.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := b.Envelope.Payload
	mustContain("payload length", "("+strconv.Itoa(len(p))+" bytes)")
	mustContain("payload start", string(p[:bytes.Index(p, []byte(`"tools":[`))+len(`"tools":[`)]))
	mustContain("payload subjects", string(p[bytes.Index(p, []byte(`"subject":`)):]))

	rug, err := ParseList(mustRead(t, "testdata/vectors/rugpull_description_changed/tools.json"), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustContain("rug pull live digest", "live   "+rug.Tools[0].Digest.String())

	mustContain("PAE example", string(PAE(PayloadType, []byte("{}"))))
	for _, s := range []string{PayloadType, StatementType, PredicateType, BundleMediaType, MetaPrefix} {
		mustContain("constant", s)
	}
	if !strings.Contains(string(spec), "9007199254740991") || strictjson.MaxSafeInteger != 9007199254740991 {
		t.Error("number limit differs")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
