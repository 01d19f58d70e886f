package export

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/respond"
)

// PreferenceOptions choose which judge verdicts become training rows.
type PreferenceOptions struct {
	// Dimension is the judged dimension to export: judge.Quality (default),
	// judge.OnTopic, or "all" (one row per decisive dimension; a pair that
	// wins on both gives the same row twice, and the second is left out as
	// a duplicate).
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
	// Pairs (preferences only) is PairsAll ("" too) or PairsSamePrompt.
	Pairs string
}

// Which verdicts a preference export turns into rows (--pairs).
const (
	// PairsAll exports every decisive verdict. Its two answers were
	// generated from the contexts of two strategies, usually different;
	// the prompt is one of them (the chosen answer's, or PromptStrategy's),
	// and same_prompt says whether both answers came from it.
	PairsAll = "all"
	// PairsSamePrompt exports only verdicts whose two answers were
	// generated from the same context, which is the prompt: what DPO
	// assumes, both answers conditioned on the prompt shown.
	PairsSamePrompt = "same-prompt"
)

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
// and rejected (one assistant message each), then provenance. same_prompt
// is true when both answers were generated from the prompt shown (see
// PairsSamePrompt).
func PreferencesSchema() *arrow.Schema {
	md := arrow.NewMetadata([]string{"ac3.schema"}, []string{"preferences/v2"})
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
		{Name: "same_prompt", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "order", Type: arrow.BinaryTypes.String},
		{Name: "both_orders_agree", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "judge_model", Type: arrow.BinaryTypes.String},
		{Name: "justification", Type: arrow.BinaryTypes.String},
		{Name: "confidence", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, &md)
}

// WinnersSchema is the layout of a winners export: SFT rows whose messages
// are the prompt followed by the winning answer (OpenAI chat shape). beat
// lists the strategies the answer won against.
func WinnersSchema() *arrow.Schema {
	md := arrow.NewMetadata([]string{"ac3.schema"}, []string{"winners/v2"})
	return arrow.NewSchema([]arrow.Field{
		{Name: "messages", Type: parquetio.MessagesType()},
		{Name: "conversation_id", Type: arrow.BinaryTypes.String},
		{Name: "turn", Type: arrow.PrimitiveTypes.Int64},
		{Name: "sample", Type: arrow.PrimitiveTypes.Int64},
		{Name: "strategy", Type: arrow.BinaryTypes.String},
		{Name: "prompt_strategy", Type: arrow.BinaryTypes.String},
		{Name: "dimension", Type: arrow.BinaryTypes.String},
		{Name: "beat", Type: parquetio.StringListType()},
	}, &md)
}

// preference is one exportable decisive verdict with its texts.
type preference struct {
	ob               judge.Observation
	winner, loser    string // respond variants
	chosen, rejected string // answers
	prompt           []conv.Message
	promptStrategy   string
	samePrompt       bool // both answers were generated from prompt
	agree            any  // bool, or nil for single-order judging
}

// Preferences writes one row per decisive judge verdict (see
// PreferenceOptions) to path, in ingest order, then turn, then pair,
// leaving out rows equal to one written before.
func Preferences(ctx context.Context, l *ledger.Ledger, f Format, path string, opts PreferenceOptions) (int64, error) {
	st, err := preferences(ctx, l, f, path, opts)
	return st.Rows, err
}

func preferences(ctx context.Context, l *ledger.Ledger, f Format, path string, opts PreferenceOptions) (Stats, error) {
	return writeOnce(ctx, f, path, PreferencesSchema(), func(rw *rowWriter, seen *ledger.DigestSet, st *Stats, skipped *skips) error {
		return eachPreference(ctx, l, opts, skipped, func(p preference) error {
			chosen := []conv.Message{{Role: conv.Assistant, Content: p.chosen}}
			rejected := []conv.Message{{Role: conv.Assistant, Content: p.rejected}}
			d := newRowDigest()
			d.messages(p.prompt)
			d.messages(chosen)
			d.messages(rejected)
			if fresh, err := seen.Add(ctx, d.sum()); err != nil || !fresh {
				if err == nil {
					skipped.add(SkippedDuplicate)
				}
				return err
			}
			st.Rows++
			var conf any
			if p.ob.Confidence != nil {
				conf = *p.ob.Confidence
			}
			return rw.Write([]any{
				p.prompt, chosen, rejected,
				p.ob.ConvID, int64(p.ob.Turn), int64(p.ob.Sample), p.ob.Variant, p.ob.Dimension,
				p.winner, p.loser, p.promptStrategy, p.samePrompt, p.ob.Order, p.agree, p.ob.Model, p.ob.Justification, conf,
			})
		})
	})
}

