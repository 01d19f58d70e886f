package curate

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/curate/curated"
)

// PlanSource reads a run's stage plans and stored units. *ledger.Ledger
// satisfies it.
type PlanSource interface {
	Plans(ctx context.Context) (map[string][]ledger.Variant, error)
	UnitSource
}

// CurrentContexts returns the contexts the curate stage's current plan
// recorded as done for conversation convID at turn (every turn when 0),
// for the strategies in want (all when empty), and the turns they cover in
// order. Units of earlier plans (other versions) are left out.
func CurrentContexts(ctx context.Context, src PlanSource, convID string, turn int, want []string) ([]curated.Context, []int, error) {
	plans, err := src.Plans(ctx)
	if err != nil {
		return nil, nil, err
	}
	current := map[ledger.Variant]bool{}
	for _, v := range plans[StageName] {
		current[v] = true
	}
	units, err := src.ConversationUnits(ctx, StageName, convID, turn)
	if err != nil {
		return nil, nil, err
	}
	seen := map[int]bool{}
	var out []curated.Context
	var turns []int
	for _, u := range units {
		if !current[ledger.Variant{Name: u.Variant, Version: u.Version}] || (len(want) > 0 && !slices.Contains(want, u.Variant)) || u.Status != ledger.Done {
			continue
		}
		x, err := curated.DecodeContext(u.Output)
		if err != nil {
			return nil, nil, fmt.Errorf("decoding unit %s: %w", u.Key, err)
		}
		out = append(out, x)
		if !seen[u.Turn] {
			seen[u.Turn] = true
			turns = append(turns, u.Turn)
		}
	}
	sort.Ints(turns)
	return out, turns, nil
}
