package main

import (
	"context"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/ledger"
)

// judgeCommands are the generation, judging and report commands.
func judgeCommands(e *env) []*cli.Command { return nil }

// runRespondJudgeFromConfig runs respond and judge as a config lists them.
// It reports false when the run was stopped before the end.
func runRespondJudgeFromConfig(ctx context.Context, e *env, l *ledger.Ledger, cfg *config) (bool, error) {
	return true, nil
}

// runReportFromConfig writes the report when the config has a report section.
func runReportFromConfig(ctx context.Context, e *env, l *ledger.Ledger, cfg *config) error {
	return nil
}
