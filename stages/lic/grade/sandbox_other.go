//go:build !linux

package grade

import (
	"context"
	"os/exec"
	"time"
)

// probeIsolation: without Linux namespaces the network can only be
// blocked inside Python.
func probeIsolation(_ context.Context, python string) isolation {
	return isolation{python: python}
}

func (iso isolation) configure(cmd *exec.Cmd) {
	cmd.WaitDelay = 5 * time.Second
}

func (iso isolation) prepareDir(string) error { return nil }
