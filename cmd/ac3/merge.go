package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/ledger"
)

func mergeCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "merge",
		Usage:     "build one run file from the run files of a sharded run",
		ArgsUsage: "SHARD.db...",
		Description: `Merges the run files of every shard of a sharded run (--shard I/N or
--shards N) into one run file, as if one process had done all the work. It
refuses, writing nothing, shards made with different settings, prompt or
stage versions, shard counts or hash schemes, a missing or repeated shard, a
damaged file, or an existing --out (unless --force). The merged file is
written beside --out and renamed into place once complete.

Then run the same config on the merged file (run.db set to it, or
AC3_DB): it finds every stage done, makes no model calls, and writes the
report and the exports.

Example:
   ac3 merge --out runs/demo.db runs/demo.shard-*-of-4.db
   ac3 run --config demo.yaml`,
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
			fmt.Fprintf(e.stdout, "merged %d shards into %s: %d conversations, %d units, %d model calls\n", rep.Shards, c.String("out"), rep.Conversations, rep.Units, rep.Calls)
			if rep.CrossDuplicates > 0 {
				fmt.Fprintf(e.stdout, "dropped %d conversations as duplicates of earlier ones in other shards (dedupe); their model calls stay in the spend\n", rep.CrossDuplicates)
			}
			fmt.Fprintln(e.stdout, "next: run the same config (or report/export) on the merged file for the report and exports")
			return nil
		},
	}
}
