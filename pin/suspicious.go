package pin

import (
	"fmt"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/suspect"
	"github.com/etdi-dev/etdi/strictjson"
)

// suspicion scans the tools of one comparison for suspicious text
// (docs/output.md#escaping-untrusted-text). The names of tools approved on other servers count,
// except names this server offers itself; each candidate word is looked
// up in the names index, so the cost does not grow with the database.
type suspicion struct {
	tx     *kvTx
	o      *Observation
	own    map[string]bool
	others map[string]bool
}

func newSuspicion(tx *kvTx, o *Observation) *suspicion { return &suspicion{tx: tx, o: o} }

func (s *suspicion) isOther(word string) bool {
	if s.others == nil {
		s.others, s.own = map[string]bool{}, map[string]bool{}
		for _, t := range s.o.Tools {
			if t.Item == ItemTool {
				s.own[t.Name] = true
			}
		}
	}
	if s.own[word] {
		return false
	}
	other, seen := s.others[word]
	if !seen {
		servers, err := getStrings(s.tx.Bucket(bNames), word)
		// A damaged index entry fails the comparison elsewhere; here it
		// counts as another server's name, so the warning is not lost.
		other = err != nil
		for _, srv := range servers {
			other = other || srv != s.o.Server
		}
		s.others[word] = other
	}
	return other
}

// findings returns a suspicious_text warning for each piece of text in
// t's definition that hides characters or addresses the model.
func (s *suspicion) findings(t *Observed) []finding.Finding {
	def, err := strictjson.Parse(t.Canonical)
	if err != nil {
		return nil
	}
	var fs []finding.Finding
	for _, m := range suspect.Scan(def, s.isOther) {
		fs = append(fs, finding.Finding{Kind: finding.SuspiciousText, Severity: finding.Warning, Server: s.o.Server,
			Item: t.Item, Tool: t.Name, Version: t.Version, Live: t.Digest.String(), Pointer: m.Pointer, Match: m.Text,
			Message: fmt.Sprintf("%s %s: %s at %s", ItemWord(t.Item), t.Name, m.Reason, m.Pointer)})
	}
	return fs
}
