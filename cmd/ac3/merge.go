package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/run"
)

func mergeCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "merge",
		Usage:       "build one run file from the run files of a sharded run",
		ArgsUsage:   "SHARD.db...",
		Description: run.MergeHelp(),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Required: true, Usage: "the merged run file"},
			&cli.BoolFlag{Name: "force", Usage: "replace --out if it exists"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return fmt.Errorf("no shard files: pass the run files of every shard")
			}
			rep, err := ledger.Merge(c.Context, c.String("out"), c.Args().Slice(), ledger.MergeOptions{Force: c.Bool("force")})
			if err != nil {
				return err
			}
			run.WriteMerged(e.stdout, c.String("out"), rep)
			return nil
		},
	}
}
