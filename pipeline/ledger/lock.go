package ledger

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// LockSuffix names the sidecar file beside a run file that its writer locks.
// The lock is the operating system's (flock on Unix, LockFileEx on Windows),
// taken on the open file, so it ends with the process however the process
// ends: a kill -9 never leaves a stale lock, and the sidecar's presence
// means nothing. The sidecar's text (PID and host of the last writer) only
// makes the refusal message useful.
const LockSuffix = ".lock"

// errWouldBlock is what tryLock returns when another open file holds the lock.
var errWouldBlock = errors.New("lock held elsewhere")

// writerLock is a held run-file lock.
type writerLock struct {
	f *os.File
}

// lockRun takes the writer lock of the run file at path without waiting. It
// fails with a *LockedError naming the holder when another process (or
// another Open in this process) holds it.
func lockRun(path string) (*writerLock, error) {
	lp := path + LockSuffix
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the run's lock file %s: %w", lp, err)
	}
	if err := tryLock(f); err != nil {
		defer f.Close()
		if errors.Is(err, errWouldBlock) {
			le := &LockedError{Path: path}
			le.PID, le.Host = readHolder(f)
			if pid := kernelHolder(f); pid > 0 && pid != le.PID {
				// The holder has taken the lock but not yet written its
				// text (or the text is a previous writer's): the kernel's
				// record is the truth, and locks are local to this host.
				le.PID, le.Host = pid, ""
				if h, err := os.Hostname(); err == nil {
					le.Host = h
				}
			}
			return nil, le
		}
		return nil, fmt.Errorf("locking the run's lock file %s: %w", lp, err)
	}
	host, _ := os.Hostname()
	// Best effort: the lock is held either way; the text only names us to
	// a process that is refused.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(fmt.Sprintf("%d %s\n", os.Getpid(), host)), 0)
	}
	return &writerLock{f: f}, nil
}

// release drops the lock. The sidecar stays: removing it would let a process
// that opened the old file before the removal lock it while a third locks a
// new one, and both would think they are the only writer.
func (w *writerLock) release() error {
	if w == nil || w.f == nil {
		return nil
	}
	_ = w.f.Truncate(0) // no stale holder in a later refusal message
	err := w.f.Close()  // closing the file drops the lock
	w.f = nil
	return err
}

// readHolder parses "PID HOST" from the sidecar; zero values when it is
// empty (the holder has not written it yet) or unreadable.
func readHolder(f *os.File) (int, string) {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1024))
	if err != nil {
		return 0, ""
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0, ""
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil || pid <= 0 {
		return 0, ""
	}
	host := ""
	if len(fields) > 1 {
		host = fields[1]
	}
	return pid, host
}
