package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/curate"
)

func memoryCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "memory",
		Usage: "the optional AC3 memory (a cheatsheet given to the analysis)",
		Subcommands: []*cli.Command{memoryShowCommand(e), {
			Name:        "learn",
			Usage:       "learn the cheatsheet on a split of the run, then freeze it (offline regime)",
			Description: curate.MemoryLearnHelp(),
			Flags: append([]cli.Flag{
				dbFlag(),
				&cli.IntFlag{Name: "conversations", Usage: "size of the learning split: the first N conversations (default: a third of the run)"},
				&cli.IntFlag{Name: "from-turn", Value: curate.DefaultFrom, Usage: "first user turn analyzed"},
				&cli.BoolFlag{Name: "again", Usage: "learn even if this run already has a cheatsheet for the same split"},
				&cli.StringFlag{Name: "outcome-pair", Usage: "judge pair whose quality verdicts are shown to the reflections as outcomes (default: stages.curate.memory.outcome_pair, else the first judged pair with an AC3 operator)"},
			}, llmFlags()...),
			Action: func(c *cli.Context) error {
				cfg, m, err := modelFlags(c, e)
				if err != nil {
					return err
				}
				ac, err := cfg.AC3()
				if err != nil {
					return err
				}
				if c.IsSet("outcome-pair") {
					ac.OutcomePair = c.String("outcome-pair")
				}
				res, err := run.LearnMemory(c.Context, c.String("db"), m, c.Int("conversations"), c.Int("from-turn"), c.Bool("again"), ac, runOptions(e))
				if err != nil {
					return err
				}
				return printLearning(e, res)
			},
		}},
	}
}

func printLearning(e *env, res run.Learning) error {
	rec := res.Memory
	switch {
	case res.Skipped != "":
		fmt.Fprintf(e.stdout, "memory learn: skipped: %s\n", res.Skipped)
	case res.Reused:
		fmt.Fprintf(e.stdout, "memory learn: this run already has cheatsheet %s learned on its first %d conversations (--again to learn it anew)\n", rec.Hash, rec.Conversations)
	case res.Stopped != nil:
		fmt.Fprintf(e.stdout, "memory learn: stopped at conversation %d: %v; nothing stored; run again with a higher --budget-usd (answers so far are cached)\n", res.Learned+1, res.Stopped)
		return &exitStatus{code: exitStopped}
	default:
		fmt.Fprintf(e.stdout, "memory learn: cheatsheet %s (%d words) learned on %d conversations (up to seq %d) with %d calls ($%.4f); use it with 'ac3 curate --memory offline'\n",
			rec.Hash, len(strings.Fields(rec.Cheatsheet)), res.Learned, rec.LastSeq, res.Calls, rec.CostUSD)
	}
	return nil
}

func memoryShowCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "show",
		Usage:       "show the run's cheatsheets: the offline one and the online versions",
		Description: curate.MemoryShowHelp(),
		Flags: []cli.Flag{
			dbFlag(),
			&cli.StringFlag{Name: "conversation", Usage: "show the online step of this conversation"},
			&cli.BoolFlag{Name: "text", Usage: "print the cheatsheets' text"},
		},
		Action: func(c *cli.Context) error {
			l, err := openRun(c, true)
			if err != nil {
				return err
			}
			defer l.Close()
			return curate.WriteMemory(c.Context, e.stdout, l, c.String("conversation"), c.Bool("text"))
		},
	}
}
