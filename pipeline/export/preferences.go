package export

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/respond"
)

// PreferenceOptions choose which judge verdicts become training rows.
type PreferenceOptions struct {
	// Dimension is the judged dimension to export: judge.Quality (default),
	// judge.OnTopic, or "all" (one row per decisive dimension; a pair that
	// wins on both then appears twice).
	Dimension string
	// IncludeInconsistent also exports both-order comparisons where one
	// order was decisive and the other a tie (the decisive order's winner
	// is used). Flips, where each order picked a different winner, are never
	// exported. Ties and identical answers never are either.
	IncludeInconsistent bool
	// PromptStrategy is the curate strategy whose context becomes the
	// prompt; "" uses the context the chosen (for winners: the winning)
	// answer was generated from.
	PromptStrategy string
}

func (o PreferenceOptions) wants(d string) bool {
	switch o.Dimension {
	case "", judge.Quality:
		return d == judge.Quality
	case "all":
		return true
	}
	return d == o.Dimension
}

// PreferencesSchema is the layout of a preference export, in the
// conversational shape TRL's DPOTrainer reads: prompt (messages), chosen
// and rejected (one assistant message each), then provenance.
func PreferencesSchema() *arrow.Schema {
	md := arrow.NewMetadata([]string{"ac3.schema"}, []string{"preferences/v1"})
	return arrow.NewSchema([]arrow.Field{
		{Name: "prompt", Type: parquetio.MessagesType()},
		{Name: "chosen", Type: parquetio.MessagesType()},
		{Name: "rejected", Type: parquetio.MessagesType()},
		{Name: "conversation_id", Type: arrow.BinaryTypes.String},
		{Name: "turn", Type: arrow.PrimitiveTypes.Int64},
		{Name: "sample", Type: arrow.PrimitiveTypes.Int64},
		{Name: "pair", Type: arrow.BinaryTypes.String},
		{Name: "dimension", Type: arrow.BinaryTypes.String},
		{Name: "chosen_strategy", Type: arrow.BinaryTypes.String},
		{Name: "rejected_strategy", Type: arrow.BinaryTypes.String},
		{Name: "prompt_strategy", Type: arrow.BinaryTypes.String},
		{Name: "order", Type: arrow.BinaryTypes.String},
		{Name: "both_orders_agree", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "judge_model", Type: arrow.BinaryTypes.String},
		{Name: "justification", Type: arrow.BinaryTypes.String},
		{Name: "confidence", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, &md)
}

// WinnersSchema is the layout of a winners export: SFT rows whose messages
// are the prompt followed by the winning answer (OpenAI chat shape).
func WinnersSchema() *arrow.Schema {
	md := arrow.NewMetadata([]string{"ac3.schema"}, []string{"winners/v1"})
	return arrow.NewSchema([]arrow.Field{
		{Name: "messages", Type: parquetio.MessagesType()},
		{Name: "conversation_id", Type: arrow.BinaryTypes.String},
		{Name: "turn", Type: arrow.PrimitiveTypes.Int64},
		{Name: "sample", Type: arrow.PrimitiveTypes.Int64},
		{Name: "strategy", Type: arrow.BinaryTypes.String},
		{Name: "prompt_strategy", Type: arrow.BinaryTypes.String},
		{Name: "dimension", Type: arrow.BinaryTypes.String},
		{Name: "beat", Type: arrow.BinaryTypes.String}, // the strategies it won against, comma-separated
	}, &md)
}

// preference is one exportable decisive verdict with its texts.
type preference struct {
	ob               judge.Observation
	winner, loser    string // respond variants
	chosen, rejected string // answers
	prompt           []conv.Message
	promptStrategy   string
	agree            any // bool, or nil for single-order judging
}

// Preferences writes one row per decisive judge verdict (see
// PreferenceOptions) to path, in ingest order, then turn, then pair.
func Preferences(ctx context.Context, l *ledger.Ledger, f Format, path string, opts PreferenceOptions) (int64, error) {
	rw, err := newRowWriter(f, path, PreferencesSchema())
	if err != nil {
		return 0, err
	}
	var n int64
	err = eachPreference(ctx, l, opts, func(p preference) error {
		n++
		var conf any
		if p.ob.Confidence != nil {
			conf = *p.ob.Confidence
		}
		return rw.Write([]any{
			p.prompt,
			[]conv.Message{{Role: conv.Assistant, Content: p.chosen}},
			[]conv.Message{{Role: conv.Assistant, Content: p.rejected}},
			p.ob.ConvID, int64(p.ob.Turn), int64(p.ob.Sample), p.ob.Variant, p.ob.Dimension,
			p.winner, p.loser, p.promptStrategy, p.ob.Order, p.agree, p.ob.Model, p.ob.Justification, conf,
		})
	})
	if err != nil {
		rw.Abort()
		return n, err
	}
	return n, rw.Close()
}

// Winners writes the winning answers of decisive verdicts as SFT rows, each
// answer once however many pairs it won.
func Winners(ctx context.Context, l *ledger.Ledger, f Format, path string, opts PreferenceOptions) (int64, error) {
	type key struct {
		conv           string
		turn, sample   int
		variant, dimen string
	}
	// Rows of one turn are gathered first so an answer that won twice is
	// written once, listing both strategies it beat.
	var pending []preference
	beat := map[key][]string{}
	rw, err := newRowWriter(f, path, WinnersSchema())
	if err != nil {
		return 0, err
	}
	var n int64
	flush := func() error {
		for _, p := range pending {
			k := key{p.ob.ConvID, p.ob.Turn, p.ob.Sample, p.winner, p.ob.Dimension}
			bs, ok := beat[k]
			if !ok {
				continue // written already
			}
			delete(beat, k)
			msgs := append(append([]conv.Message(nil), p.prompt...), conv.Message{Role: conv.Assistant, Content: p.chosen})
			n++
			if err := rw.Write([]any{msgs, p.ob.ConvID, int64(p.ob.Turn), int64(p.ob.Sample), p.winner, p.promptStrategy, p.ob.Dimension, strings.Join(bs, ",")}); err != nil {
				return err
			}
		}
		pending = pending[:0]
		return nil
	}
	var cur string
	var curTurn int
	err = eachPreference(ctx, l, opts, func(p preference) error {
		if p.ob.ConvID != cur || p.ob.Turn != curTurn {
			if err := flush(); err != nil {
				return err
			}
			cur, curTurn = p.ob.ConvID, p.ob.Turn
		}
		k := key{p.ob.ConvID, p.ob.Turn, p.ob.Sample, p.winner, p.ob.Dimension}
		beat[k] = append(beat[k], p.loser)
		pending = append(pending, p)
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		rw.Abort()
		return n, err
	}
	return n, rw.Close()
}

// eachPreference calls fn for every exportable verdict of the judge stage's
// current plan.
func eachPreference(ctx context.Context, l *ledger.Ledger, opts PreferenceOptions, fn func(preference) error) error {
	plans, err := l.Plans(ctx)
	if err != nil {
		return err
	}
	variants := plans[judge.StageName]
	if len(variants) == 0 {
		return fmt.Errorf("no judge verdicts in %s yet: run 'ac3 judge' first", l.Path())
	}
	respondVer, curateVer := versions(plans[respond.StageName]), versions(plans[curate.StageName])
	var read int64 // done verdicts read, checked against the run's count
	err = l.EachPage(ctx, pageSize, func(page []ledger.Stored, after, upto int64) error {
		bySeq := bySeq(page)
		return l.Units(ctx, judge.StageName, variants, after, upto, func(u ledger.Unit) error {
			if u.Status == ledger.Done {
				read++
			}
			obs, err := judge.Observations(u)
			if err != nil || len(obs) == 0 {
				return err
			}
			c := bySeq[u.ConvSeq]
			if c == nil {
				return l.Inconsistent(fmt.Errorf("judge unit %s belongs to conversation %d, which the run does not hold", u.Key, u.ConvSeq))
			}
			var answers map[string]respond.Output
			for _, ob := range obs {
				if !opts.wants(ob.Dimension) || ob.Identical {
					continue
				}
				outcome := ob.Outcome
				agree := any(nil)
				if ob.Order == judge.OrderBoth {
					agree = ob.Consistent
					if !ob.Consistent {
						if !opts.IncludeInconsistent {
							continue
						}
						outcome = decisiveOf(ob.AFirst, ob.BFirst)
					}
				}
				if outcome != stats.AWins && outcome != stats.BWins {
					continue
				}
				if answers == nil {
					if answers, err = respondOutputs(ctx, l, c.ID, u.Turn, respondVer); err != nil {
						return err
					}
				}
				p := preference{ob: ob, winner: ob.A, loser: ob.B, agree: agree}
				if outcome == stats.BWins {
					p.winner, p.loser = ob.B, ob.A
				}
				wo, lo := answers[p.winner], answers[p.loser]
				ws, ok1 := wo.Sample(ob.Sample)
				ls, ok2 := lo.Sample(ob.Sample)
				if !ok1 || !ok2 {
					continue // the answers were regenerated since the verdict
				}
				p.chosen, p.rejected = ws.Text, ls.Text
				p.promptStrategy = opts.PromptStrategy
				if p.promptStrategy == "" {
					p.promptStrategy = wo.Strategy
				}
				if p.prompt, err = curatedMessages(ctx, l, c, u.Turn, p.promptStrategy, curateVer); err != nil {
					return err
				}
				if p.prompt == nil {
					continue
				}
				if err := fn(p); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	return l.CheckUnitsRead(ctx, judge.StageName, variants, read)
}

// decisiveOf is the winner when exactly one of two single-order outcomes
// is decisive and the other a tie; otherwise a tie.
func decisiveOf(a, b stats.Outcome) stats.Outcome {
	switch {
	case a == stats.Tie && (b == stats.AWins || b == stats.BWins):
		return b
	case b == stats.Tie && (a == stats.AWins || a == stats.BWins):
		return a
	}
	return stats.Tie
}

func versions(vs []ledger.Variant) map[string]string {
	out := make(map[string]string, len(vs))
	for _, v := range vs {
		out[v.Name] = v.Version
	}
	return out
}

func respondOutputs(ctx context.Context, l *ledger.Ledger, convID string, turn int, ver map[string]string) (map[string]respond.Output, error) {
	us, err := l.ConversationUnits(ctx, respond.StageName, convID, turn)
	if err != nil {
		return nil, err
	}
	out := map[string]respond.Output{}
	for _, u := range us {
		if u.Status != ledger.Done || ver[u.Variant] != u.Version {
			continue
		}
		o, err := respond.Decode(u.Output)
		if err != nil {
			return nil, fmt.Errorf("decoding unit %s: %w", u.Key, err)
		}
		out[u.Variant] = o
	}
	return out, nil
}

// curatedMessages materializes the curated context of strategy at turn, or
// returns nil when the run has none.
func curatedMessages(ctx context.Context, l *ledger.Ledger, c *conv.Conversation, turn int, strategy string, ver map[string]string) ([]conv.Message, error) {
	us, err := l.ConversationUnits(ctx, curate.StageName, c.ID, turn)
	if err != nil {
		return nil, err
	}
	for _, u := range us {
		if u.Variant != strategy || u.Version != ver[strategy] || u.Status != ledger.Done {
			continue
		}
		x, err := curate.DecodeContext(u.Output)
		if err != nil {
			return nil, fmt.Errorf("decoding unit %s: %w", u.Key, err)
		}
		msgs, err := x.MaterializeChecked(c)
		if err != nil {
			return nil, l.Inconsistent(fmt.Errorf("curated unit %s: %w", u.Key, err))
		}
		return msgs, nil
	}
	return nil, nil
}