// Winners writes the winning answers of decisive verdicts as SFT rows, each
// answer once however many pairs it won, and each row once however many
// turns, samples or dimensions gave it.
func Winners(ctx context.Context, l *ledger.Ledger, f Format, path string, opts PreferenceOptions) (int64, error) {
	st, err := winners(ctx, l, f, path, opts)
	return st.Rows, err
}

func winners(ctx context.Context, l *ledger.Ledger, f Format, path string, opts PreferenceOptions) (Stats, error) {
	type key struct {
		conv           string
		turn, sample   int
		variant, dimen string
	}
	return writeOnce(ctx, f, path, WinnersSchema(), func(rw *rowWriter, seen *ledger.DigestSet, st *Stats, skipped *skips) error {
		// Rows of one turn are gathered first so an answer that won twice is
		// written once, listing both strategies it beat.
		var pending []preference
		beat := map[key][]string{}
		flush := func() error {
			for _, p := range pending {
				k := key{p.ob.ConvID, p.ob.Turn, p.ob.Sample, p.winner, p.ob.Dimension}
				bs, ok := beat[k]
				if !ok {
					continue // written already
				}
				delete(beat, k)
				msgs := append(append([]conv.Message(nil), p.prompt...), conv.Message{Role: conv.Assistant, Content: p.chosen})
				d := newRowDigest()
				d.messages(msgs)
				fresh, err := seen.Add(ctx, d.sum())
				if err != nil {
					return err
				}
				if !fresh {
					skipped.add(SkippedDuplicate)
					continue
				}
				st.Rows++
				if err := rw.Write([]any{msgs, p.ob.ConvID, int64(p.ob.Turn), int64(p.ob.Sample), p.winner, p.promptStrategy, p.ob.Dimension, bs}); err != nil {
					return err
				}
			}
			pending = pending[:0]
			return nil
		}
		var cur string
		var curTurn int
		err := eachPreference(ctx, l, opts, skipped, func(p preference) error {
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
		return err
	})
}

// writeOnce writes an export whose rows are each written once: it opens
// the writer on path and a digest set for fill to check rows against, and
// closes the writer after fill, or removes the file when anything failed.
// Preferences and winners differ only in their rows.
func writeOnce(ctx context.Context, f Format, path string, sc *arrow.Schema, fill func(rw *rowWriter, seen *ledger.DigestSet, st *Stats, skipped *skips) error) (st Stats, err error) {
	rw, err := newRowWriter(f, path, sc)
	if err != nil {
		return st, err
	}
	seen, err := ledger.NewDigestSet(ctx)
	if err != nil {
		rw.Abort()
		return st, err
	}
	defer func() { err = errors.Join(err, seen.Close()) }()
	var skipped skips
	err = fill(rw, seen, &st, &skipped)
	st.Skipped = skipped
	if err != nil {
		rw.Abort()
		return st, err
	}
	return st, rw.Close()
}

// turnData holds what the verdicts of one conversation turn share: the
// answers, and the curated contexts they were generated from, each read
// once.
type turnData struct {
	seq      int64
	turn     int
	answers  map[string]respond.Output // nil until read
	curated  []ledger.Unit             // the turn's curate units, once read
	read     bool
	contexts map[string][]conv.Message // materialized, by strategy; nil: none
}

// context is the curated context of strategy at the turn, or nil when the
// run has none (of the version the curate stage's plan names).
func (t *turnData) context(ctx context.Context, l *ledger.Ledger, c *conv.Conversation, strategy string, ver map[string]string) ([]conv.Message, error) {
	if m, ok := t.contexts[strategy]; ok {
		return m, nil
	}
	if !t.read {
		us, err := l.ConversationUnits(ctx, curate.StageName, c.ID, t.turn)
		if err != nil {
			return nil, err
		}
		t.curated, t.read = us, true
	}
	var msgs []conv.Message
	for _, u := range t.curated {
		if u.Variant != strategy || u.Version != ver[strategy] || u.Status != ledger.Done {
			continue
		}
		x, err := curated.DecodeContext(u.Output)
		if err != nil {
			return nil, fmt.Errorf("decoding unit %s: %w", u.Key, err)
		}
		if msgs, err = x.MaterializeChecked(c); err != nil {
			return nil, l.Inconsistent(fmt.Errorf("curated unit %s: %w", u.Key, err))
		}
		break
	}
	if t.contexts == nil {
		t.contexts = map[string][]conv.Message{}
	}
	t.contexts[strategy] = msgs
	return msgs, nil
}

// eachPreference calls fn for every exportable verdict of the judge stage's
// current plan, and counts in skipped the verdicts on the dimension asked
// for that it leaves out.
func eachPreference(ctx context.Context, l *ledger.Ledger, opts PreferenceOptions, skipped *skips, fn func(preference) error) error {
	plans, err := l.Plans(ctx)
	if err != nil {
		return err
	}
	variants := plans[judge.StageName]
	if len(variants) == 0 {
		return fmt.Errorf("no judge verdicts in %s yet: run 'ac3 judge' first", l.Path())
	}
	respondVer, curateVer := versions(plans[respond.StageName]), versions(plans[curate.StageName])
	samePrompt := opts.Pairs == PairsSamePrompt
	var read int64 // done verdicts read, checked against the run's count
	var td turnData
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
			if td.seq != u.ConvSeq || td.turn != u.Turn {
				td = turnData{seq: u.ConvSeq, turn: u.Turn}
			}
			for _, ob := range obs {
				if !opts.wants(ob.Dimension) {
					continue
				}
				if ob.Identical {
					skipped.add(SkippedIdentical)
					continue
				}
				outcome := ob.Outcome
				agree := any(nil)
				if ob.Order == judge.OrderBoth {
					agree = ob.Consistent
					if !ob.Consistent {
						if !opts.IncludeInconsistent {
							skipped.add(SkippedInconsistent)
							continue
						}
						if outcome = decisiveOf(ob.AFirst, ob.BFirst); outcome == stats.Tie {
							skipped.add(SkippedInconsistent) // a flip, or ties both ways
							continue
						}
					}
				}
				if outcome != stats.AWins && outcome != stats.BWins {
					skipped.add(SkippedTie)
					continue
				}
				if td.answers == nil {
					if td.answers, err = respondOutputs(ctx, l, c.ID, u.Turn, respondVer); err != nil {
						return err
					}
				}
				p := preference{ob: ob, winner: ob.A, loser: ob.B, agree: agree}
				if outcome == stats.BWins {
					p.winner, p.loser = ob.B, ob.A
				}
				wo, lo := td.answers[p.winner], td.answers[p.loser]
				ws, ok1 := wo.Sample(ob.Sample)
				ls, ok2 := lo.Sample(ob.Sample)
				if !ok1 || !ok2 {
					skipped.add(SkippedRegenerated)
					continue
				}
				p.chosen, p.rejected = ws.Text, ls.Text
				wctx, err := td.context(ctx, l, c, wo.Strategy, curateVer)
				if err != nil {
					return err
				}
				lctx, err := td.context(ctx, l, c, lo.Strategy, curateVer)
				if err != nil {
					return err
				}
				p.promptStrategy = opts.PromptStrategy
				if p.promptStrategy == "" {
					p.promptStrategy = wo.Strategy
				}
				if p.prompt, err = td.context(ctx, l, c, p.promptStrategy, curateVer); err != nil {
					return err
				}
				if p.prompt == nil {
					skipped.add(SkippedNoPrompt)
					continue
				}
				p.samePrompt = wctx != nil && slices.Equal(wctx, lctx) && slices.Equal(wctx, p.prompt)
				if samePrompt && !p.samePrompt {
					skipped.add(SkippedDifferentPrompts)
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
