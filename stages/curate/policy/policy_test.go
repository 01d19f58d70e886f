package policy_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/stages/curate/policy"
)

// synthTurns makes n judged turns over n/5 conversations whose verdict
// follows a known rule: fc wins unless the turn is a new_ask, where ao
// wins or (every third new_ask) the judge ties; a share `flip` of verdicts
// is then reversed. The other features are noise. fcShare, when > 0,
// instead makes every verdict a win with that probability, with no rule.
func synthTurns(n int, flip, fcShare float64) []policy.Example {
	rng := rand.New(rand.NewPCG(7, 11))
	types := []string{"new_ask", "feedback", "no_feedback"}
	var ex []policy.Example
	newAsks := 0
	for i := range n {
		f := policy.TurnFeatures{
			Turn: 2 + rng.IntN(8), AOTokens: 100 + rng.IntN(400), AsstTokens: 200 + rng.IntN(2000),
			TurnType: types[rng.IntN(3)], RefsAny: rng.IntN(2) == 0,
		}
		f.FCTokens = f.AOTokens + f.AsstTokens
		win := 1.0
		if f.TurnType == "new_ask" {
			newAsks++
			win = 0
			if newAsks%3 == 0 {
				win = 0.5
			}
		}
		if rng.Float64() < flip {
			win = 1 - win
		}
		if fcShare > 0 {
			win = 0
			if rng.Float64() < fcShare {
				win = 1
			}
		}
		ex = append(ex, policy.Example{Conv: fmt.Sprintf("c%03d", i/5), TurnFeatures: f, FCWins: win})
	}
	return ex
}

func TestFitPolicyRecoversAKnownRule(t *testing.T) {
	ex := synthTurns(300, 0.08, 0)
	p, err := policy.Fit(ex, policy.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := p.Fit
	if f == nil || f.Method != "l1-logistic" || f.Ties != "losses" || f.Classes != "balanced" || f.Metric != "f1" || f.Folds != 5 || f.FoldsBy != "conversation" {
		t.Fatalf("fit settings %+v, want Huang et al.'s (L1, ties as losses, balanced, 5-fold F1) with folds by conversation", f)
	}
	if f.Wins+f.Losses+f.TiesN != 300 || f.TiesN == 0 {
		t.Errorf("verdict counts %d/%d/%d", f.Wins, f.Losses, f.TiesN)
	}
	// About 8% of verdicts are flipped, so the rule is right on ~92%.
	if f.HeldOut.Accuracy < 0.85 || f.HeldOut.Accuracy <= f.Majority {
		t.Errorf("held-out accuracy %.3f (majority %.3f), want at least 0.85", f.HeldOut.Accuracy, f.Majority)
	}
	if !(f.Lambda > 0) || f.C <= 0 || f.NonZero < 1 || f.NonZero > len(p.Features) {
		t.Errorf("λ %g, C %g, %d coefficients kept", f.Lambda, f.C, f.NonZero)
	}
	newAsk := -1
	for i, name := range p.Features {
		if name == "type_new_ask" {
			newAsk = i
		}
	}
	if w := p.Weights[newAsk+1]; w >= 0 {
		t.Errorf("type_new_ask weight %.3f, want negative (ao wins new asks)", w)
	}
	base := policy.TurnFeatures{Turn: 4, FCTokens: 1300, AOTokens: 300, AsstTokens: 1000}
	na, fb := base, base
	na.TurnType, fb.TurnType = "new_ask", "feedback"
	if pn, pf := p.PFCWins(na), p.PFCWins(fb); pn >= 0.5 || pf <= 0.5 {
		t.Errorf("P(fc wins): new_ask %.2f, feedback %.2f", pn, pf)
	}
	if !(f.Tau > 0 && f.Tau < 1) || f.TauAccuracy < 0.85 {
		t.Errorf("τ %.3f with held-out agreement %.3f", f.Tau, f.TauAccuracy)
	}

	again, _ := policy.Fit(ex, policy.FitOptions{})
	if p.Hash() != again.Hash() {
		t.Error("the same turns gave two policies")
	}
	b, _ := json.Marshal(p)
	back, err := policy.Decode(b)
	if err != nil || back.Hash() != p.Hash() || back.Fit.Tau != f.Tau {
		t.Fatalf("stored policy does not read back: %v", err)
	}
	if _, err := policy.Fit(ex[:5], policy.FitOptions{}); err == nil {
		t.Error("fit accepted too few examples")
	}
}

// Ties are losses by default; half and dropped change the labels the fit
// sees (so the win rate), and the setting is recorded.
func TestFitPolicyTies(t *testing.T) {
	ex := synthTurns(300, 0, 0)
	var wins, ties float64
	for _, e := range ex {
		switch e.FCWins {
		case 1:
			wins++
		case 0.5:
			ties++
		}
	}
	n := float64(len(ex))
	for _, tc := range []struct {
		ties stats.TiePolicy
		rate float64
	}{
		{stats.TiesAsLosses, wins / n},
		{stats.TiesHalf, (wins + ties/2) / n},
		{stats.TiesDropped, wins / (n - ties)},
	} {
		p, err := policy.Fit(ex, policy.FitOptions{Ties: tc.ties})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(p.FCWinRate-tc.rate) > 1e-12 || p.Fit.Ties != tc.ties.String() {
			t.Errorf("ties %s: win rate %.4f, want %.4f (recorded %q)", tc.ties, p.FCWinRate, tc.rate, p.Fit.Ties)
		}
		if tc.ties == stats.TiesDropped && p.Fit.DroppedTies != int(ties) {
			t.Errorf("dropped %d ties, want %d", p.Fit.DroppedTies, int(ties))
		}
	}
}

// Balanced classes: with no signal and fc winning 80% of turns, the fitted
// probabilities centre on one half, not on the base rate, so the policy
// does not keep fc everywhere by default.
func TestFitPolicyBalancesClasses(t *testing.T) {
	ex := synthTurns(300, 0, 0.8)
	p, err := policy.Fit(ex, policy.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.FCWinRate < 0.7 {
		t.Fatalf("fc win rate %.2f, want about 0.8", p.FCWinRate)
	}
	var mean float64
	for _, e := range ex {
		mean += p.PFCWins(e.TurnFeatures)
	}
	mean /= float64(len(ex))
	if mean < 0.4 || mean > 0.6 {
		t.Errorf("mean P(fc wins) %.3f, want near 0.5 under balanced class weights", mean)
	}
	if p.Fit.Majority < 0.7 {
		t.Errorf("majority rate %.3f", p.Fit.Majority)
	}
}

// Fewer conversations than folds: turns are dealt to folds one by one,
// and the fit says so.
func TestFitPolicyFoldsByTurnWithFewConversations(t *testing.T) {
	ex := synthTurns(40, 0, 0)
	for i := range ex {
		ex[i].Conv = fmt.Sprintf("c%d", i%3)
	}
	p, err := policy.Fit(ex, policy.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Fit.FoldsBy != "turn" {
		t.Errorf("folds by %q with 3 conversations, want turn", p.Fit.FoldsBy)
	}
	q, err := policy.Fit(synthTurns(300, 0.08, 0), policy.FitOptions{ByTurn: true})
	if err != nil || q.Fit.FoldsBy != "turn" {
		t.Errorf("ByTurn: %v, %+v", err, q.Fit)
	}
}
