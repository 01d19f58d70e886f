package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/run"
	"github.com/ac3/ac3/stages/curate"
)

func memoryCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "memory",
		Usage: "the optional AC3 memory (a cheatsheet given to the analysis)",
		Subcommands: []*cli.Command{memoryShowCommand(e), {
			Name:  "learn",
			Usage: "learn the cheatsheet on a split of the run, then freeze it (offline regime)",
			Description: `Goes through the first --conversations conversations of the run in ingest
order. For each it analyzes every turn from --from-turn on (step 2 given the
cheatsheet so far), asks the analyzer model for transferable takeaways from
those analyses, and merges them into one plain-text cheatsheet of at most 1,500
words. The final cheatsheet is frozen and stored in the run with its hash;
'ac3 curate --memory offline' gives it to step 2 of every analysis, and the
hash enters the operators' unit keys, so learning again re-curates them.

The order is fixed, every request depends only on the conversation and the
cheatsheet before it, and answers are cached in the run, so an interrupted
learn replays what it did at no cost. Evaluate on conversations outside the
split (they are the ones after it in ingest order). For the online regime,
where the cheatsheet is updated after each conversation as curation proceeds,
use 'ac3 curate --memory online' instead (no learn step).

Example:
   ac3 memory learn --db run.db --conversations 300`,
			Flags: append([]cli.Flag{
				dbFlag,
				&cli.IntFlag{Name: "conversations", Usage: "size of the learning split: the first N conversations (default: a third of the run)"},
				&cli.IntFlag{Name: "from-turn", Value: curate.DefaultFrom, Usage: "first user turn analyzed"},
				&cli.BoolFlag{Name: "again", Usage: "learn even if this run already has a cheatsheet for the same split"},
			}, llmFlags()...),
			Action: func(c *cli.Context) error {
				_, m, err := modelFlags(c, e)
				if err != nil {
					return err
				}
				res, err := run.LearnMemory(c.Context, c.String("db"), m, c.Int("conversations"), c.Int("from-turn"), c.Bool("again"), runOptions(e))
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
		Name:  "show",
		Usage: "show the run's cheatsheets: the offline one and the online versions",
		Description: `Prints the frozen cheatsheet of the offline regime ('ac3 memory learn'), if
any, and for each online chain ('ac3 curate --memory online') where it stands:
the last conversation learned from and the cheatsheet after it. With
--conversation, the online step of that conversation: the cheatsheet its step
2 was given (built from the conversations before it), the takeaways it gave,
and the cheatsheet after it. --text prints the cheatsheets themselves.

Examples:
   ac3 memory show --db run.db
   ac3 memory show --db run.db --conversation conv-42 --text`,
		Flags: []cli.Flag{
			dbFlag,
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
