package agreement

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/sourcegraph/conc/pool"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/stages/compint"
)

// StageName is what the judge's calls are accounted under.
const StageName = "judge-agreement"

// Options says which judge to measure and how.
type Options struct {
	Client *llm.Client
	// Role is the client role that judges retention.
	Role string
	// Prompts may replace the retention prompt, as the CompInt config
	// does; the zero value is ours.
	Prompts compint.Prompts
	// Retries is how many times a malformed verdict is asked again.
	Retries int
	// Set gives rows with an SC id but no type their type (nil: the
	// shipped 15).
	Set *compint.Set
	// Key fills rows with what a blind test holds aside (nil: none).
	Key Key
	// Window is how many rows are judged at once (default 64); rows are
	// read and folded a window at a time, in file order.
	Window int
	// Problem is told of every label line left out.
	Problem func(Problem)
	// Row, when set, is told of every judged row and its verdict, in file
	// order (the per-row output).
	Row func(Row, Verdict)
}

// Run judges every usable row of rows with o's judge and folds the
// verdicts. A row whose verdict stays malformed after the retries counts
// as without a verdict; an error the run cannot continue past (a key, a
// model, an unreachable endpoint, ctx) ends it with that error.
func Run(ctx context.Context, rows iter.Seq2[Row, *Problem], o Options) (*Tally, error) {
	if o.Client == nil {
		return nil, fmt.Errorf("measuring judge agreement: no model client")
	}
	if o.Set == nil {
		o.Set = compint.Default()
	}
	window := cmp.Or(o.Window, 64)
	t := &Tally{}
	batch := make([]Row, 0, window)
	flush := func() error {
		verdicts := make([]Verdict, len(batch))
		p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError()
		for i, r := range batch {
			p.Go(func(ctx context.Context) error {
				v, err := o.judge(ctx, r)
				if err != nil {
					return err
				}
				verdicts[i] = v
				return nil
			})
		}
		if err := p.Wait(); err != nil {
			return err
		}
		for i, r := range batch {
			t.Add(r, verdicts[i])
			if o.Row != nil {
				o.Row(r, verdicts[i])
			}
		}
		batch = batch[:0]
		return nil
	}
	for r, prob := range rows {
		if prob != nil {
			t.Problems++
			if o.Problem != nil {
				o.Problem(*prob)
			}
			continue
		}
		if o.Key != nil {
			r = o.Key.Fill(r)
		}
		if r.Type == "" && r.SCID > 0 {
			if sc, ok := o.Set.Get(r.SCID); ok {
				r.Type = sc.Type
			}
		}
		r.Type = strings.ToLower(r.Type)
		batch = append(batch, r)
		if len(batch) == window {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return t, nil
}

// judge asks for one row's verdict. Only an error that stops the run is
// returned; a verdict that never parsed is the Verdict's Err.
func (o Options) judge(ctx context.Context, r Row) (Verdict, error) {
	msgs, tg, err := o.Prompts.RetentionMessages(compint.SC{ID: r.SCID, Type: r.Type, Text: r.Constraint}, r.Context)
	if err != nil {
		return Verdict{}, fmt.Errorf("row %s: %w", r.ID, err)
	}
	req := llm.Request{Role: o.Role, Stage: StageName, Messages: msgs}
	v, _, err := llm.CallParsed(ctx, o.Client, req, o.Retries, compint.RetentionParser(tg))
	if err != nil {
		if _, unit := llm.UnitFailure(err); unit {
			return Verdict{Err: err}, nil
		}
		return Verdict{}, fmt.Errorf("judging row %s: %w", r.ID, err)
	}
	return Verdict{Retained: v}, nil
}
