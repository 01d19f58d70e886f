package report_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/run/report"
	"github.com/ac3/ac3/stages/lic/grade"
	"github.com/ac3/ac3/stages/lic/replay"
	"github.com/ac3/ac3/stages/lic/simulate"
)

// accSource is a run made of trajectories and their grades.
type accSource struct {
	convs []ledger.Stored
	units map[string][]ledger.Unit
}

func (s *accSource) Path() string { return "/runs/x.db" }
func (s *accSource) Plans(context.Context) (map[string][]ledger.Variant, error) {
	p := map[string][]ledger.Variant{}
	for stage, us := range s.units {
		seen := map[string]bool{}
		for _, u := range us {
			if !seen[u.Variant] {
				seen[u.Variant] = true
				p[stage] = append(p[stage], ledger.Variant{Name: u.Variant, Version: u.Version})
			}
		}
	}
	return p, nil
}
func (s *accSource) EachPage(_ context.Context, size int, fn func([]ledger.Stored, int64, int64) error) error {
	// Pages of two, so folds across pages are exercised.
	for i := 0; i < len(s.convs); i += 2 {
		j := min(i+2, len(s.convs))
		after := int64(0)
		if i > 0 {
			after = s.convs[i-1].Seq
		}
		if err := fn(s.convs[i:j], after, s.convs[j-1].Seq); err != nil {
			return err
		}
	}
	return nil
}
func (s *accSource) Units(_ context.Context, stage string, vs []ledger.Variant, after, upto int64, fn func(ledger.Unit) error) error {
	for _, u := range s.units[stage] {
		if u.ConvSeq > after && u.ConvSeq <= upto {
			if err := fn(u); err != nil {
				return err
			}
		}
	}
	return nil
}
func (s *accSource) Status(context.Context) (ledger.Status, error) { return ledger.Status{}, nil }

func (s *accSource) trajectory(id string, seq int64) {
	s.convs = append(s.convs, ledger.Stored{Seq: seq, Origin: simulate.Origin, Conv: &conv.Conversation{
		ID: id + "#r1", Meta: json.RawMessage(`{"task":"math","task_id":"` + id + `","answer":"#### 5"}`),
		Messages: []conv.Message{{Role: conv.User, Content: "q"}},
	}})
}

func (s *accSource) grades(seq int64, variant string, st ...grade.Status) {
	o := replay.Output{Task: grade.TaskMath, Strategy: variant}
	for i, x := range st {
		o.Reruns = append(o.Reruns, replay.Graded{Index: i, Grade: grade.Result{Status: x}})
	}
	b, _ := json.Marshal(o)
	if s.units == nil {
		s.units = map[string][]ledger.Unit{}
	}
	s.units[replay.StageName] = append(s.units[replay.StageName], ledger.Unit{ConvSeq: seq, Turn: 1, Variant: variant, Version: "v", Status: ledger.Done, Output: b})
}

