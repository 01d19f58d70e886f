//go:build cgo

package ledger

import (
	"errors"
	"syscall"

	"github.com/mattn/go-sqlite3"
)

// sqliteDamage reports whether SQLite said the file is corrupt or not a
// database.
func sqliteDamage(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrCorrupt || se.Code == sqlite3.ErrNotADB)
}

// sqliteFull reports whether SQLite ran out of room: SQLITE_FULL, or a
// write the operating system refused for lack of space or quota.
func sqliteFull(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrFull || se.SystemErrno == syscall.ENOSPC || se.SystemErrno == syscall.EDQUOT)
}
