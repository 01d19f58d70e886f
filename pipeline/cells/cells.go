// Package cells measures text in terminal cells, the unit in which a
// fixed-width layout (ac3 inspect's columns, the report's chart labels)
// lines up: East Asian wide and fullwidth characters take two cells,
// combining marks and other invisible characters none.
package cells

import (
	"unicode"

	"golang.org/x/text/width"
)

// Rune is how many cells r takes. Characters of ambiguous width ("…", "·",
// box drawing) take one whatever the locale, so that output does not
// depend on the machine it was made on.
func Rune(r rune) int {
	switch {
	case r == 0, unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf), r == '\u200b':
		return 0
	case r < 0x1100: // below Hangul Jamo nothing is wide
		return 1
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// String is how many cells s takes. A rune joined to the one before it by
// a zero-width joiner (U+200D, as in the emoji 🚶‍♀️) is drawn as part of
// that glyph and adds nothing.
func String(s string) int {
	n, joined := 0, false
	for _, r := range s {
		switch {
		case r == '\u200d':
			joined = true
		case joined && Rune(r) > 0:
			joined = false
		default:
			n += Rune(r)
		}
	}
	return n
}
