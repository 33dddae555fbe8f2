package pin

import (
	"fmt"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/suspect"
	"github.com/etdi-dev/etdi/verify"
	bolt "go.etcd.io/bbolt"
)

// suspiciousFindings returns a suspicious_text warning for each piece of
// text in t's definition that hides characters or addresses the model
// (SPEC.md §21). The names of tools approved on other servers count,
// except names this server offers itself.
func suspiciousFindings(tx *bolt.Tx, o *Observation, t *Observed) []verify.Finding {
	def, err := etdi.ParseJSON(t.Canonical)
	if err != nil {
		return nil
	}
	own := map[string]bool{}
	for _, ot := range o.Tools {
		own[ot.Name] = true
	}
	var others []string
	tx.Bucket(bNames).ForEach(func(k, _ []byte) error {
		name := string(k)
		if own[name] {
			return nil
		}
		for _, srv := range getStrings(tx.Bucket(bNames), name) {
			if srv != o.Server {
				others = append(others, name)
				break
			}
		}
		return nil
	})
	var fs []verify.Finding
	for _, m := range suspect.Scan(def, others) {
		fs = append(fs, verify.Finding{Kind: verify.SuspiciousText, Severity: verify.Warning, Server: o.Server,
			Tool: t.Name, Version: t.Version, Live: t.Digest.String(), Pointer: m.Pointer, Match: m.Text,
			Message: fmt.Sprintf("tool %s: %s at %s", t.Name, m.Reason, m.Pointer)})
	}
	return fs
}
