//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly || solaris || illumos

package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// legacyAge is how long an older ac3's temporary file (which carries no
// lock) must have gone unwritten before Create takes it for an orphan: a
// live writer writes its file as it goes, never a day apart.
const legacyAge = 24 * time.Hour

// lockDir takes an exclusive flock on dir and returns what releases it. It
// is held only while a temporary file is created, renamed or cleaned up. On
// a file system without locks it returns a no-op, and Create then removes
// nothing (see removeOrphans).
func lockDir(dir string) (unlock func()) {
	d, err := os.Open(dir)
	if err != nil {
		return func() {}
	}
	if flock(d, unix.LOCK_EX) != nil {
		d.Close()
		return func() {}
	}
	return func() { d.Close() } // closing drops the lock
}

// holdLock takes f's lock for as long as f is open; where locks are not
// available f stays unlocked, and no clean-up on that file system can
// take its lock either.
func holdLock(f *os.File) { _ = flock(f, unix.LOCK_EX|unix.LOCK_NB) }

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// removeOrphans removes the temporary files of base in dir that no writer
// holds: those whose lock it can take, and those of older ac3 versions
// unwritten for legacyAge. It is a clean-up: what it cannot read, lock or
// remove is left as it is, and never fails the write.
func removeOrphans(dir, base string) {
	prefix := "." + base + ".tmp-"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, name)
		rest := strings.TrimPrefix(name, prefix)
		switch {
		case strings.HasSuffix(rest, tempSuffix) && digits(strings.TrimSuffix(rest, tempSuffix)):
			removeUnlocked(p)
		case digits(rest):
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > legacyAge {
				_ = os.Remove(p)
			}
		}
	}
}

// removeUnlocked removes the file at p if its lock can be taken, holding
// the lock while it does.
func removeUnlocked(p string) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if flock(f, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return // a writer holds it, or locks are not available here
	}
	_ = os.Remove(p)
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
