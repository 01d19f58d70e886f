package curate_test

import (
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/curate"
)

// A turn whose upstream unit failed is blamed on that unit, with its error
// and the retry that runs it again, not on a stage that never ran; one the
// stage has not reached yet says to run it; one whose output does not
// decode says so.
func TestMissingUpstreamUnitsNameTheRealCause(t *testing.T) {
	c := sevenTurns()
	failed := ledger.Unit{ConvID: c.ID, Turn: 3, Variant: "llm", Version: "1", Status: ledger.Failed,
		Error: "parsing model answer (3 tries): missing tagged section(s): answer"}
	garbled := ledger.Unit{ConvID: c.ID, Turn: 3, Variant: "llm", Version: "1", Status: ledger.Done, Key: "k3", Output: []byte("{not json")}
	upTo := func(stage string, last int, extra ...ledger.Unit) fakeUnits {
		fu := fakeUnits{}
		for turn := 1; turn <= last; turn++ {
			v := map[string]any{"type": "feedback", "refs": []string{}}
			if stage == curate.ConstraintsStage {
				v = map[string]any{"new": []any{}, "registry": []any{}, "annotator": "test"}
			}
			fu[stage] = append(fu[stage], unit(c.ID, turn, "llm", v))
		}
		fu[stage] = append(fu[stage], extra...)
		return fu
	}
	for _, tc := range []struct {
		name     string
		strategy string
		units    fakeUnits
		want     []string
		notWant  string
	}{
		{"classify unit failed", "adaptive", upTo(curate.ClassifyStage, 2, failed),
			[]string{"turn 3: the classify unit (variant llm) of this turn failed: parsing model answer (3 tries)", "'ac3 retry --stage classify'"}, "first"},
		{"classify not reached", "adaptive", upTo(curate.ClassifyStage, 2),
			[]string{"turn 3: no classify unit (variant llm) for this turn: run the classify stage first"}, "failed"},
		{"classify unit garbled", "adaptive", upTo(curate.ClassifyStage, 2, garbled),
			[]string{"turn 3: decoding classify unit k3"}, "first"},
		{"constraints unit failed", "fc+constraints", upTo(curate.ConstraintsStage, 2, failed),
			[]string{"turn 3: the constraints unit (variant llm) of this turn failed: parsing model answer", "'ac3 retry --stage constraints'"}, "first"},
		{"constraints not reached", "fc+constraints", upTo(curate.ConstraintsStage, 2),
			[]string{"run the constraints stage first"}, "failed"},
	} {
		opts := curate.Options{Units: tc.units, Classify: curate.Upstream{Version: "1"}, Constraints: curate.Upstream{Version: "1"}}
		_, err := curateCtx(t, strategy(t, tc.strategy, opts), c, curate.NewWorkspace(c, counter(t)))
		var te *curate.TurnError
		if !asTurnError(err, &te) || te.Turn != 3 {
			t.Errorf("%s: err %v, want a TurnError at turn 3", tc.name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, err, w)
			}
		}
		if strings.Contains(err.Error(), tc.notWant) {
			t.Errorf("%s: %q says %q", tc.name, err, tc.notWant)
		}
	}
}
