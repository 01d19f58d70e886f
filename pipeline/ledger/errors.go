package ledger

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/ac3/ac3/pipeline/ledger/pagesum"
)

// Sentinels for the failures a command must treat differently from an
// ordinary error: each has a typed error carrying the run file's path, and
// errors.Is matches the typed error against its sentinel.
var (
	// ErrDamaged: the run file's contents cannot be trusted (SQLite reports
	// corruption, or a stored blob no longer decodes). Nothing will fix it by
	// running the command again; `ac3 doctor` says what can be recovered.
	ErrDamaged = errors.New("run file is damaged")
	// ErrDiskFull: a write failed for lack of space. The transaction was
	// rolled back, so the run resumes once space is freed.
	ErrDiskFull = errors.New("disk full")
	// ErrLocked: another process is writing the run file.
	ErrLocked = errors.New("run file is in use by another writer")
)

// DamagedError says that the run file at Path is damaged and what was being
// done when it was found out.
type DamagedError struct {
	Path string
	Err  error

	fromNote bool // read from the damage note, not found just now
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("run file %s is damaged: %v", e.Path, e.Err)
}

func (e *DamagedError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrDamaged) true.
func (e *DamagedError) Is(target error) bool { return target == ErrDamaged }

// DiskFullError says that a write to the run file at Path failed because its
// file system is full. Nothing of the failed write was kept.
type DiskFullError struct {
	Path string
	Err  error
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("run file %s: disk full: %v; nothing of the failed commit was kept: free some space and run the same command again to continue", e.Path, e.Err)
}

func (e *DiskFullError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrDiskFull) true.
func (e *DiskFullError) Is(target error) bool { return target == ErrDiskFull }

// LockedError says that another process holds the run file's writer lock.
// PID and Host are what that process wrote beside its lock; they are zero
// when it had not written them yet.
type LockedError struct {
	Path string
	PID  int
	Host string
}

func (e *LockedError) Error() string {
	who := "another process"
	switch {
	case e.PID > 0 && e.Host != "":
		who = fmt.Sprintf("process %d on host %s", e.PID, e.Host)
	case e.PID > 0:
		who = fmt.Sprintf("process %d", e.PID)
	}
	return fmt.Sprintf("run file %s is being written by %s; one run file has one writer at a time: wait for it to finish or stop it (status, inspect, export and report can read the run meanwhile)", e.Path, who)
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// callerError carries an error returned by a caller's callback through a
// ledger method untouched: it says nothing about the run file (a full disk
// while writing an export is not the run file's disk being full).
type callerError struct{ err error }

func (e callerError) Error() string { return e.err.Error() }
func (e callerError) Unwrap() error { return e.err }

// classify turns SQLite's corruption and disk-full errors anywhere in err's
// chain into DamagedError and DiskFullError for the run file at path, and
// unwraps errors a caller's callback returned. Every exported method passes
// its error through here, so callers can rely on errors.Is(err, ErrDamaged)
// whichever query met the damage.
func classify(path string, err error) error {
	if err == nil {
		return nil
	}
	if ce, ok := err.(callerError); ok {
		return ce.err
	}
	var de *DamagedError
	var fe *DiskFullError
	var le *LockedError
	if errors.As(err, &de) || errors.As(err, &fe) || errors.As(err, &le) {
		return err
	}
	switch {
	case isChecksumFault(err), isIOErr(err) && pagesum.Faulted(path):
		return &DamagedError{Path: path, Err: checksumFault{err}}
	case isDamage(err):
		return &DamagedError{Path: path, Err: err}
	case isDiskFull(err):
		return &DiskFullError{Path: path, Err: err}
	}
	return err
}

// checksumFault is a page that failed its checksum, said in our words:
// SQLite's own text for it ("disk I/O error", with whatever errno was last
// set) would send the user looking at the disk.
type checksumFault struct{ err error }

func (e checksumFault) Error() string {
	return "a page of it no longer matches its checksum: its bytes changed after ac3 wrote them"
}

func (e checksumFault) Unwrap() error { return e.err }

func isDamage(err error) bool {
	if sqliteDamage(err) {
		return true
	}
	// Some paths lose the typed error (a driver error formatted with %v);
	// SQLite's own words still say what happened.
	msg := err.Error()
	return strings.Contains(msg, "database disk image is malformed") || strings.Contains(msg, "file is not a database")
}

func isDiskFull(err error) bool {
	if sqliteFull(err) {
		return true
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	return strings.Contains(err.Error(), "database or disk is full")
}

// damaged marks err as damage to the run file: for stored data that no
// longer decodes, which SQLite cannot know about.
func (l *Ledger) damaged(format string, args ...any) error {
	return &DamagedError{Path: l.path, Err: fmt.Errorf(format, args...)}
}

// classify is deferred by every exported method: *err becomes classified,
// and damage is noted beside the run file for later commands.
func (l *Ledger) classify(err *error) {
	*err = classify(l.path, *err)
	noteDamage(l.path, *err)
}
