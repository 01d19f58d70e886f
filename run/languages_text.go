package run

import (
	"fmt"
	"io"
	"strings"

	"github.com/ac3/ac3/pipeline/ledger"
)

// shownLanguages is how many languages the status line names; the rest are
// summed (status --json lists them all).
const shownLanguages = 10

// writeLanguages prints the conversations' languages on one line, most
// frequent first, each with how many had it identified rather than from the
// input's own field, e.g. "languages: English 37 (29 identified), Chinese 10".
func writeLanguages(w io.Writer, langs []ledger.LanguageCount) {
	if len(langs) == 0 {
		return
	}
	var parts []string
	var identified, restN, rest int64
	for i, l := range langs {
		identified += l.Identified
		if i >= shownLanguages {
			restN++
			rest += l.Conversations
			continue
		}
		name := l.Language
		if name == "" {
			name = "unknown"
		}
		s := fmt.Sprintf("%s %d", name, l.Conversations)
		if l.Identified > 0 {
			s += fmt.Sprintf(" (%d identified)", l.Identified)
		}
		parts = append(parts, s)
	}
	if restN > 0 {
		parts = append(parts, fmt.Sprintf("%d more languages %d", restN, rest))
	}
	fmt.Fprintf(w, "languages: %s\n", strings.Join(parts, ", "))
	if identified > 0 {
		fmt.Fprintf(w, "  %d of them identified from their user turns (see --identify-language); 'ac3 export --what conversations' gives each one's detector and confidence\n", identified)
	}
}
