package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// workersUsage is --workers, the CPU knob. Model calls have their own: the
// endpoints' limits (see the run command's help).
const workersUsage = "CPU: %s at once by rules and heuristics (one per core keeps the cores busy); model calls are paced by the endpoints' limits instead"

func workersFlag(def int, what string) *cli.IntFlag {
	return &cli.IntFlag{Name: "workers", Value: def, Usage: fmt.Sprintf(workersUsage, what)}
}

// workersOf is --workers, checked.
func workersOf(c *cli.Context) (int, error) {
	w := c.Int("workers")
	if w < 0 {
		return 0, fmt.Errorf("--workers %d: want a positive number, or 0 for one per core", w)
	}
	return w, nil
}
