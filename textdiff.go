package etdi

import (
	"strings"
	"unicode"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// textDiffContext is how many characters of unchanged text TextDiff keeps
// on each side of a change.
const textDiffContext = 40

// maxDiffWords bounds the words of both strings TextDiff compares one by
// one (the work grows with their product); longer strings are shown as one
// change between their common prefix and suffix.
const maxDiffWords = 4000

// TextDiff shows where two strings differ, word by word: every removed run
// is marked [-removed-] and every inserted run {+added+}, each where it
// happens, so an instruction appended to a description that was also
// edited elsewhere shows as its own {+...+}. Unchanged runs longer than
// 80 characters are cut to 40 characters of context around each change.
// A word is a run of letters, digits, marks and '_'; every other
// character (space runs aside) is a word of its own, so a hidden
// character inside a word shows as a change of its own.
func TextDiff(old, cur string) string {
	a, b, tokens, ok := tokenRunes(old, cur)
	if !ok {
		return renderTextDiff(joinChanges(coarseDiff(old, cur)))
	}
	dmp := diffmatchpatch.New()
	diffs := dmp.DiffMainRunes(a, b, false)
	for i := range diffs {
		var s strings.Builder
		for _, r := range diffs[i].Text {
			s.WriteString(tokens[runeIndex(r)])
		}
		diffs[i].Text = s.String()
	}
	return renderTextDiff(joinChanges(diffs))
}

// coarseDiff is the common prefix, one change, and the common suffix.
func coarseDiff(old, cur string) []diffmatchpatch.Diff {
	o, c := []rune(old), []rune(cur)
	p := 0
	for p < len(o) && p < len(c) && o[p] == c[p] {
		p++
	}
	s := 0
	for s < len(o)-p && s < len(c)-p && o[len(o)-1-s] == c[len(c)-1-s] {
		s++
	}
	var out []diffmatchpatch.Diff
	for _, d := range []diffmatchpatch.Diff{
		{Type: diffmatchpatch.DiffEqual, Text: string(o[:p])},
		{Type: diffmatchpatch.DiffDelete, Text: string(o[p : len(o)-s])},
		{Type: diffmatchpatch.DiffInsert, Text: string(c[p : len(c)-s])},
		{Type: diffmatchpatch.DiffEqual, Text: string(o[len(o)-s:])},
	} {
		if d.Text != "" {
			out = append(out, d)
		}
	}
	return out
}

// tokenRunes maps the words of a and b to one code point each (skipping
// surrogates, which a Go string cannot hold).
func tokenRunes(a, b string) ([]rune, []rune, []string, bool) {
	wa, wb := words(a), words(b)
	if len(wa)+len(wb) > maxDiffWords {
		return nil, nil, nil, false
	}
	ids := map[string]rune{}
	var tokens []string
	conv := func(ws []string) []rune {
		var out []rune
		for _, w := range ws {
			id, seen := ids[w]
			if !seen {
				id = indexRune(len(tokens))
				ids[w] = id
				tokens = append(tokens, w)
			}
			out = append(out, id)
		}
		return out
	}
	ra := conv(wa)
	rb := conv(wb)
	return ra, rb, tokens, true
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
