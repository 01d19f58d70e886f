//go:build !cgo

package ledger

import "errors"

// Without cgo the SQLite driver is a stub that fails every open, so there
// are no SQLite errors to sort; the message checks in isDamage and
// isDiskFull still apply.

func sqliteDamage(error) bool { return false }

func sqliteFull(error) bool { return false }

func isChecksumFault(error) bool { return false }

func setReserve(any) error { return errors.New("SQLite needs cgo") }

func isIOErr(error) bool { return false }
