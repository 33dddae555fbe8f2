package pin

import (
	"fmt"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/suspect"
	"github.com/etdi-dev/etdi/verify"
	bolt "go.etcd.io/bbolt"
)

// suspicion scans the tools of one comparison for suspicious text
// (SPEC.md §21). The names of tools approved on other servers count,
// except names this server offers itself; they are read once, on first
// use.
type suspicion struct {
	tx     *bolt.Tx
	o      *Observation
	others *suspect.Names
}

func newSuspicion(tx *bolt.Tx, o *Observation) *suspicion { return &suspicion{tx: tx, o: o} }

func (s *suspicion) names() *suspect.Names {
	if s.others != nil {
		return s.others
	}
	own := map[string]bool{}
	for _, t := range s.o.Tools {
		own[t.Name] = true
	}
	var others []string
	nb := s.tx.Bucket(bNames)
	nb.ForEach(func(k, _ []byte) error {
		if name := string(k); !own[name] {
			for _, srv := range getStrings(nb, name) {
				if srv != s.o.Server {
					others = append(others, name)
					break
				}
			}
		}
		return nil
	})
	s.others = suspect.NewNames(others)
	return s.others
}

// findings returns a suspicious_text warning for each piece of text in
// t's definition that hides characters or addresses the model.
func (s *suspicion) findings(t *Observed) []verify.Finding {
	def, err := etdi.ParseJSON(t.Canonical)
	if err != nil {
		return nil
	}
	var fs []verify.Finding
	for _, m := range suspect.Scan(def, s.names()) {
		fs = append(fs, verify.Finding{Kind: verify.SuspiciousText, Severity: verify.Warning, Server: s.o.Server,
			Tool: t.Name, Version: t.Version, Live: t.Digest.String(), Pointer: m.Pointer, Match: m.Text,
			Message: fmt.Sprintf("tool %s: %s at %s", t.Name, m.Reason, m.Pointer)})
	}
	return fs
}
