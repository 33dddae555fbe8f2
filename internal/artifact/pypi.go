package artifact

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/artifactsyntax"
)

// resolvePyPI finds the files of an exactly pinned Python package in the
// nearest uv.lock.
func resolvePyPI(p *plan, dir string) (*Resolved, string) {
	pin := shown(p.name) + "==<version>"
	switch {
	case p.version == "":
		return nil, errf("%s installs the newest %s on the index; pin it: %s", p.runner, shown(p.name), pin)
	case !p.exact:
		return nil, errf("%s %s is not one exact version, so the index decides; pin it: %s", shown(p.name), shown(p.version), pin)
	}
	var lock string
	parents(dir, func(d string) bool {
		if f := filepath.Join(d, "uv.lock"); exists(f) {
			lock = f
			return true
		}
		return false
	})
	if lock == "" {
		return nil, errf("no uv.lock in %s or above records the files of %s %s; pin them with uv add %s==%s && uv lock there",
			within(dir, "."), shown(p.name), shown(p.version), shown(p.name), shown(p.version))
	}
	b, err := readBounded(lock, maxLock)
	if err != nil {
		return nil, errf("cannot read %s: %v", lock, err)
	}
	pkgs, err := parseUVLock(b)
	if err != nil {
		return nil, errf("cannot read %s: %v; rewrite it with uv lock", lock, err)
	}
	var hits []uvPackage
	var others []string
	for _, k := range pkgs {
		if pep503(k.name) != pep503(p.name) {
			continue
		}
		if pep440(k.version) == pep440(p.version) {
			hits = append(hits, k)
		} else {
			others = append(others, k.version)
		}
	}
	switch {
	case len(hits) == 0 && len(others) > 0:
		return nil, errf("%s records %s at %s, not %s; pin the version it records, or run uv lock", lock, shown(p.name),
			shown(strings.Join(others, ", ")), shown(p.version))
	case len(hits) == 0:
		return nil, errf("%s does not record %s; pin it with uv add %s==%s", lock, shown(p.name), shown(p.name), shown(p.version))
	case len(hits) > 1:
		return nil, errf("%s records %s %s more than once (from different sources); keep one", lock, shown(p.name), shown(p.version))
	}
	k := hits[0]
	hashes := k.hashes()
	if len(hashes) == 0 {
		return nil, errf("%s records no sha256 file hash for %s %s (a git, path or editable source); pin an index version",
			lock, shown(k.name), shown(k.version))
	}
	return &Resolved{Artifact: etdi.Artifact{Type: etdi.ArtifactPyPI, Name: k.name, Version: k.version, Digest: hashes[0]},
		Digests: hashes, From: "uv.lock " + filepath.Dir(lock)}, ""
}

// uvPackage is what is read of a [[package]] of uv.lock.
type uvPackage struct {
	name, version string
	sdist         []string // sha256:<hex>
	wheels        []string
}

// hashes are the file hashes of a package: the sdist's, then each
// wheel's.
func (k *uvPackage) hashes() []string {
	var hs []string
	for _, h := range append(append([]string{}, k.sdist...), k.wheels...) {
		if !slices.Contains(hs, h) {
			hs = append(hs, h)
		}
	}
	return hs
}

// parseUVLock reads the [[package]] tables of a uv.lock: their name,
// version, sdist hash and wheel hashes. It parses the TOML that uv writes
// (tables, arrays of tables, key = value with strings, numbers, booleans,
// dates, arrays and inline tables) and fails on anything else; values
// other than those read are skipped without being kept.
func parseUVLock(b []byte) ([]uvPackage, error) {
	t := &toml{s: string(b), line: 1}
	var pkgs []uvPackage
	var cur *uvPackage
	for {
		t.space(true)
		if t.i >= len(t.s) {
			break
		}
		if t.s[t.i] == '[' {
			array, key, err := t.header()
			if err != nil {
				return nil, err
			}
			cur = nil
			if array && key == "package" {
				pkgs = append(pkgs, uvPackage{})
				cur = &pkgs[len(pkgs)-1]
			}
		} else if err := t.keyValue(cur); err != nil {
			return nil, err
		}
		t.space(false)
		if t.i < len(t.s) && t.s[t.i] != '\n' && t.s[t.i] != '\r' {
			return nil, t.errf("want a new line")
		}
	}
	for _, k := range pkgs {
		if k.name == "" {
			return nil, errors.New("a [[package]] has no name")
		}
	}
	return pkgs, nil
}

// header reads a table header, [key] or [[key]], and says whether it
// opens an array of tables.
func (t *toml) header() (array bool, key string, err error) {
	array = strings.HasPrefix(t.s[t.i:], "[[")
	n := 1
	if array {
		n = 2
	}
	t.i += n
	t.space(false)
	if key, err = t.key(); err != nil {
		return false, "", err
	}
	t.space(false)
	if !strings.HasPrefix(t.s[t.i:], "]]"[:n]) {
		return false, "", t.errf("unterminated table header")
	}
	t.i += n
	return array, key, nil
}

