package arrowipc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// atomicFile is a temporary file beside its final path that is renamed into
// place only once complete, so a crash or an aborted run never leaves a
// truncated file that looks finished (the IPC footer is written last, and a
// half-written file would fail only when someone tries to read it). It is a
// copy of parquetio's: a few lines are not worth exporting file plumbing.
type atomicFile struct {
	*os.File
	path string
}

func createAtomic(path string) (*atomicFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("creating temporary file for %s: %w", path, err)
	}
	return &atomicFile{File: f, path: path}, nil
}

// commit syncs the temporary file and renames it to its final path.
func (a *atomicFile) commit() error {
	err := a.Sync()
	if err == nil {
		// CreateTemp makes files private; outputs are ordinary files.
		err = a.Chmod(0o644)
	}
	if cerr := a.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(a.Name(), a.path)
	}
	if err != nil {
		_ = os.Remove(a.Name())
		return fmt.Errorf("finishing %s: %w", a.path, err)
	}
	return nil
}

// discard closes and removes the temporary file.
func (a *atomicFile) discard() error {
	err := a.File.Close()
	if rerr := os.Remove(a.Name()); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return fmt.Errorf("removing temporary file for %s: %w", a.path, err)
	}
	return nil
}
