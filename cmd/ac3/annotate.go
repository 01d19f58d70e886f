package main

import (
	"context"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/ledger"
)

// annotateCommands are the annotation stages' commands (classify, refs,
// pollution, constraints).
func annotateCommands(e *env) []*cli.Command { return nil }

// runAnnotateFromConfig runs the annotation stages a config lists, in order.
// It reports false when the run was stopped before the end.
func runAnnotateFromConfig(ctx context.Context, e *env, l *ledger.Ledger, cfg *config) (bool, error) {
	return true, nil
}
