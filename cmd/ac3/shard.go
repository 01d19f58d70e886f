package main

import (
	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/shard"
	"github.com/ac3/ac3/run"
)

// shardFlags make a command run as one shard of a sharded run (see the
// README's "Sharded runs").
func shardFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "shard", Usage: "run as shard I/N (I from 0): only the conversations whose id hashes to I, in the run file with .shard-I-of-N before its extension (also AC3_SHARD=I/N)"},
		&cli.IntFlag{Name: "shards", Usage: "run as one of N shards, the index from JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or SLURM_ARRAY_TASK_ID less SLURM_ARRAY_TASK_MIN (Slurm array); 0: not sharded"},
	}
}

// withShard makes plan the shard the flags and environment name, if any:
// its run file is the shard's. A plan already sharded is left as it is.
func withShard(c *cli.Context, e *env, plan run.Plan) (run.Plan, error) {
	if plan.Shard.Enabled() {
		return plan, nil
	}
	s, err := shard.Resolve(c.String("shard"), c.Int("shards"), e.getenv)
	if err != nil {
		return plan, err
	}
	plan.Shard, plan.DB = s, s.Path(plan.DB)
	return plan, nil
}
