//go:build cgo

package ledger

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/mattn/go-sqlite3"

	"github.com/ac3/ac3/pipeline/ledger/pagesum"
)

// sqliteDamage reports whether SQLite said the file is corrupt or not a
// database, or a page failed its checksum.
func sqliteDamage(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrCorrupt || se.Code == sqlite3.ErrNotADB || int(se.ExtendedCode) == pagesum.ExtendedCode)
}

// isChecksumFault reports whether SQLite said a page failed its checksum.
func isChecksumFault(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && int(se.ExtendedCode) == pagesum.ExtendedCode
}

// isIOErr reports whether err is one of SQLite's I/O errors.
func isIOErr(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrIoErr
}

// setReserve asks SQLite (through database/sql's Conn.Raw) to keep the
// sum's bytes free at the end of every page.
func setReserve(dc any) error {
	sc, ok := dc.(*sqlite3.SQLiteConn)
	if !ok {
		return fmt.Errorf("the sqlite3 driver gave a %T", dc)
	}
	return sc.SetFileControlInt("main", fcntlReserveBytes, pagesum.Reserve)
}

// sqliteFull reports whether SQLite ran out of room: SQLITE_FULL, or a
// write the operating system refused for lack of space or quota.
func sqliteFull(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrFull || se.SystemErrno == syscall.ENOSPC || se.SystemErrno == syscall.EDQUOT)
}
