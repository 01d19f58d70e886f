package compint_test

import (
	"context"
	"fmt"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/compint"
)

func ExampleBuild() {
	tok, err := tokens.New("")
	if err != nil {
		fmt.Println(err)
		return
	}
	set := compint.Default()
	// A tiny target so two short conversations make one context; the paper
	// uses compint.PaperTargetTokens.
	st, _ := compint.NewStitcher(tok, compint.StitchOptions{TargetTokens: 40, MaxTokens: 100})
	bd, _ := compint.NewBuilder(tok, set, compint.Options{Locations: []compint.Location{compint.Top, compint.Bottom}})
	convs := func(yield func(*conv.Conversation, error) bool) {
		for _, c := range []*conv.Conversation{
			{ID: "w1", Messages: []conv.Message{{Role: conv.User, Content: "How do I sort a list in Python?"}, {Role: conv.Assistant, Content: "Use sorted(xs) or xs.sort()."}}},
			{ID: "w2", Messages: []conv.Message{{Role: conv.User, Content: "And in reverse order?"}, {Role: conv.Assistant, Content: "Pass reverse=True."}}},
		} {
			if !yield(c, nil) {
				return
			}
		}
	}
	_, err = compint.Build(context.Background(), convs, st, bd, func(in *compint.Instance) error {
		if in.Meta.SCID != 15 {
			return nil
		}
		m := in.Meta
		fmt.Printf("%-4s %-6s turns %v, probe at turn %d: %q\n", m.Kind, m.Location, m.InjectedTurns, m.ProbeTurn, in.Conv.Messages[len(in.Conv.Messages)-1].Content)
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// nosc none   turns [], probe at turn 3: "Explain photosynthesis."
	// sc   top    turns [1], probe at turn 3: "Explain photosynthesis."
	// sc   bottom turns [2], probe at turn 3: "Explain photosynthesis."
}
