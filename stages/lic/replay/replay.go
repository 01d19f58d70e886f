// Package replay grades the answers a replay of LiC trajectories produced:
// for each trajectory (a conversation the simulate stage derived) and each
// strategy, the respond stage regenerated the final turn(s) M times from
// that strategy's context of the same prefix; this stage grades every one
// of those answers with package grade and stores the grades with the
// unit, where inspect and the accuracy report read them.
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/lic/grade"
	"github.com/ac3/ac3/stages/lic/simulate"
	"github.com/ac3/ac3/stages/respond"
)

// StageName is the stage's name in unit keys, status and reports.
const StageName = "lic-grade"

const version = "lic-grade/v1"

// Output is what one unit stores: the grades of the answers one strategy
// gave at one turn of one trajectory, one per rerun.
type Output struct {
	Instance string   `json:"instance"`
	Task     string   `json:"task"`
	Strategy string   `json:"strategy"`
	Reruns   []Graded `json:"reruns"`
}

// Graded is the grade of one rerun (a respond sample).
type Graded struct {
	Index int          `json:"index"`
	Grade grade.Result `json:"grade"`
}

// Decode reads a stored unit output.
func Decode(b []byte) (Output, error) {
	var o Output
	if err := json.Unmarshal(b, &o); err != nil {
		return o, fmt.Errorf("decoding grades: %w", err)
	}
	return o, nil
}

// UnitReader reads stored units; *ledger.Ledger satisfies it.
type UnitReader interface {
	ConversationUnits(ctx context.Context, stage, convID string, turn int) ([]ledger.Unit, error)
}

// Stage grades the respond stage's answers on trajectories.
type Stage struct {
	units    UnitReader
	g        *grade.Grader
	respond  map[string]string // respond variant → version
	variants []pipeline.Variant
}

// New returns the stage over the respond variants vs (as the respond
// stage planned them).
func New(units UnitReader, g *grade.Grader, vs []pipeline.Variant) (*Stage, error) {
	if len(vs) == 0 {
		return nil, errors.New("building lic-grade: no respond variants to grade")
	}
	s := &Stage{units: units, g: g, respond: map[string]string{}}
	for _, v := range vs {
		s.respond[v.Name] = v.Version
		s.variants = append(s.variants, pipeline.Variant{Name: v.Name, Version: fmt.Sprintf("%s;respond=%s;%s", version, v.Version, g.Fingerprint())})
	}
	return s, nil
}

// Name implements pipeline.Stage.
func (s *Stage) Name() string { return StageName }

// Variants implements pipeline.Stage.
func (s *Stage) Variants() []pipeline.Variant { return s.variants }

// Scope implements pipeline.Scoped: the trajectories only.
func (s *Stage) Scope() ledger.Scope { return ledger.MustOrigins(simulate.Origin) }

// Process implements pipeline.Stage. Run it past the respond stage's
// barrier: a variant with no answer stored yet gets a failed unit (retry
// grades it once the answer is there), never a silent gap.
func (s *Stage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	in, err := grade.ParseInstance(t.Conv.Meta)
	if err != nil {
		return nil, fmt.Errorf("grading %s: %w", t.Conv.ID, err)
	}
	stored, err := s.units.ConversationUnits(ctx, respond.StageName, t.Conv.ID, 0)
	if err != nil {
		return nil, fmt.Errorf("reading answers of %s: %w", t.Conv.ID, err)
	}
	out := make([]pipeline.Result, 0, len(t.Variants))
	for _, v := range t.Variants {
		rv, ok := s.respond[v.Name]
		if !ok {
			return nil, fmt.Errorf("grading %s: no variant %q", t.Conv.ID, v.Name)
		}
		res := pipeline.Result{Variant: v}
		for _, u := range stored {
			if u.Variant != v.Name || u.Version != rv || u.Status != ledger.Done {
				continue
			}
			ans, err := respond.Decode(u.Output)
			if err != nil {
				return nil, fmt.Errorf("grading %s: %w", u.Key, err)
			}
			o := Output{Instance: in.TaskID, Task: in.Task, Strategy: ans.Strategy}
			for _, smp := range ans.Samples {
				r, err := s.g.Grade(ctx, in, smp.Text)
				if errors.Is(err, grade.ErrBadInstance) {
					r, err = grade.Result{Task: in.Task, Status: grade.NotGraded, Reason: err.Error()}, nil
				}
				if err != nil {
					return nil, fmt.Errorf("grading %s turn %d: %w", t.Conv.ID, u.Turn, err)
				}
				o.Reruns = append(o.Reruns, Graded{Index: smp.Index, Grade: r})
			}
			b, err := json.Marshal(o)
			if err != nil {
				return nil, err
			}
			res.Units = append(res.Units, pipeline.Unit{Turn: u.Turn, Output: b, Attempts: 1})
		}
		if len(res.Units) == 0 {
			res.Units = []pipeline.Unit{{Turn: t.Conv.UserTurns(), Failed: true, Error: "no answer of " + v.Name + " is stored for this trajectory (run respond to the end, then 'ac3 retry --stage " + StageName + "')"}}
		}
		out = append(out, res)
	}
	return out, nil
}
