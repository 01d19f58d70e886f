package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/ac3/ac3/pipeline/conv"
)

// LanguageCount is how many of the run's conversations are in one language,
// and how many of those had it identified (conv.LanguageIdentified) rather
// than from their input's own field. Language "" counts the conversations
// whose language is not known.
type LanguageCount struct {
	Language      string `json:"language"`
	Conversations int64  `json:"conversations"`
	Identified    int64  `json:"identified"`
}

// Languages counts the run's conversations by language and source, most
// frequent language first. It reads the index of migration 0010 only, never
// a conversation. A conversation stored before that migration, which has no
// recorded source, counts as from the input: ac3 identified no language then.
func (l *Ledger) Languages(ctx context.Context) (_ []LanguageCount, err error) {
	defer l.classify(&err)
	q := `SELECT language, language_source, count(*) FROM conversations GROUP BY language, language_source`
	if !l.hasLangSource {
		q = `SELECT language, '', count(*) FROM conversations GROUP BY language`
	}
	rows, err := l.r.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("counting languages: %w", err)
	}
	defer rows.Close()
	var out []LanguageCount
	for rows.Next() {
		var lang, source string
		var n int64
		if err := rows.Scan(&lang, &source, &n); err != nil {
			return nil, fmt.Errorf("counting languages: %w", err)
		}
		if len(out) == 0 || out[len(out)-1].Language != lang {
			out = append(out, LanguageCount{Language: lang})
		}
		c := &out[len(out)-1]
		c.Conversations += n
		if source == conv.LanguageIdentified {
			c.Identified += n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("counting languages: %w", err)
	}
	slices.SortStableFunc(out, func(a, b LanguageCount) int {
		if c := cmp.Compare(b.Conversations, a.Conversations); c != 0 {
			return c
		}
		return cmp.Compare(a.Language, b.Language)
	})
	return out, nil
}