// keyValue reads a key = value line and keeps into cur, the package
// being read (nil outside one), the values a package is read for: its
// name, version, sdist hash and wheel hashes.
func (t *toml) keyValue(cur *uvPackage) error {
	key, err := t.key()
	if err != nil {
		return err
	}
	t.space(false)
	if !t.eat('=') {
		return t.errf("want = after a key")
	}
	t.space(false)
	keep := cur != nil && (key == "name" || key == "version" || key == "sdist" || key == "wheels")
	v, err := t.value(keep, 0)
	if err != nil || !keep {
		return err
	}
	switch key {
	case "name", "version":
		s, ok := v.(string)
		if !ok {
			return t.errf("%s is not a string", key)
		}
		if key == "name" {
			cur.name = s
		} else {
			cur.version = s
		}
	case "sdist":
		cur.sdist = appendHash(cur.sdist, v)
	case "wheels":
		arr, _ := v.([]any)
		for _, w := range arr {
			cur.wheels = appendHash(cur.wheels, w)
		}
	}
	return nil
}

// appendHash appends the hash of an inline table { hash = "sha256:..." }
// if it is one.
func appendHash(hs []string, v any) []string {
	m, _ := v.(map[string]any)
	h, _ := m["hash"].(string)
	if artifactsyntax.SHA256(h) && !slices.Contains(hs, h) {
		hs = append(hs, h)
	}
	return hs
}

// toml is a bounded reader of the TOML that uv.lock is written in.
type toml struct {
	s    string
	i    int
	line int
}

func (t *toml) errf(format string, args ...any) error {
	return fmt.Errorf("line %d: %s", t.line, fmt.Sprintf(format, args...))
}

func (t *toml) eat(c byte) bool {
	if t.i < len(t.s) && t.s[t.i] == c {
		t.i++
		return true
	}
	return false
}

// space skips blanks and comments, and new lines if lines is set.
func (t *toml) space(lines bool) {
	for t.i < len(t.s) {
		switch c := t.s[t.i]; {
		case c == ' ' || c == '\t':
			t.i++
		case c == '#':
			for t.i < len(t.s) && t.s[t.i] != '\n' {
				t.i++
			}
		case lines && c == '\n':
			t.line++
			t.i++
		case lines && c == '\r' && strings.HasPrefix(t.s[t.i:], "\r\n"):
			t.i++
		default:
			return
		}
	}
}

