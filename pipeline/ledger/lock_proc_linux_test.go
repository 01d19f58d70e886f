package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHolderIn(t *testing.T) {
	const locks = `1: POSIX  ADVISORY  READ 16860 fe:00:9987000 128 128
2: FLOCK  ADVISORY  WRITE 4242 fe:00:9986982 0 EOF
2: -> FLOCK  ADVISORY  WRITE 5555 fe:00:9986982 0 EOF
3: FLOCK  ADVISORY  WRITE 777 08:01:9986982 0 EOF
`
	dev := func(major, minor uint64) uint64 { return (major&0xfff)<<8 | minor&0xff }
	tests := []struct {
		name string
		dev  uint64
		ino  uint64
		want int
	}{
		{"the holder, not the waiter", dev(0xfe, 0), 9986982, 4242},
		{"same inode on another device", dev(8, 1), 9986982, 777},
		{"a POSIX lock is not an flock", dev(0xfe, 0), 9987000, 0},
		{"no lock", dev(0xfe, 0), 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := holderIn(strings.NewReader(locks), tc.dev, tc.ino); got != tc.want {
				t.Errorf("holderIn = %d, want %d", got, tc.want)
			}
		})
	}
}

// A holder that has locked but not yet written its PID into the sidecar is
// still named: the kernel's record of the lock says who holds it.
func TestRefusalNamesAHolderThatHasNotWrittenItsPID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.db")
	f, err := os.OpenFile(path+LockSuffix, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := tryLock(f); err != nil {
		t.Fatal(err)
	}
	_, err = lockRun(path)
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("lockRun = %v, want a *LockedError", err)
	}
	host, _ := os.Hostname()
	if le.PID != os.Getpid() || le.Host != host {
		t.Errorf("holder = %d on %q, want %d on %q", le.PID, le.Host, os.Getpid(), host)
	}
}
