package run

import (
	"reflect"
	"testing"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/stages/curate/inspect"
)

// A judge unit becomes one verdict per comparison and dimension, in
// strategy names, with every call in the order it was asked and its
// reasoning.
func TestVerdictsOfNamesTheStrategies(t *testing.T) {
	o := judge.Output{Pair: "gated-reset:fc", A: "gated-reset", B: "fc", Order: judge.OrderBoth, Comparisons: []judge.Comparison{{
		Sample:  0,
		Outcome: map[string]string{judge.Quality: "A", judge.OnTopic: "tie"},
		Calls: []judge.Call{
			{First: "A", Verdicts: map[string]judge.DimVerdict{judge.Quality: {Outcome: "A", Justification: "keeps the rule"}, judge.OnTopic: {Outcome: "tie"}}},
			{First: "B", Verdicts: map[string]judge.DimVerdict{judge.Quality: {Outcome: "A", Justification: "still keeps it"}, judge.OnTopic: {Outcome: "B", Justification: "closer"}}},
		},
	}, {Sample: 1, Identical: true, Outcome: map[string]string{judge.Quality: "tie", judge.OnTopic: "tie"}}}}
	got := verdictsOf("gated-reset:fc/user_only", o)
	want := []inspect.Verdict{
		{Pair: "gated-reset:fc/user_only", A: "gated-reset", B: "fc", Dimension: judge.Quality, Outcome: "gated-reset", Calls: []inspect.Call{
			{First: "gated-reset", Winner: "gated-reset", Justification: "keeps the rule"}, {First: "fc", Winner: "gated-reset", Justification: "still keeps it"}}},
		{Pair: "gated-reset:fc/user_only", A: "gated-reset", B: "fc", Dimension: judge.OnTopic, Outcome: "tie", Calls: []inspect.Call{
			{First: "gated-reset", Winner: "tie"}, {First: "fc", Winner: "fc", Justification: "closer"}}},
		{Pair: "gated-reset:fc/user_only", A: "gated-reset", B: "fc", Sample: 1, Dimension: judge.Quality, Outcome: "tie", Identical: true},
		{Pair: "gated-reset:fc/user_only", A: "gated-reset", B: "fc", Sample: 1, Dimension: judge.OnTopic, Outcome: "tie", Identical: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}
