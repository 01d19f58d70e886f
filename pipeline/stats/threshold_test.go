package stats

import (
	"math"
	"testing"
)

func TestTauForShare(t *testing.T) {
	scores := []float64{0.9, 0.1, 0.5, 0.7, 0.5, 0.3}
	tests := []struct {
		share     float64
		tau, kept float64
	}{
		{0, math.Inf(1), 0},
		{1.0 / 6, 0.9, 1.0 / 6},
		{0.3, 0.7, 2.0 / 6}, // ⌈1.8⌉ = 2 turns
		{0.5, 0.5, 4.0 / 6}, // the third score ties with the fourth: both kept
		{0.7, 0.3, 5.0 / 6}, // ⌈4.2⌉ = 5
		{1, 0.1, 1},
	}
	for _, tt := range tests {
		tau, kept, err := TauForShare(scores, tt.share)
		if err != nil {
			t.Fatal(err)
		}
		if tau != tt.tau || kept != tt.kept {
			t.Errorf("share %v: τ %v kept %v, want τ %v kept %v", tt.share, tau, kept, tt.tau, tt.kept)
		}
	}
	for _, bad := range []struct {
		s     []float64
		share float64
	}{{scores, -0.1}, {scores, 1.5}, {scores, math.NaN()}, {nil, 0.5}, {[]float64{0.2, math.NaN()}, 0.5}} {
		if _, _, err := TauForShare(bad.s, bad.share); err == nil {
			t.Errorf("TauForShare(%v, %v): no error", bad.s, bad.share)
		}
	}
}

func TestBestTau(t *testing.T) {
	// Scores sorted high to low with the judge's verdict of fc vs ao.
	scores := []float64{0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2}
	y := []Outcome{AWins, AWins, BWins, AWins, Tie, BWins, BWins}
	tests := []struct {
		name   string
		ties   TiePolicy
		metric CVMetric
		tau, v float64
	}{
		// Ties as losses: positives at 0.9, 0.8, 0.6. Cutting at 0.8
		// gets 6 of 7 right (only 0.6 missed); so does 0.6 (only 0.7
		// wrong): the larger τ wins the tie.
		{"accuracy", TiesAsLosses, MetricAccuracy, 0.8, 6.0 / 7},
		// F1 at 0.8: tp 2, fn 1 → 4/5; at 0.6: tp 3, fp 1 → 6/7; lower
		// cuts add false positives only.
		{"f1", TiesAsLosses, MetricF1, 0.6, 6.0 / 7},
		// Balanced accuracy at 0.6: recalls 1 and 3/4 → 7/8; at 0.8:
		// 2/3 and 1 → 5/6.
		{"balanced", TiesAsLosses, MetricBalancedAccuracy, 0.6, 7.0 / 8},
		// The tie dropped: 0.8 and 0.6 both get 5 of 6 right.
		{"dropped", TiesDropped, MetricAccuracy, 0.8, 5.0 / 6},
		// The tie as half of each class: below the cut its negative half
		// is right, so 5.5 of 7 at 0.8 (and at 0.6).
		{"half", TiesHalf, MetricAccuracy, 0.8, 5.5 / 7},
		// Half a positive tips the balance when the tie is above the cut:
		// F1 at 0.6 is 2·3/(2·3 + 1 + 0.5) = 0.8 (the tie's positive half
		// missed); at 0.4 it is 2·3.5/(2·3.5 + 1.5) = 14/17.
		{"half f1", TiesHalf, MetricF1, 0.4, 14.0 / 17},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tau, v, err := BestTau(scores, y, tt.ties, tt.metric)
			if err != nil {
				t.Fatal(err)
			}
			if tau != tt.tau || math.Abs(v-tt.v) > 1e-15 {
				t.Errorf("τ %v value %v, want τ %v value %v", tau, v, tt.tau, tt.v)
			}
		})
	}

	// Nothing worth keeping: every verdict a loss, so keeping none is best
	// and τ is +Inf.
	tau, v, err := BestTau([]float64{0.5, 0.4}, []Outcome{BWins, BWins}, TiesAsLosses, MetricAccuracy)
	if err != nil || !math.IsInf(tau, 1) || v != 1 {
		t.Errorf("all losses: τ %v value %v err %v, want +Inf 1", tau, v, err)
	}

	for _, bad := range []struct {
		name   string
		s      []float64
		y      []Outcome
		metric CVMetric
	}{
		{"lengths differ", scores, y[:3], MetricF1},
		{"log loss", scores, y, MetricLogLoss},
		{"NaN score", []float64{math.NaN()}, []Outcome{AWins}, MetricF1},
		{"no usable row", []float64{0.5}, []Outcome{0}, MetricF1},
	} {
		if _, _, err := BestTau(bad.s, bad.y, TiesAsLosses, bad.metric); err == nil {
			t.Errorf("%s: no error", bad.name)
		}
	}
}
