package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/run"
)

func retryCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "retry",
		Usage:       "re-queue failed work so the next run does it again",
		Description: run.RetryHelp(),
		Flags:       []cli.Flag{dbFlag(), &cli.StringFlag{Name: "stage", Usage: "only this stage (default: all)"}},
		Action: func(c *cli.Context) error {
			l, err := openRun(c, false)
			if err != nil {
				return err
			}
			defer l.Close()
			n, err := run.Requeue(c.Context, l, c.String("stage"))
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "re-queued %d failed tasks\n", n)
			return nil
		},
	}
}
