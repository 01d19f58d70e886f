package grade

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// probeIsolation finds the strongest set-up that works here, trying in
// turn: a private network namespace and, when the grader is root, the
// unprivileged user; then each alone; then neither. A non-root grader
// gets its network namespace through a new user namespace, which needs
// unprivileged user namespaces to be enabled. Each try starts the real
// interpreter in a directory prepared like a real run.
func probeIsolation(ctx context.Context, python string) isolation {
	root := os.Geteuid() == 0
	tries := []isolation{
		{netns: true, userns: !root, dropUser: root},
		{netns: true, userns: !root},
		{dropUser: root},
		{},
	}
	for _, iso := range tries {
		if !root && iso.dropUser {
			continue
		}
		iso.python = python
		if probeRun(ctx, iso) == nil {
			return iso
		}
	}
	return isolation{python: python}
}

func probeRun(ctx context.Context, iso isolation) error {
	dir, err := os.MkdirTemp("", "ac3-grade-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := iso.prepareDir(dir); err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(pctx, iso.python, "-s", "-B", "-c", "import json, resource, signal")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	iso.configure(cmd)
	return cmd.Run()
}

// configure sets up the process: its own process group (so a time-out
// kills every process it started), its own network namespace when
// available, and an unprivileged user when the grader is root.
func (iso isolation) configure(cmd *exec.Cmd) {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if iso.netns {
		attr.Cloneflags = syscall.CLONE_NEWNET
		if iso.userns {
			uid, gid := os.Getuid(), os.Getgid()
			attr.Cloneflags |= syscall.CLONE_NEWUSER
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		}
	}
	if iso.dropUser {
		attr.Credential = &syscall.Credential{Uid: nobodyID, Gid: nobodyID}
	}
	cmd.SysProcAttr = attr
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 5 * time.Second
}

// prepareDir gives the directory to the unprivileged user when the run
// drops to it.
func (iso isolation) prepareDir(dir string) error {
	if !iso.dropUser {
		return nil
	}
	if err := os.Chown(dir, nobodyID, nobodyID); err != nil {
		return fmt.Errorf("handing the code sandbox directory to uid %d: %w", nobodyID, err)
	}
	return nil
}
