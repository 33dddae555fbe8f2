package etdi

import (
	"strings"
	"unicode"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// textDiffContext is how many characters of unchanged text TextDiff keeps
// on each side of a change.
const textDiffContext = 40

// maxDiffTokens bounds the distinct words TextDiff maps to code points;
// beyond it the strings are compared character by character.
const maxDiffTokens = 0x10FFFF - 0x800

// TextDiff shows where two strings differ, word by word: every removed run
// is marked [-removed-] and every inserted run {+added+}, each where it
// happens, so an instruction appended to a description that was also
// edited elsewhere shows as its own {+...+}. Unchanged runs longer than
// 80 characters are cut to 40 characters of context around each change.
// A word is a run of letters, digits, marks and '_'; every other
// character (space runs aside) is a word of its own, so a hidden
// character inside a word shows as a change of its own.
func TextDiff(old, cur string) string {
	dmp := diffmatchpatch.New()
	var diffs []diffmatchpatch.Diff
	a, b, tokens, ok := tokenRunes(old, cur)
	if ok {
		diffs = dmp.DiffMainRunes(a, b, false)
		for i := range diffs {
			var s strings.Builder
			for _, r := range diffs[i].Text {
				s.WriteString(tokens[runeIndex(r)])
			}
			diffs[i].Text = s.String()
		}
	} else {
		diffs = dmp.DiffMain(old, cur, false)
	}
	return renderTextDiff(joinChanges(diffs))
}

// tokenRunes maps the words of a and b to one code point each (skipping
// surrogates, which a Go string cannot hold).
func tokenRunes(a, b string) ([]rune, []rune, []string, bool) {
	ids := map[string]rune{}
	var tokens []string
	conv := func(s string) ([]rune, bool) {
		var out []rune
		for _, w := range words(s) {
			id, seen := ids[w]
			if !seen {
				if len(tokens) >= maxDiffTokens {
					return nil, false
				}
				id = indexRune(len(tokens))
				ids[w] = id
				tokens = append(tokens, w)
			}
			out = append(out, id)
		}
		return out, true
	}
	ra, ok1 := conv(a)
	rb, ok2 := conv(b)
	return ra, rb, tokens, ok1 && ok2
}

func indexRune(i int) rune {
	if i >= 0xD800 {
		return rune(i + 0x800)
	}
	return rune(i)
}

func runeIndex(r rune) int {
	if r >= 0xE000 {
		return int(r) - 0x800
	}
	return int(r)
}

func wordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// plainSpace is whitespace that is not hidden: it joins the words around a
// change into one run.
func plainSpace(r rune) bool { return r == ' ' }

// words splits s into words, runs of spaces, and single other characters.
func words(s string) []string {
	var out []string
	start := -1
	kind := 0
	for i, r := range s {
		k := 3
		switch {
		case wordRune(r):
			k = 1
		case plainSpace(r):
			k = 2
		}
		if start >= 0 && (k != kind || k == 3) {
			out = append(out, s[start:i])
			start = -1
		}
		if start < 0 {
			start, kind = i, k
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// joinChanges turns the diff into alternating unchanged text and changes:
// spaces alone after a replacement and before another change belong to
// the change, so "a b" to "x y" reads [-a b-]{+x y+} rather than two
// changes. Insertions separated by unchanged text stay apart.
func joinChanges(diffs []diffmatchpatch.Diff) []diffmatchpatch.Diff {
	var out []diffmatchpatch.Diff
	var del, ins strings.Builder
	flush := func() {
		if del.Len() > 0 {
			out = append(out, diffmatchpatch.Diff{Type: diffmatchpatch.DiffDelete, Text: del.String()})
		}
		if ins.Len() > 0 {
			out = append(out, diffmatchpatch.Diff{Type: diffmatchpatch.DiffInsert, Text: ins.String()})
		}
		del.Reset()
		ins.Reset()
	}
	for i, d := range diffs {
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			del.WriteString(d.Text)
		case diffmatchpatch.DiffInsert:
			ins.WriteString(d.Text)
		default:
			between := del.Len() > 0 && ins.Len() > 0 && i+1 < len(diffs) && strings.Trim(d.Text, " ") == ""
			if between {
				del.WriteString(d.Text)
				ins.WriteString(d.Text)
				continue
			}
			flush()
			out = append(out, d)
		}
	}
	flush()
	return out
}

func renderTextDiff(diffs []diffmatchpatch.Diff) string {
	var b strings.Builder
	for i, d := range diffs {
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			b.WriteString("[-" + truncate(d.Text, MaxChangeText) + "-]")
		case diffmatchpatch.DiffInsert:
			b.WriteString("{+" + truncate(d.Text, MaxChangeText) + "+}")
		default:
			r := []rune(d.Text)
			first, last := i == 0, i == len(diffs)-1
			switch {
			case first && last:
				b.WriteString(d.Text)
			case first && len(r) > textDiffContext:
				b.WriteString("..." + string(r[len(r)-textDiffContext:]))
			case last && len(r) > textDiffContext:
				b.WriteString(string(r[:textDiffContext]) + "...")
			case !first && !last && len(r) > 2*textDiffContext:
				b.WriteString(string(r[:textDiffContext]) + "..." + string(r[len(r)-textDiffContext:]))
			default:
				b.WriteString(d.Text)
			}
		}
	}
	return b.String()
}
