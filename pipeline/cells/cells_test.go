package cells

import "testing"

func TestString(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"labeller coverage 84.8%", 23},
		{"中文", 4},
		{"ｆｕｌｌ", 8},     // fullwidth Latin
		{"한국어", 6},      // Hangul syllables
		{"e\u0301", 1},  // e and a combining acute
		{"a\u200bb", 2}, // zero-width space
		{"…·─", 3},      // ambiguous: one cell each
		{"日本語 and ascii", 16},
		{"😀", 2},
		{"🚶\u200d♀\ufe0f🌳", 4}, // a joined emoji sequence is one glyph
	} {
		if got := String(tc.s); got != tc.want {
			t.Errorf("String(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}
