package run

import (
	"context"
	"fmt"
	"math"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/classify"
)

// TurnTypes is one classify variant's turn-type shares, for status, with
// the measured quality of the heuristic labeller when the shares are its
// own.
type TurnTypes struct {
	Variant string           `json:"variant"`
	Version string           `json:"version"`
	Turns   int              `json:"turns"`
	Failed  int              `json:"failed"`
	Shares  []TurnTypeShare  `json:"shares"`
	Quality *LabellerQuality `json:"labeller_quality,omitempty"`
}

// TurnTypeShare is one type's count and share of the labelled turns.
type TurnTypeShare struct {
	Type  string  `json:"type"`
	Count int     `json:"count"`
	Share float64 `json:"share"`
}

// LabellerQuality is the heuristic's measured quality (classify.Quality):
// Applies is false when the run's heuristic is another version than the
// one measured. Undefined ratios are omitted.
type LabellerQuality struct {
	Annotator string   `json:"annotator"`
	Applies   bool     `json:"applies"`
	Set       string   `json:"set"`
	N         int      `json:"n"`
	Coverage  *float64 `json:"coverage,omitempty"`
	Accuracy  *float64 `json:"accuracy,omitempty"`
	MacroF1   *float64 `json:"macro_f1,omitempty"`
	// MajorityRateLabelled is the accuracy of always answering the set's
	// most common type on the turns the heuristic labelled.
	MajorityRateLabelled *float64 `json:"majority_rate_labelled,omitempty"`
	Line                 string   `json:"line"` // the figures in one sentence
}

// Status is where a run stands, as 'ac3 status' shows it (WriteStatus) or
// gives it as JSON: the run file's own status and the turn-type shares of
// each classify variant.
type Status struct {
	ledger.Status
	TurnTypes []TurnTypes `json:"turn_types,omitempty"`
}

// StatusOf reads where the run in l stands.
func StatusOf(ctx context.Context, l *ledger.Ledger) (Status, error) {
	st, err := l.Status(ctx)
	if err != nil {
		return Status{}, err
	}
	tts, err := RunTurnTypes(ctx, l)
	return Status{Status: st, TurnTypes: tts}, err
}

// RunTurnTypes folds the classify units of every classify variant of the
// run into turn-type shares, one variant at a time through the ledger's
// unit stream (memory does not grow with the run). A run without a
// classify stage gives none.
func RunTurnTypes(ctx context.Context, l *ledger.Ledger) ([]TurnTypes, error) {
	plans, err := l.Plans(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the run's plans: %w", err)
	}
	var out []TurnTypes
	for _, v := range plans[classify.StageName] {
		z := classify.NewSummarizer()
		err := l.Units(ctx, classify.StageName, []ledger.Variant{v}, 0, math.MaxInt64, func(u ledger.Unit) error {
			z.Add(u)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading classify units of %s: %w", v.Name, err)
		}
		s := z.Summary()
		tt := TurnTypes{Variant: v.Name, Version: v.Version, Turns: s.Turns, Failed: s.Failed, Shares: []TurnTypeShare{}}
		for _, ts := range s.Types {
			tt.Shares = append(tt.Shares, TurnTypeShare{Type: ts.Type, Count: ts.Count, Share: ts.Share})
		}
		if v.Name == "heuristic" {
			tt.Quality = labellerQuality(classify.HeuristicQuality(), v.Version)
		}
		out = append(out, tt)
	}
	return out, nil
}

func labellerQuality(q classify.Quality, version string) *LabellerQuality {
	num := func(f float64) *float64 {
		if math.IsNaN(f) {
			return nil
		}
		return &f
	}
	lq := &LabellerQuality{Annotator: q.Annotator, Applies: q.Applies(version), Set: q.Set, N: q.N,
		Coverage: num(q.Coverage), Accuracy: num(q.Accuracy), MacroF1: num(q.MacroF1), MajorityRateLabelled: num(q.MajorityRateLabelled), Line: q.String()}
	if !lq.Applies {
		lq.Line += fmt.Sprintf(" (measured for %s; this run's heuristic is %s and has not been measured)", q.Annotator, version)
	}
	return lq
}
