package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ac3/ac3/pipeline/ledger"
)

// The exit statuses of every command, as the manual states them. They are
// the library's contract with scripts, so they live beside Execute rather
// than in the command line.
const (
	ExitError   = 1 // the command could not do its work
	ExitFailed  = 2 // it finished, but units of its stages are recorded as failed (by any pass)
	ExitStopped = 3 // it stopped before the end; run it again to continue
	ExitLocked  = 4 // another process is writing the run file; nothing was done
	ExitDamaged = 5 // the run file is damaged; 'ac3 doctor' says what can be saved
	ExitFull    = 6 // the disk is full; nothing of the failed commit was kept
)

// Exit ends a command with a status; Err, when set, is printed.
type Exit struct {
	Code int
	Err  error
}

func (e *Exit) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

func (e *Exit) Unwrap() error { return e.Err }

// Stopped is the status of a command that stopped before the end; err, when
// set, says why.
func Stopped(err error) *Exit { return &Exit{Code: ExitStopped, Err: err} }

// ExitCode maps a command's error to the process's exit status.
func ExitCode(err error) int {
	var es *Exit
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ledger.ErrLocked):
		return ExitLocked
	case errors.Is(err, ledger.ErrDamaged):
		return ExitDamaged
	case errors.Is(err, ledger.ErrDiskFull):
		return ExitFull
	case errors.Is(err, ledger.ErrWALRemoved):
		return ExitStopped // its commits were saved: the same command goes on
	case errors.As(err, &es):
		return es.Code
	case IsStop(err):
		return ExitStopped
	}
	return ExitError
}

// Printed reports whether a command's error has a line to print: an Exit
// without an error is a status only (its output already said why).
func Printed(err error) bool {
	var es *Exit
	return err != nil && (!errors.As(err, &es) || es.Err != nil)
}

// ErrorLine is the one line printed for a command's error. A refused
// writer, a damaged run file and a full disk are said by the run file's own
// error, whatever the command was doing when it met them: the wrapping adds
// nothing the user can act on.
func ErrorLine(err error) string {
	var (
		le *ledger.LockedError
		de *ledger.DamagedError
		fe *ledger.DiskFullError
	)
	msg := err.Error()
	switch {
	case errors.As(err, &le):
		msg = le.Error()
	case errors.As(err, &de):
		msg = de.Error()
		if !strings.Contains(msg, "ac3 doctor") {
			msg += fmt.Sprintf("; try 'ac3 doctor --db %s'", de.Path)
		}
	case errors.As(err, &fe):
		msg = fe.Error()
	default:
		return msg
	}
	return strings.Join(strings.Fields(msg), " ")
}

// Finish turns what Execute returned into the command's error and exit
// status: stopped (3) when it was cut short, failed (2) when units of the
// run's stages are recorded as failed by any pass and not accepted, which it
// says on w in the closing line.
func Finish(res Result, err error, w io.Writer, db string, acceptFailed bool) error {
	switch {
	case errors.Is(err, context.Canceled):
		return Stopped(nil) // the second Ctrl-C; the command line said so
	case IsStop(err):
		return Stopped(fmt.Errorf("stopped: %w; fix the cause and run the same command again to continue", err))
	case err != nil:
		return err
	case res.Stopped:
		return Stopped(nil)
	case res.WriteFailed(w, db, acceptFailed):
		return &Exit{Code: ExitFailed}
	}
	return nil
}

// StoppedOr turns the error of a command cut short by UntilStop's Ctrl-C
// into the stopped status (parent is the command's own context, which only
// the second Ctrl-C ends); any other error is returned as it is.
func StoppedOr(ctx, parent context.Context, err error) error {
	if ctx.Err() != nil && parent.Err() == nil {
		return Stopped(errors.New("stopped at Ctrl-C before the end; nothing was changed"))
	}
	return err
}
