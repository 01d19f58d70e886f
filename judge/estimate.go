package judge

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/respond"
)

// Sizes the estimate expects: a verdict, and the fixed text of the judge
// prompt around the history and the two candidates.
const (
	verdictTokens  = 300
	templateTokens = 450
	// systemTokens is the part of templateTokens before the history: the
	// system message, the same in every call.
	systemTokens = 330
)

// candidate is one answer as the estimate sees it.
type candidate struct {
	key    string
	tokens int
}

// ReadsPredictionsOf implements pipeline.PredictionReader: the judge
// reads the answers respond is predicted to give.
func (s *Stage) ReadsPredictionsOf() []string { return []string{respond.StageName} }

// Estimate implements pipeline.Estimator: for every pair, turn and sample
// where both sides have an answer, one call per order shown (two under
// order both), none when the two answers are the same text (a tie without
// a call). Answers already in the run are read as stored; the others come
// from respond's forecast, where two strategies with the same context give
// the same answer.
func (s *Stage) Estimate(ctx context.Context, t pipeline.Task, f *pipeline.Forecast) ([]pipeline.Call, error) {
	stored := map[string]map[int][]candidate{} // respond variant → turn → samples
	if s.units != nil {
		var err error
		stored, err = respond.ReadPlanned(ctx, s.units, respond.StageName, t.Conv.ID, "answers", s.opts.RespondVersions, func(u ledger.Unit) ([]candidate, error) {
			o, err := decodeAnswer(u)
			if err != nil {
				return nil, err
			}
			var cs []candidate
			for _, smp := range o.Samples {
				txt := strings.TrimSpace(smp.Text)
				if txt == "" {
					cs = append(cs, candidate{})
					continue
				}
				cs = append(cs, candidate{key: pipeline.KeyOf(txt), tokens: f.Count(s.candidate(smp))})
			}
			return cs, nil
		})
		if err != nil {
			return nil, err
		}
	}
	answers := func(variant string, turn int) []candidate {
		if cs, ok := stored[variant][turn]; ok {
			return cs
		}
		p, ok := f.Get(respond.StageName, variant, turn)
		if !ok {
			return nil
		}
		cs := make([]candidate, max(p.Samples, 1))
		for i := range cs {
			cs[i] = candidate{key: pipeline.KeyOf(p.Key, strconv.Itoa(i)), tokens: p.Tokens}
		}
		return cs
	}
	var calls []pipeline.Call
	for _, v := range t.Variants {
		p, ok := s.pairs[v.Name]
		if !ok {
			return nil, fmt.Errorf("estimating %s: no variant %q", t.Conv.ID, v.Name)
		}
		for _, tr := range t.Conv.Turns() {
			as, bs := answers(p.A, tr.Index), answers(p.B, tr.Index)
			if len(as) == 0 || len(bs) == 0 {
				continue
			}
			history := s.history(t.Conv, tr.Index)
			hk, ht := pipeline.MessagesKey(history), f.MessagesTokens(history)
			// The prompt's beginning, for the prompt-cache estimate: the
			// system message and the history, message by message, which
			// every call of this turn and the next turns' share.
			head := append([]pipeline.Segment{{Key: pipeline.KeyOf(StageName, s.tmpl.Version(), s.opts.Context), Tokens: systemTokens}}, f.MessagesPrefix(history)...)
			for i := range min(len(as), len(bs)) {
				a, b := as[i], bs[i]
				if a.key == "" || b.key == "" || a.key == b.key {
					continue // nothing to judge, or a tie without a call
				}
				firsts := []string{"A", "B"}
				if s.opts.Order == OrderRandom {
					firsts = []string{FirstShown(s.opts.Seed, t.Conv.ID, tr.Index, v.Name, i)}
				}
				for _, first := range firsts {
					one, two := a.key, b.key
					if first == "B" {
						one, two = two, one
					}
					firstTokens := a.tokens
					if first == "B" {
						firstTokens = b.tokens
					}
					calls = append(calls, pipeline.Call{Role: s.opts.Role, Key: pipeline.KeyOf(StageName, s.opts.Context, hk, one, two),
						PromptTokens: ht + a.tokens + b.tokens + templateTokens, CompletionTokens: verdictTokens,
						Prefix: append(slices.Clip(head), pipeline.Segment{Key: one, Tokens: firstTokens})})
				}
			}
		}
	}
	return calls, nil
}
