//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || solaris || illumos || windows)

package ledger

import (
	"fmt"
	"os"
	"runtime"
)

// tryLock refuses: without a lock that ends with its process, two writers
// could share a run file and pay for the same work twice.
func tryLock(*os.File) error {
	return fmt.Errorf("run-file locks are not supported on %s", runtime.GOOS)
}
