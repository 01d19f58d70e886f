package measure

import (
	"context"
	"fmt"
	"slices"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/compint"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
)

// Answer lengths the estimate expects: a letter for a probe, a short
// tagged YES or NO for the judge (reasoning models write more; their
// max_tokens caps it).
const (
	probeTokens     = 8
	retentionTokens = 24
	// mcqTokens is what the question and its two options add to a context.
	mcqTokens = 80
	// judgeInstructionTokens is the retention judge's system message and
	// the line before the context: the same in every call.
	judgeInstructionTokens = 330
)

// beforeLast is the prompt-cache prefix of a context that ends with the
// probe turn: every message but the last, which the probe's question (or,
// for the retention judge, the cut probe) changes. Nil when not known.
func beforeLast(p []pipeline.Segment) []pipeline.Segment {
	if len(p) == 0 {
		return nil
	}
	return slices.Clip(p[:len(p)-1])
}

// ReadsPredictionsOf implements pipeline.PredictionReader: the probe is
// asked on the curated context.
func (s *Stage) ReadsPredictionsOf() []string { return []string{curate.StageName} }

// Estimate implements pipeline.Estimator: per instance, one probe per
// order from the full context; per strategy on an instance with the SC,
// the retention judge and one probe per order from the compacted context
// and from the upper bound. Contexts already curated are read as stored,
// the others come from the curate stage's forecast. A compacted context
// equal to the full one (fc) is the same request, counted once.
func (s *Stage) Estimate(ctx context.Context, t pipeline.Task, f *pipeline.Forecast) ([]pipeline.Call, error) {
	meta, ok, err := compint.ReadMeta(t.Conv)
	if err != nil || !ok {
		return nil, err
	}
	orders, err := compint.Orders(s.opts.Orders, s.opts.Seed, meta.BaseID, meta.SCID)
	if err != nil {
		return nil, err
	}
	// The prompt-cache estimate: a probe's request is the context with the
	// question in its last message, so the probes of one context (its
	// orders, the compacted and the upper-bound group) share every message
	// before it; the retention judge's requests share its instructions and
	// the beginning of the contexts they show.
	probe := func(ctxKey string, tokens int, g string, prefix []pipeline.Segment) []pipeline.Call {
		var out []pipeline.Call
		for _, o := range orders {
			out = append(out, pipeline.Call{Role: s.opts.ProbeRole, Key: pipeline.KeyOf(StageName, s.opts.ProbeSettings, g, string(o), ctxKey),
				PromptTokens: tokens + mcqTokens, CompletionTokens: probeTokens, Prefix: beforeLast(prefix)})
		}
		return out
	}
	judgeHead := pipeline.Segment{Key: pipeline.KeyOf(StageName, "retention", s.opts.Prompts.RetentionTemplate().Version()), Tokens: judgeInstructionTokens}
	stored := map[string]pipeline.Predicted{}
	if meta.Kind == compint.WithSC && s.units != nil {
		us, err := s.units.ConversationUnits(ctx, curate.StageName, t.Conv.ID, meta.ProbeTurn)
		if err != nil {
			return nil, fmt.Errorf("reading curated contexts of %s: %w", t.Conv.ID, err)
		}
		for _, u := range us {
			if u.Status != ledger.Done || s.curate[u.Variant] != u.Version {
				continue
			}
			x, err := curated.DecodeContext(u.Output)
			if err != nil {
				return nil, fmt.Errorf("decoding curated context %s: %w", u.Key, err)
			}
			msgs := x.Materialize(t.Conv)
			stored[u.Variant] = pipeline.Predicted{Key: pipeline.MessagesKey(msgs), Tokens: x.Tokens, Prefix: f.MessagesPrefix(msgs)}
		}
	}
	var calls []pipeline.Call
	for _, v := range t.Variants {
		if v.Name == LongVariant {
			full, ok := t.Conv.ContextBefore(meta.ProbeTurn)
			if !ok {
				continue
			}
			calls = append(calls, probe(pipeline.MessagesKey(full), f.MessagesTokens(full), "plain", f.MessagesPrefix(full))...)
			continue
		}
		if meta.Kind != compint.WithSC {
			continue
		}
		cx, ok := stored[v.Name]
		if !ok {
			if cx, ok = f.Get(curate.StageName, v.Name, meta.ProbeTurn); !ok {
				continue
			}
		}
		judge := pipeline.Call{Role: s.opts.JudgeRole, Key: pipeline.KeyOf(StageName, s.opts.JudgeSettings, "retention", cx.Key),
			PromptTokens: cx.Tokens + mcqTokens, CompletionTokens: retentionTokens}
		if cx.Prefix != nil {
			judge.Prefix = append([]pipeline.Segment{judgeHead}, beforeLast(cx.Prefix)...)
		}
		calls = append(calls, judge)
		calls = append(calls, probe(cx.Key, cx.Tokens, "plain", cx.Prefix)...)
		calls = append(calls, probe(cx.Key, cx.Tokens, "ub", cx.Prefix)...)
	}
	return calls, nil
}
