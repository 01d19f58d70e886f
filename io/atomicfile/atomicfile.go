// Package atomicfile writes output files so that their final path only ever
// holds a complete file. Every writer of finished outputs (exports, convert,
// the Parquet, Arrow and JSONL writers) goes through it: a crash, a Ctrl-C or
// an error half way leaves at most a hidden temporary file, never a truncated
// file that looks finished, and the next write of the same path removes what
// a killed writer left (see Create). Columnar formats need this most, since their
// footer is written last and a cut file fails only when someone reads it.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// File is a temporary file in the directory of its final path. Write to it,
// then Commit to move it into place or Abort to remove it. A File is not
// safe for concurrent use.
type File struct {
	*os.File
	path string
	done bool
}

// tempSuffix ends the temporary files whose writer holds a lock on them
// for as long as it lives (see Create). Older ac3 versions named theirs
// ".NAME.tmp-DIGITS", without a lock.
const tempSuffix = ".part"

// Create starts the file that will become path. The temporary file sits in
// the same directory (so the final rename never crosses file systems) under
// a unique hidden name, ".NAME.tmp-N.part", so two writers of one path never
// share it.
//
// A writer killed before Commit or Abort (kill -9, a crash) leaves its
// temporary file behind; Create removes those of path. It tells them from
// the files of writers still at work by a lock: each writer holds an
// exclusive flock on its temporary file until it is committed or removed,
// and the kernel drops the lock when the process ends, however it ends. A
// temporary file whose lock can be taken has no writer. A lock, unlike a
// PID in the name, is never fooled by a PID that was reused, by a writer in
// another PID namespace (a container sharing the folder), or by two writers
// in one process. Creating a temporary file and locking it, and closing and
// renaming it in Commit, happen under a lock on the directory, which the
// clean-up holds too, so it never sees a live writer's file unlocked.
// Where locks are not available (Windows, or a file system without them)
// nothing is removed.
//
// A missing directory is created, as the report's --out folder is: an
// export into a folder that does not exist yet is what a user means.
func Create(path string) (*File, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the folder of %s: %w", path, err)
	}
	unlock := lockDir(dir)
	defer unlock()
	removeOrphans(dir, base)
	f, err := os.CreateTemp(dir, "."+base+".tmp-*"+tempSuffix)
	if err != nil {
		return nil, fmt.Errorf("creating temporary file for %s: %w", path, err)
	}
	// Without the lock a later Create would take this file for an orphan
	// only where it can lock files, which is where this lock succeeds.
	holdLock(f)
	return &File{File: f, path: path}, nil
}

// Path is the final path.
func (f *File) Path() string { return f.path }

// Commit makes the file durable and moves it into place: it syncs the data,
// closes the file, renames it over path and syncs the directory so the
// rename itself survives a power cut. On error the temporary file is
// removed and path is left as it was.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("finishing %s: already finished", f.path)
	}
	f.done = true
	err := f.Sync()
	if err == nil {
		// CreateTemp makes files private; outputs are ordinary files.
		err = f.Chmod(0o644)
	}
	// Closing drops the file's lock; the directory's keeps another
	// Create from removing it before the rename.
	unlock := lockDir(filepath.Dir(f.path))
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), f.path)
	}
	unlock()
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("finishing %s: %w", f.path, err)
	}
	if err := syncDir(filepath.Dir(f.path)); err != nil {
		return fmt.Errorf("finishing %s: syncing its directory: %w", f.path, err)
	}
	return nil
}

// Abort closes and removes the temporary file; path is left as it was.
// Calling it after Commit or Abort does nothing, so it can be deferred.
func (f *File) Abort() error {
	if f.done {
		return nil
	}
	f.done = true
	err := f.File.Close()
	if errors.Is(err, os.ErrClosed) {
		err = nil
	}
	if rerr := os.Remove(f.Name()); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return fmt.Errorf("removing temporary file for %s: %w", f.path, err)
	}
	return nil
}

// syncDir flushes a directory's entries. File systems that cannot sync a
// directory (EINVAL) have nothing more to flush.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		err = nil
	}
	return errors.Join(err, d.Close())
}
