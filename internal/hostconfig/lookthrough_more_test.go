package hostconfig

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// An entry whose etdi run arguments etdi cannot read (one etdi run
// accepts but etdi does not model, such as --audit-calls=1 or --listen)
// is not already wrapped: the arguments it cannot read may sit beside a
// trust policy of the repository's, which etdi then never compares.
func TestWrapUnreadableRunIsNotAlreadyWrapped(t *testing.T) {
	dir := repo(t)
	cfg := filepath.Join(dir, ".mcp.json")
	for _, args := range []string{
		`"run", "--trust", "trust.json", "--audit-calls=1", "--", "node"`,
		`"run", "--listen", "127.0.0.1:0", "--trust", "trust.json", "--", "node"`,
		`"run", "--etcd-snapshots", "snaps", "--", "node"`,
	} {
		data := entryJSON(testEtdi, args, "")
		e := loadOne(t, cfg, data, Options{Gate: testGate(), Cwd: dir})
		if len(e.Problems) == 0 {
			t.Fatalf("%s: no problem: %+v", args, e)
		}
		res, err := Wrap(cfg, []byte(data), WrapOptions{Host: ClaudeCode, Etdi: testEtdi, Gate: Gate{Trust: "/u/trust.json"}, Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Outcomes) != 1 || res.Outcomes[0].Status != StatusRefused || !strings.Contains(res.Outcomes[0].Reason, "not one etdi understands") {
			t.Fatalf("%s: outcomes %+v", args, res.Outcomes)
		}
		if !bytes.Equal(res.Data, []byte(data)) {
			t.Fatalf("changed:\n%s", res.Data)
		}
	}
}
