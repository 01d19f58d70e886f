package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/progress"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate"
)

type curateArgs struct {
	strategies string
	fromTurn   int
	encoding   string
	workers    int
}

func curateCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "curate",
		Usage: "build the context a respondent would see before each turn, per strategy",
		Description: `For every kept conversation and every user turn t >= --from-turn, builds the
context a model would be given before answering turn t, under each strategy in
--strategies, and records its size in tokens:

   fc      full context: everything before the reply
   ao      assistant omission: assistant turns replaced by a placeholder, with a
           system note saying what the placeholders are
   lt      last turn: only the previous user–assistant exchange, then the turn
   de      delete everything: only the current user message
   concat  all user turns so far joined into one user message
   filler  assistant turns replaced by neutral text of the same token length
           (separates pollution from plain context length)

The system message, when there is one, is kept by every strategy. Each strategy
is a separate variant: changing one strategy's settings recomputes only its
units. Strategies that need a model (sum, gated-reset, rewrite, ...) come with
the model-backed stages.

Examples:
   ac3 curate --db run.db --strategies fc,ao,lt,de
   ac3 curate --db run.db --strategies filler --from-turn 3 --encoding cl100k_base`,
		Flags: []cli.Flag{
			dbFlag,
			&cli.StringFlag{Name: "strategies", Value: "fc,ao,lt,de", Usage: "comma-separated: " + strings.Join(curate.Names(), ", ")},
			&cli.IntFlag{Name: "from-turn", Value: curate.DefaultFrom, Usage: "first user turn to curate (turn 1 has no history)"},
			&cli.StringFlag{Name: "encoding", Value: tokens.DefaultEncoding, Usage: "tokenizer encoding for token counts (o200k_base, cl100k_base, ...)"},
			&cli.IntFlag{Name: "workers", Value: 2, Usage: "conversations curated in parallel"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print what would be done, do nothing"},
		},
		Action: func(c *cli.Context) error {
			a := curateArgs{strategies: c.String("strategies"), fromTurn: c.Int("from-turn"), encoding: c.String("encoding"), workers: c.Int("workers")}
			if c.Bool("dry-run") {
				l, err := openRun(c.Context, c, true)
				if err != nil {
					return err
				}
				defer l.Close()
				return dryRunCurate(c.Context, e.stdout, l, a)
			}
			l, err := openRun(c.Context, c, false)
			if err != nil {
				return err
			}
			defer l.Close()
			_, err = runCurate(c.Context, e, l, a)
			return err
		},
	}
}

func curateStage(a curateArgs) (*curate.Stage, error) {
	strategies, err := curate.Resolve(a.strategies, curate.Options{})
	if err != nil {
		return nil, err
	}
	enc := a.encoding
	if enc == "" {
		enc = tokens.DefaultEncoding
	}
	counter, err := tokens.New(enc)
	if err != nil {
		return nil, err
	}
	return curate.NewStage(strategies, counter, a.fromTurn), nil
}

// runCurate curates every pending conversation. It reports whether all work
// is done (false when a Ctrl-C stopped it).
func runCurate(ctx context.Context, e *env, l *ledger.Ledger, a curateArgs) (bool, error) {
	st, err := curateStage(a)
	if err != nil {
		return false, err
	}
	if err := l.SetPlan(ctx, st.Name(), toLedger(st.Variants())); err != nil {
		return false, err
	}
	pending, recorded, err := pipeline.Pending(ctx, l, st)
	if err != nil {
		return false, err
	}
	if pending == 0 {
		fmt.Fprintf(e.stdout, "curate: nothing to do, all %d tasks (conversation × strategy) are already recorded\n", recorded)
		return true, nil
	}
	m := progress.Start(e.stderr, "curate", "tasks", pending)
	sum, err := pipeline.Run(ctx, l, st, pipeline.Options{
		Workers: a.workers, Stop: e.stop,
		OnCommit: func(tasks, _, _ int, tok int64) { m.Add(int64(tasks), tok) },
	})
	m.Stop()
	fmt.Fprintf(e.stdout, "curate: %d tasks done, %d failed, %d units (%d recorded before)\n", sum.Done, sum.Failed, sum.Units, sum.Previous)
	if err != nil {
		return false, err
	}
	if sum.Stopped {
		fmt.Fprintln(e.stdout, "curate: stopped before the end; run the same command again to continue")
		return false, nil
	}
	return true, nil
}

func toLedger(vs []pipeline.Variant) []ledger.Variant {
	out := make([]ledger.Variant, len(vs))
	for i, v := range vs {
		out[i] = ledger.Variant(v)
	}
	return out
}

func dryRunCurate(ctx context.Context, w io.Writer, l *ledger.Ledger, a curateArgs) error {
	st, err := curateStage(a)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "2. curate strategies %s from turn %d\n", a.strategies, max(a.fromTurn, 1))
	if l == nil {
		fmt.Fprintln(w, "   (the run does not exist yet: every conversation ingested will be curated)")
		return nil
	}
	n, err := l.CountConversations(ctx)
	if err != nil {
		return err
	}
	for _, v := range st.Variants() {
		done, failed, err := l.TaskCounts(ctx, st.Name(), ledger.Variant(v))
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "   %-8s %d conversations pending, %d done, %d failed\n", v.Name, n-done-failed, done, failed)
	}
	return nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
