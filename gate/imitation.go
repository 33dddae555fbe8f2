package gate

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"unicode"

	"github.com/etdi-dev/etdi/internal/confusable"
	"github.com/etdi-dev/etdi/internal/mcpclient"
)

// EtdiLogger is the logger of every notifications/message etdi sends the
// host itself (docs/gate.md#runtime-gate); no server message reaches the host under it.
const EtdiLogger = "etdi"

// RelabeledLogger is the logger a server's notifications/message gets
// when its own claims etdi's.
const RelabeledLogger = "server (not etdi)"

// ServerAsksPrefix begins the message of a server's elicitation/create
// that reads like one of etdi's own questions.
const ServerAsksPrefix = "[The server asks this, not etdi] "

// etdiSkeleton is etdi's name as claimsEtdi compares it.
var etdiSkeleton = normalized(EtdiLogger)[0]

// lettersOf keeps the letters and digits of s.
func lettersOf(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return -1
	}, s)
}

// normalized is s as a person reads it: its look-alike skeleton
// (confusable letters, invisible characters folded, confusable.Skeleton)
// in lower case, letters and digits only, "l" read as "i" (a capital I
// and a small l look alike, and the skeleton makes "1" and "|" an l).
// The skeleton is taken of s as written and in lower case: lowering
// first turns Greek capitals that look Latin ("ΕΤDΙ") into letters that
// do not.
func normalized(s string) []string {
	var out []string
	for _, x := range []string{strings.ToLower(s), s} {
		n := strings.ReplaceAll(lettersOf(strings.ToLower(confusable.Skeleton(x))), "l", "i")
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// claimsEtdi reports whether a logger name reads as etdi's: "etdi",
// "ETDI", "еtdi" (Cyrillic e), "ETDl", "etdi:", "[etdi] gate", ...
func claimsEtdi(logger string) bool {
	for _, n := range normalized(logger) {
		if strings.HasPrefix(n, etdiSkeleton) {
			return true
		}
	}
	return false
}

// imitationMarks are what etdi's own questions (elicitation) and notices
// say, as normalized reads them: a server's question holding one reads
// like etdi's.
var imitationMarks = []string{etdiSkeleton, normalized("a policy asks you")[0], normalized("allow this call")[0]}

// imitatesEtdi reports whether a server's text reads like etdi's own.
func imitatesEtdi(text string) bool {
	for _, n := range normalized(text) {
		for _, m := range imitationMarks {
			if strings.Contains(n, m) {
				return true
			}
		}
	}
	return false
}

// serverLog decides a notifications/message of the server: relayed as
// sent, or, when its logger claims etdi's, with logger RelabeledLogger;
// nil (dropped) when its params cannot be read strictly (a logger twice,
// or under another case, or not a string) as a host would.
func serverLog(params []byte) ([]byte, string) {
	p, err := strictObject(params, "params", "logger")
	if err != nil {
		return nil, err.Error()
	}
	logger, ok, err := strictString(p["logger"], "params.logger")
	if err != nil {
		return nil, err.Error()
	}
	if !ok || !claimsEtdi(logger) {
		return params, ""
	}
	return withMember(mcpclient.WithoutMember(params, "logger"), "logger", RelabeledLogger), "its logger " + clipText(strings.ToValidUTF8(logger, "?")) + " claims etdi's"
}

// serverElicitation decides an elicitation/create of the server: its
// message, when it reads like etdi's own question, is prefixed with
// ServerAsksPrefix; a message or requestedSchema member twice, or under
// another case, or a message that is not a string, is refused (nil).
func serverElicitation(params []byte) ([]byte, string, error) {
	p, err := strictObject(params, "params", "message", "requestedSchema")
	if err != nil {
		return nil, "", err
	}
	msg, ok, err := strictString(p["message"], "params.message")
	if err != nil {
		return nil, "", err
	}
	// The form's own texts are shown beside the message.
	if !(ok && imitatesEtdi(msg)) && !imitatesEtdi(schemaText(p["requestedSchema"])) {
		return params, "", nil
	}
	return withMember(mcpclient.WithoutMember(params, "message"), "message", ServerAsksPrefix+msg), "its message reads like etdi's own question", nil
}

// schemaText is the text a host shows of a requested schema: every
// member name and string of it, decoded (a title "\u0041llow this call"
// reads "Allow this call"), a member given twice with each of its
// values, one per line; the raw JSON when it does not decode.
func schemaText(raw []byte) string {
	var b strings.Builder
	d := json.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return b.String()
		}
		if err != nil {
			return string(raw)
		}
		if s, ok := tok.(string); ok {
			b.WriteString(s)
			b.WriteByte('\n')
		}
	}
}

// withMember returns the JSON object obj (without a member name) with
// member name set to the string value, first.
func withMember(obj []byte, name, value string) []byte {
	n, _ := json.Marshal(name)
	v, _ := json.Marshal(value)
	out := append([]byte{'{'}, n...)
	out = append(out, ':')
	out = append(out, v...)
	rest := strings.TrimSpace(string(obj))
	rest = strings.TrimSpace(strings.TrimPrefix(rest, "{"))
	switch rest {
	case "", "}":
		return append(out, '}')
	}
	out = append(out, ',')
	return append(out, rest...)
}