// key reads a key, dotted parts joined by '.'.
func (t *toml) key() (string, error) {
	var parts []string
	for {
		t.space(false)
		var part string
		switch {
		case t.i < len(t.s) && (t.s[t.i] == '"' || t.s[t.i] == '\''):
			v, err := t.str(true)
			if err != nil {
				return "", err
			}
			part = v
		default:
			j := t.i
			for j < len(t.s) && (isAlnum(t.s[j]) || t.s[j] == '_' || t.s[j] == '-') {
				j++
			}
			if j == t.i {
				return "", t.errf("want a key")
			}
			part, t.i = t.s[t.i:j], j
		}
		parts = append(parts, part)
		t.space(false)
		if !t.eat('.') {
			return strings.Join(parts, "."), nil
		}
	}
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// value reads a value: a string, an []any array, a map[string]any inline
// table, or a scalar. Unless keep is set, nothing is
// kept and nil is returned.
func (t *toml) value(keep bool, depth int) (any, error) {
	if depth > 32 {
		return nil, t.errf("values nest too deep")
	}
	if t.i >= len(t.s) {
		return nil, t.errf("want a value")
	}
	switch t.s[t.i] {
	case '"', '\'':
		s, err := t.str(keep)
		if err != nil || !keep {
			return nil, err
		}
		return s, nil
	case '[':
		return t.array(keep, depth)
	case '{':
		return t.inlineTable(keep, depth)
	}
	return t.bare()
}

// array reads an array, its elements kept only if keep is set.
func (t *toml) array(keep bool, depth int) (any, error) {
	t.i++
	var arr []any
	for {
		t.space(true)
		if t.eat(']') {
			return arr, nil
		}
		v, err := t.value(keep, depth+1)
		if err != nil {
			return nil, err
		}
		if keep {
			arr = append(arr, v)
		}
		t.space(true)
		if !t.eat(',') {
			t.space(true)
			if !t.eat(']') {
				return nil, t.errf("want , or ] in an array")
			}
			return arr, nil
		}
	}
}

// inlineTable reads an inline table, its members kept only if keep is
// set.
func (t *toml) inlineTable(keep bool, depth int) (any, error) {
	t.i++
	var m map[string]any
	if keep {
		m = map[string]any{}
	}
	for {
		t.space(true)
		if t.eat('}') {
			return m, nil
		}
		k, err := t.key()
		if err != nil {
			return nil, err
		}
		t.space(false)
		if !t.eat('=') {
			return nil, t.errf("want = in an inline table")
		}
		t.space(false)
		v, err := t.value(keep, depth+1)
		if err != nil {
			return nil, err
		}
		if keep {
			m[k] = v
		}
		t.space(true)
		if !t.eat(',') {
			t.space(true)
			if !t.eat('}') {
				return nil, t.errf("want , or } in an inline table")
			}
			return m, nil
		}
	}
}

// bare reads a number, boolean or date: up to what ends a value. A
// space is part of it only between a date and a time.
func (t *toml) bare() (any, error) {
	j := t.i
	for j < len(t.s) && !strings.ContainsRune(",]}#\n\r\t", rune(t.s[j])) {
		c := t.s[j]
		if c == ' ' {
			if !dateRE().MatchString(t.s[t.i:j]) || j+1 >= len(t.s) || t.s[j+1] < '0' || t.s[j+1] > '9' {
				break
			}
		} else if c != '.' && c != ':' && c != '-' && c != '+' && c != '_' && !isAlnum(c) {
			return nil, t.errf("unexpected %q", c)
		}
		j++
	}
	v := t.s[t.i:j]
	if v == "" {
		return nil, t.errf("want a value")
	}
	t.i += len(v)
	return scalar(v), nil
}

var dateRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`) })

// scalar is a number, boolean or date, as written.
type scalar string

// str reads a basic ("..."), literal ('...') or multi-line string.
func (t *toml) str(keep bool) (string, error) {
	q, multi := t.openQuote()
	var sb strings.Builder
	for t.i < len(t.s) {
		c := t.s[t.i]
		switch {
		case c == q && (!multi || strings.HasPrefix(t.s[t.i:], strings.Repeat(string(q), 3))):
			t.closeQuote(&sb, q, multi)
			return sb.String(), nil
		case c == '\n':
			if !multi {
				return "", t.errf("new line in a string")
			}
			t.line++
		case c == '\\' && q == '"':
			if err := t.escape(&sb, keep, multi); err != nil {
				return "", err
			}
			continue
		}
		if keep {
			sb.WriteByte(c)
		}
		t.i++
	}
	return "", t.errf("unterminated string")
}

// openQuote reads the opening quote of a string and says which quote it
// is and whether the string is a multi-line one, whose first new line
// it skips.
func (t *toml) openQuote() (q byte, multi bool) {
	q = t.s[t.i]
	multi = strings.HasPrefix(t.s[t.i:], strings.Repeat(string(q), 3))
	if multi {
		t.i += 3
		if strings.HasPrefix(t.s[t.i:], "\n") {
			t.i++
			t.line++
		} else if strings.HasPrefix(t.s[t.i:], "\r\n") {
			t.i += 2
			t.line++
		}
	} else {
		t.i++
	}
	return q, multi
}

// closeQuote reads the closing quote q of a string; up to two more
// quotes after that of a multi-line string belong to the string.
func (t *toml) closeQuote(sb *strings.Builder, q byte, multi bool) {
	if !multi {
		t.i++
		return
	}
	t.i += 3
	for k := 0; k < 2 && t.i < len(t.s) && t.s[t.i] == q; k++ {
		sb.WriteByte(q)
		t.i++
	}
}

// escape reads the escape sequence at a backslash of a basic string,
// writing what it stands for to sb if keep is set, and decides whether
// it is one TOML allows (a line-ending backslash only in a multi-line
// string, where it drops the following blanks).
func (t *toml) escape(sb *strings.Builder, keep, multi bool) error {
	t.i++
	if t.i >= len(t.s) {
		return t.errf("unterminated string")
	}
	e := t.s[t.i]
	switch e {
	case 'b', 't', 'n', 'f', 'r', 'e', '"', '\\':
		if keep {
			sb.WriteByte("\b\t\n\f\r\x1b\"\\"[strings.IndexByte(`btnfre"\`, e)])
		}
		t.i++
	case 'x', 'u', 'U':
		n := 2 // \xHH, \uHHHH, \UHHHHHHHH
		if e == 'u' {
			n = 4
		} else if e == 'U' {
			n = 8
		}
		if t.i+1+n > len(t.s) {
			return t.errf("bad escape")
		}
		r, err := strconv.ParseUint(t.s[t.i+1:t.i+1+n], 16, 32)
		if err != nil {
			return t.errf("bad escape")
		}
		if keep {
			sb.WriteRune(rune(r))
		}
		t.i += 1 + n
	case ' ', '\t', '\r', '\n':
		if !multi {
			return t.errf("bad escape")
		}
		for t.i < len(t.s) && strings.ContainsRune(" \t\r\n", rune(t.s[t.i])) {
			if t.s[t.i] == '\n' {
				t.line++
			}
			t.i++
		}
	default:
		return t.errf("bad escape")
	}
	return nil
}
