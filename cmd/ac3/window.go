package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/run/config"
)

// The two knobs of how much runs at once. They limit different things, and
// each command's --help says so.
const (
	workersUsage = "CPU: %s at once by rules and heuristics (one per core keeps the cores busy); never limits model calls"
	windowUsage  = "model calls: tasks a model stage keeps open, their requests in flight or queued at the endpoint's limits " +
		"(concurrency, rpm, tpm), which decide what is sent; 0 = twice each endpoint's concurrency"
)

func workersFlag(def int, what string) *cli.IntFlag {
	return &cli.IntFlag{Name: "workers", Value: def, Usage: fmt.Sprintf(workersUsage, what)}
}

// modelWorkersFlag is --workers on a command whose stage only calls a
// model: accepted for old scripts, hidden, and without effect.
func modelWorkersFlag() *cli.IntFlag {
	return &cli.IntFlag{Name: "workers", Hidden: true, Usage: "ignored: this stage's pace is --window and the endpoint's limits"}
}

func windowFlag() *cli.IntFlag {
	return &cli.IntFlag{Name: "window", Usage: windowUsage}
}

// windowOf is --window, else run.window of the config (cfg may be nil).
func windowOf(c *cli.Context, cfg *config.File) (int, error) {
	w := c.Int("window")
	if w < 0 {
		return 0, fmt.Errorf("--window %d: want a positive number of open tasks, or 0 to derive it from the endpoints' limits", w)
	}
	if !c.IsSet("window") && cfg != nil {
		w = cfg.Run.Window
	}
	return w, nil
}

// workersOf is --workers, checked.
func workersOf(c *cli.Context) (int, error) {
	w := c.Int("workers")
	if w < 0 {
		return 0, fmt.Errorf("--workers %d: want a positive number, or 0 for one per core", w)
	}
	return w, nil
}