func TestAccuracyEdges(t *testing.T) {
	P, F, N := grade.Pass, grade.Fail, grade.NotGraded
	s := &accSource{}
	for i, id := range []string{"a", "b", "c"} {
		s.trajectory(id, int64(i+1))
	}
	// One rerun each; fc and ao score the same (no gap to close); x is
	// answered by a labelled respondent and pairs with fc@m and ao@m; one
	// of s's answers was not graded.
	s.grades(1, "fc", P)
	s.grades(2, "fc", F)
	s.grades(3, "fc", F)
	s.grades(1, "ao", F)
	s.grades(2, "ao", P)
	s.grades(3, "ao", F)
	s.grades(1, "s", P)
	s.grades(2, "s", N)
	s.grades(3, "s", P)
	s.grades(1, "fc@m", F)
	s.grades(2, "fc@m", F)
	s.grades(3, "fc@m", F)
	s.grades(1, "ao@m", P)
	s.grades(2, "ao@m", P)
	s.grades(3, "ao@m", F)
	s.grades(1, "x@m", P)
	s.grades(2, "x@m", F)
	s.grades(3, "x@m", F)
	a, err := report.BuildAccuracy(context.Background(), s, report.AccuracyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cells := map[string]report.AccuracyCell{}
	for _, c := range a.Cells {
		cells[c.Strategy] = c
	}
	if c := cells["s"]; c.N != 2 || c.Passes != 2 || c.Ungraded != 1 || c.Items != 3 {
		t.Errorf("s: %+v", c)
	}
	if c := cells["s"]; c.GapClosure.Known() || c.SD.Known() || float64(c.Mean) != 1 {
		t.Errorf("s: gap %v sd %v mean %v; want no gap (ao = fc), no sd (one rerun)", c.GapClosure, c.SD, c.Mean)
	}
	// s vs fc pairs only graded answers: (P,P) and (P,F).
	if p := cells["s"].VsFC; p == nil || p.Pairs != 2 || p.Better != 1 || p.Worse != 0 || float64(p.P) != 1 {
		t.Errorf("s vs fc: %+v", p)
	}
	x := cells["x@m"]
	if x.VsFC == nil || x.VsFC.Better != 1 || x.VsAO == nil || x.VsAO.Worse != 1 {
		t.Errorf("x@m is not paired with fc@m and ao@m: %+v %+v", x.VsFC, x.VsAO)
	}
	// (1/3 − 0) / (2/3 − 0)
	if math.Abs(float64(x.GapClosure)-0.5) > 1e-9 {
		t.Errorf("x@m gap closure %v, want 0.5", x.GapClosure)
	}
	if cells["fc"].VsFC != nil || cells["ao@m"].VsAO != nil {
		t.Error("a strategy tested against itself")
	}
	if len(a.Pool) != 1 || a.Pool[0].Pool != 3 || a.Pool[0].Trajectories != 3 {
		t.Errorf("pool %+v", a.Pool)
	}

	// lic.unscored: failure: s's unscored answer counts as failed, in n,
	// accuracy and its pairing with fc: (P,P), (F,F), (P,F).
	a, err = report.BuildAccuracy(context.Background(), s, report.AccuracyOptions{UnscoredFail: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range a.Cells {
		cells[c.Strategy] = c
	}
	if c := cells["s"]; c.N != 3 || c.Passes != 2 || c.Ungraded != 0 || c.UnscoredFailed != 1 || math.Abs(float64(c.Accuracy)-2.0/3) > 1e-9 {
		t.Errorf("s with unscored as failure: %+v", c)
	}
	if p := cells["s"].VsFC; p == nil || p.Pairs != 3 || p.Better != 1 || p.Worse != 0 {
		t.Errorf("s vs fc with unscored as failure: %+v", p)
	}
	if c := cells["fc"]; c.N != 3 || c.UnscoredFailed != 0 {
		t.Errorf("fc with unscored as failure: %+v", c)
	}
}

// TestAccuracyByInstance works the instance-level figures by hand: three
// instances, one trace each, three reruns.
func TestAccuracyByInstance(t *testing.T) {
	P, F := grade.Pass, grade.Fail
	s := &accSource{}
	for i, id := range []string{"a", "b", "c"} {
		s.trajectory(id, int64(i+1))
	}
	s.grades(1, "fc", P, F, F) // 1/3
	s.grades(2, "fc", F, F, F) // 0
	s.grades(3, "fc", P, P, F) // 2/3
	s.grades(1, "s", P, P, P)  // 1
	s.grades(2, "s", P, F, F)  // 1/3
	s.grades(3, "s", P, P, P)  // 1
	a, err := report.BuildAccuracy(context.Background(), s, report.AccuracyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var c report.AccuracyCell
	for _, x := range a.Cells {
		if x.Strategy == "s" {
			c = x
		}
	}
	near := func(got report.Num, want float64) bool { return math.Abs(float64(got)-want) < 1e-9 }
	if c.Instances != 3 || !near(c.InstanceAccuracy, 7.0/9) {
		t.Errorf("instances %d, instance accuracy %v; want 3, 7/9", c.Instances, c.InstanceAccuracy)
	}
	// Wilson on 3 instances, not on the 9 answers.
	if w := stats.Wilson(7.0/3, 3, 0.95); !near(c.InstanceInterval.Lo, w.Lo) || !near(c.InstanceInterval.Hi, w.Hi) {
		t.Errorf("instance interval %+v, want %+v", c.InstanceInterval, w)
	}
	// Per-instance gains 2/3, 1/3, 1/3: mean 4/9, and a resample of them
	// cannot leave [1/3, 2/3].
	g := c.GainVsFC
	if g == nil || g.Instances != 3 || !near(g.Mean, 4.0/9) || g.Interval.Lo < 1.0/3-1e-9 || g.Interval.Hi > 2.0/3+1e-9 || g.Interval.Lo >= g.Interval.Hi {
		t.Errorf("gain vs fc %+v", g)
	}
	// Headline answers (first rerun): a P/P, b P/F, c P/P.
	if p := c.InstVsFC; p == nil || p.Pairs != 3 || p.Better != 1 || p.Worse != 0 || !near(p.P, 1) {
		t.Errorf("instance McNemar vs fc %+v", p)
	}
	// The answer-level test still pairs all 9 answers: a (P,P)(P,F)(P,F),
	// b (P,F)(F,F)(F,F), c (P,P)(P,P)(P,F): 4 better, 0 worse.
	if p := c.VsFC; p == nil || p.Pairs != 9 || p.Better != 4 || p.Worse != 0 {
		t.Errorf("answer McNemar vs fc %+v", p)
	}
}

// TestAccuracyOneTraceOrAll: the paper replays one failing trace per
// instance; replaying every trace, passes included, gives the full-context
// baseline another accuracy. Instance a's baseline failed in r1 and passed
// in r2, b's failed in both; the replayed final turns answer as the
// baseline did.
func TestAccuracyOneTraceOrAll(t *testing.T) {
	P, F := grade.Pass, grade.Fail
	build := func(all bool) report.AccuracyCell {
		s := &accSource{}
		add := func(id, rep string, seq int64, st grade.Status) {
			s.trajectory(id, seq)
			s.convs[len(s.convs)-1].Conv.ID = id + "#" + rep
			s.grades(seq, "fc", st)
		}
		add("a", "r1", 1, F)
		if all {
			add("a", "r2", 2, P)
		}
		add("b", "r1", 3, F)
		if all {
			add("b", "r2", 4, F)
		}
		a, err := report.BuildAccuracy(context.Background(), s, report.AccuracyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return a.Cells[0]
	}
	one, all := build(false), build(true)
	if one.Instances != 2 || float64(one.InstanceAccuracy) != 0 || float64(one.Accuracy) != 0 {
		t.Errorf("one trace: %+v; want 2 instances at 0%%", one)
	}
	// a: 1/2, b: 0 → 25% by instance; 1 of 4 answers pooled.
	if all.Instances != 2 || float64(all.InstanceAccuracy) != 0.25 || float64(all.Accuracy) != 0.25 || all.Items != 4 {
		t.Errorf("all traces: %+v; want 2 instances at 25%%", all)
	}
}
