//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || solaris || illumos)

package atomicfile

import "os"

// Without flock there is no way to tell a killed writer's temporary file
// from a live one's, so nothing is removed: a left-over hidden file costs
// disk space, removing a live writer's would lose its output.

func lockDir(string) (unlock func()) { return func() {} }

func holdLock(*os.File) {}

func removeOrphans(string, string) {}
