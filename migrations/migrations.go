// Package migrations embeds the numbered .sql files that build a run's SQLite
// ledger. The ledger applies them in name order, each in its own transaction,
// and records each applied name, so an old run file is upgraded in place.
//
// A shipped migration is never edited: a change gets a new number.
package migrations

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed *.sql
var files embed.FS

// Migration is one numbered schema change.
type Migration struct {
	Name string // file name, e.g. 0001_init.sql
	SQL  string
}

// All returns every migration in the order it must be applied.
func All() ([]Migration, error) {
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]Migration, 0, len(names))
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Name: n, SQL: string(b)})
	}
	return out, nil
}
