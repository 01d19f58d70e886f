package curate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
)

// last_turns keeps only the final turns of each conversation; the contexts
// of those turns are the ones curating every turn gives for the stateless
// strategies, and a replay for the operators: the earlier turns are the
// shared prefix, never analyzed, and the cap counts from the first kept
// turn.
func TestStageLastTurns(t *testing.T) {
	ctx := context.Background()
	c := sevenTurns()
	cases := []struct {
		name      string
		from      int
		last      int
		wantTurns []int
	}{
		{"every turn from 2", 2, 0, []int{2, 3, 4, 5, 6, 7}},
		{"the last turn", 2, 1, []int{7}},
		{"the last three", 2, 3, []int{5, 6, 7}},
		{"more than there are", 2, 20, []int{2, 3, 4, 5, 6, 7}},
		{"from_turn wins when later", 6, 3, []int{6, 7}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			names := []string{"fc", "ao", "lt", "concat", "de", "filler"}
			var strategies []curate.Strategy
			for _, n := range names {
				strategies = append(strategies, mustStrategy(t, n))
			}
			st := curate.NewStage(strategies, counter(t), tc.from).WithLastTurns(tc.last)
			for _, v := range st.Variants() {
				hasLast := strings.Contains(v.Version, ";last=")
				if hasLast != (tc.last > 0) || (tc.last > 0 && !strings.HasSuffix(v.Version, fmt.Sprintf(";from=%d;last=%d", tc.from, tc.last))) {
					t.Fatalf("version %q with last_turns %d", v.Version, tc.last)
				}
			}
			res, err := st.Process(ctx, pipeline.Task{Conv: c, Variants: st.Variants()})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res {
				whole := curateAll(t, strategies[i], c, tc.from)
				byTurn := map[int]string{}
				for _, x := range whole {
					b, _ := curated.EncodeContext(x)
					byTurn[x.Turn] = string(b)
				}
				var turns []int
				for _, u := range r.Units {
					turns = append(turns, u.Turn)
					if string(u.Output) != byTurn[u.Turn] {
						t.Errorf("%s turn %d: context differs from curating every turn", r.Variant.Name, u.Turn)
					}
				}
				if fmt.Sprint(turns) != fmt.Sprint(tc.wantTurns) {
					t.Errorf("%s: turns %v, want %v", r.Variant.Name, turns, tc.wantTurns)
				}
			}
		})
	}
	// Without last_turns the versions are what they were, so existing runs
	// keep their unit keys.
	st := curate.NewStage([]curate.Strategy{mustStrategy(t, "fc")}, counter(t), 2)
	if v := st.Variants()[0].Version; strings.Contains(v, "last") || !strings.HasSuffix(v, ";from=2") {
		t.Fatalf("version without last_turns: %q", v)
	}
	if a, b := st.Variants()[0].Version, st.WithLastTurns(0).Variants()[0].Version; a != b {
		t.Fatalf("last_turns 0 changed the version: %q vs %q", a, b)
	}
}

func TestStageLastTurnIsAReplay(t *testing.T) {
	f := newFixture(t, analyzetest.Script{Issues: issuesAt(2, 3, 4, 5, 6, 7)})
	c := sevenTurns()
	st := curate.NewStage([]curate.Strategy{strategy(t, "gated-reset", curate.Options{Analyzer: f.an})}, counter(t), 2).WithLastTurns(1)
	res, err := st.Process(context.Background(), pipeline.Task{Conv: c, Variants: st.Variants()})
	if err != nil {
		t.Fatal(err)
	}
	us := res[0].Units
	if len(us) != 1 || us[0].Turn != 7 || us[0].Failed {
		t.Fatalf("units: %+v", us)
	}
	x, err := curated.DecodeContext(us[0].Output)
	if err != nil {
		t.Fatal(err)
	}
	// Curating every turn, the cap (3) is spent by turn 6 and turn 7 only
	// continues; replaying turn 7 alone, the operator acts on it.
	if x.Info.Action != curated.ActionReset || x.Info.Resets != 1 || !x.Info.Analyzed {
		t.Fatalf("turn 7 replayed: %+v", x.Info)
	}
	if s, e := f.count(analyzetest.KindSpec), f.count(analyzetest.KindEvaluate); s != 1 || e != 1 {
		t.Fatalf("%d spec and %d evaluate calls, want one analysis of turn 7", s, e)
	}
	checkContext(t, c, x)
}
