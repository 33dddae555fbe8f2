package etdi

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/strictjson"
)

// TestSpecExamples recomputes the values quoted in SPEC.md §17 from the
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

// TestSpecContents checks SPEC.md's contents line against its section
// headings: every section, in order, with its number and title.
func TestSpecContents(t *testing.T) {
	spec := string(mustRead(t, "SPEC.md"))
	_, line, ok := strings.Cut(spec, "\nContents: ")
	if !ok {
		t.Fatal("SPEC.md has no contents line")
	}
	line, _, _ = strings.Cut(line, "\n\n")
	var want []string
	for _, m := range regexp.MustCompile(`(?m)^## (\d+)\. (.+)$`).FindAllStringSubmatch(spec, -1) {
		want = append(want, "§"+m[1]+" "+m[2])
	}
	got := strings.Split(strings.Join(strings.Fields(line), " "), " · ")
	if !slices.Equal(got, want) {
		t.Errorf("SPEC.md's contents line\n  %q\ndiffers from its headings\n  %q", got, want)
	}
	for i, h := range want {
		if n := strconv.Itoa(i + 1); !strings.HasPrefix(h, "§"+n+" ") {
			t.Errorf("section %q is not numbered %s", h, n)
		}
	}
}

// TestSpecVectors checks the table of test vectors in SPEC.md §17.1
// against testdata/vectors: every case is listed, with the exit code and
// error findings its want.json expects, and no other.
func TestSpecVectors(t *testing.T) {
	_, table, ok := strings.Cut(string(mustRead(t, "SPEC.md")), "\n### 17.1 Test vectors\n")
	if !ok {
		t.Fatal("SPEC.md has no section 17.1 Test vectors")
	}
	rows := regexp.MustCompile("(?m)^\\| \\[`([a-z0-9_]+)`\\]\\(testdata/vectors/([a-z0-9_]+)/\\) \\| (\\d+) \\| (.*) \\|$").FindAllStringSubmatch(table, -1)
	listed := map[string][]string{}
	for _, r := range rows {
		if r[1] != r[2] {
			t.Errorf("SPEC.md §17.1 links %s to the directory of %s", r[1], r[2])
		}
		listed[r[1]] = r[3:]
	}
	dirs, err := os.ReadDir("testdata/vectors")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		var want struct {
			ExitCode int      `json:"exitCode"`
			Kinds    []string `json:"kinds"`
		}
		if err := json.Unmarshal(mustRead(t, "testdata/vectors/"+d.Name()+"/want.json"), &want); err != nil {
			t.Fatal(err)
		}
		kinds := "—"
		if len(want.Kinds) > 0 {
			kinds = "`" + strings.Join(want.Kinds, "`, `") + "`"
		}
		row, ok := listed[d.Name()]
		delete(listed, d.Name())
		switch {
		case !ok:
			t.Errorf("SPEC.md §17.1 does not list the vector %s", d.Name())
		case row[0] != strconv.Itoa(want.ExitCode) || row[1] != kinds:
			t.Errorf("SPEC.md §17.1 lists %s as exit %s, %s; its want.json: exit %d, %s", d.Name(), row[0], row[1], want.ExitCode, kinds)
		}
	}
	for name := range listed {
		t.Errorf("SPEC.md §17.1 lists %s, which is not under testdata/vectors", name)
	}
}
