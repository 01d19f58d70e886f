package ledger

import (
	"context"
	"fmt"
)

// SetMaxPageCount caps the run file at n pages on the writer's single
// connection and returns the cap SQLite applied (never below the file's
// current size). Past the cap SQLite fails writes with SQLITE_FULL, exactly
// as on a full disk, which lets tests fill the "disk" deterministically.
func SetMaxPageCount(ctx context.Context, l *Ledger, n int64) (int64, error) {
	var got int64
	err := l.w.QueryRowContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", n)).Scan(&got)
	return got, err
}

// PageCount is the run file's size in pages.
func PageCount(ctx context.Context, l *Ledger) (int64, error) {
	var n int64
	err := l.w.QueryRowContext(ctx, "PRAGMA page_count").Scan(&n)
	return n, err
}
