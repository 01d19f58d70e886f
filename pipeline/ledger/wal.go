package ledger

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// ErrWALRemoved: the run's write-ahead log was removed (or replaced) while
// this process was writing the run.
var ErrWALRemoved = errors.New("the run's write-ahead log was removed while the run was being written")

// WALRemovedError says that RUN.db-wal disappeared from under a writer. The
// writer still holds the removed file open, so the commits in it are not
// lost yet; they would be at a crash, and any other process opening the run
// meanwhile would read it without them. The ledger saves them into the run
// file at once (Saved) and refuses every later write, so the command stops
// and the next one starts from a whole file.
type WALRemovedError struct {
	Path  string
	Saved bool  // the commits so far were copied into the run file
	Err   error // why they could not be, when not Saved
}

func (e *WALRemovedError) Error() string {
	if e.Saved {
		return fmt.Sprintf("%s-wal was removed while this command was writing run %s: the work recorded so far was copied into the run file and the command stopped; run it again to continue (and keep RUN.db-wal beside a run file that is in use: it holds its latest commits)", e.Path, e.Path)
	}
	return fmt.Sprintf("%s-wal was removed while this command was writing run %s, and the work recorded since the last checkpoint could not be copied into the run file (%v); run 'ac3 doctor --db %s' before going on", e.Path, e.Path, e.Err, e.Path)
}

func (e *WALRemovedError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrWALRemoved) true.
func (e *WALRemovedError) Is(target error) bool { return target == ErrWALRemoved }

// walWatch remembers which file the run's log was when the writer first saw
// it. SQLite never removes the log while a connection is open, so another
// file there, or none, means someone else removed it.
type walWatch struct {
	mu   sync.Mutex
	seen os.FileInfo
	err  error // sticky once the removal is found
}

// checkWAL is called by a writer before and after each commit of recorded
// work: it costs one stat. It returns a *WALRemovedError, the same one from
// then on, once the log is gone.
func (l *Ledger) checkWAL(ctx context.Context) error {
	if l.lock == nil {
		return nil // a reader writes nothing
	}
	w := &l.wal
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	fi, err := os.Stat(l.path + "-wal")
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil // cannot tell; the commit's own errors speak for the file
	case err == nil && w.seen == nil:
		w.seen = fi
		return nil
	case err == nil && os.SameFile(fi, w.seen):
		return nil
	case err != nil && w.seen == nil:
		return nil // not made yet: SQLite makes it on the first write
	}
	// The writer's connection still has the removed log open: a full
	// checkpoint copies its commits into the run file.
	_, cerr := l.w.ExecContext(context.WithoutCancel(ctx), "PRAGMA wal_checkpoint(FULL)")
	w.err = &WALRemovedError{Path: l.path, Saved: cerr == nil, Err: cerr}
	return w.err
}
