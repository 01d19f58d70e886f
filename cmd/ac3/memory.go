package main

import (
	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/memory"
)

func memoryCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "memory",
		Usage: "the optional AC3 memory (a cheatsheet given to the analysis)",
		Subcommands: []*cli.Command{memoryShowCommand(e), {
			Name:        "learn",
			Usage:       "learn the cheatsheet on a split of the run, then freeze it (offline regime)",
			Description: memory.LearnHelp(),
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
				ac, err := ac3Of(c, cfg, map[string]string{"outcome-pair": "memory.outcome_pair"}, map[string]any{})
				if err != nil {
					return err
				}
				res, err := run.LearnMemory(c.Context, c.String("db"), m, c.Int("conversations"), c.Int("from-turn"), c.Bool("again"), ac, runOptions(e))
				if err != nil {
					return err
				}
				res.WriteText(e.stdout)
				if res.Stopped != nil {
					return run.Stopped(nil) // nothing stored; the answers so far are cached
				}
				return nil
			},
		}},
	}
}

func memoryShowCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "show",
		Usage:       "show the run's cheatsheets: the offline one and the online versions",
		Description: memory.ShowHelp(),
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
			return memory.Show(c.Context, e.stdout, l, c.String("conversation"), c.Bool("text"))
		},
	}
}
