package main

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/run"
)

func statusCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "status",
		Usage:       "tell where a run stands",
		ArgsUsage:   "[RUN.db]",
		Description: run.StatusHelp(),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "db", Usage: "the run file", EnvVars: []string{"AC3_DB"}},
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
		},
		Action: func(c *cli.Context) error {
			l, err := openReader(c, e)
			if err != nil {
				return err
			}
			defer l.Close()
			ctx, cancel := run.UntilStop(c.Context, e.stop)
			defer cancel()
			st, err := run.StatusOf(ctx, l)
			if err != nil {
				return run.StoppedOr(ctx, c.Context, err)
			}
			if c.Bool("json") {
				return run.WriteJSON(e.stdout, st)
			}
			run.WriteStatus(e.stdout, st.Status, st.TurnTypes, time.Now())
			return nil
		},
	}
}
