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

	// Cross-fitting: every fitting conversation has the fold fit that held
	// it out, and For scores it with that fit; a stranger gets the full fit.
	if len(p.Folds) != 5 || len(p.ConvFold) != 60 {
		t.Fatalf("%d fold fits for %d conversations, want 5 for 60", len(p.Folds), len(p.ConvFold))
	}
	var differ int
	for _, e := range ex[:40] {
		q := p.For(e.Conv)
		if q == &p || q.Folds != nil {
			t.Fatalf("conversation %s is scored by the full fit", e.Conv)
		}
		if math.Abs(q.PFCWins(e.TurnFeatures)-p.PFCWins(e.TurnFeatures)) > 1e-9 {
			differ++
		}
	}
	if differ == 0 {
		t.Error("the fold fits score every turn as the full fit does")
	}
	if p.For("a stranger") != &p {
		t.Error("a conversation outside the fit is not scored by the full fit")
	}
	for _, fg := range []policy.Figures{f.InSample, f.CrossFitted} {
		if fg.Turns != 300 || fg.FCShare <= 0 || fg.FCShare >= 1 || fg.TokenShare <= 0 || fg.TokenShare >= 1 || fg.WinRateVsFC <= 0 {
			t.Errorf("figures %+v", fg)
		}
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

// paperTurns makes n judged turns whose verdict follows the prompt's
// embedding: fc wins when the prompt lies on one side along a direction the
// embeddings spread on, with the history's embedding and the numeric
// features noise; a share flip of verdicts is reversed.
func paperTurns(n, dim int, flip float64) []policy.Example {
	rng := rand.New(rand.NewPCG(3, 5))
	vec := func(signal float64) []float32 {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(rng.NormFloat64() * 0.3)
		}
		v[2] += float32(signal)
		v[5] += float32(rng.NormFloat64()) // spread that says nothing
		return v
	}
	var ex []policy.Example
	for i := range n {
		win := float64(rng.IntN(2))
		signal := 2 * (win - 0.5) * (1 + rng.Float64())
		if rng.Float64() < flip {
			win = 1 - win
		}
		f := policy.TurnFeatures{Turn: 2 + rng.IntN(6), Rounds: 8, UserChars: 100 + rng.IntN(900), AsstChars: rng.IntN(5000),
			TurnType: []string{"new_ask", "feedback", "no_feedback"}[rng.IntN(3)], Prompt: vec(signal), History: vec(0)}
		ex = append(ex, policy.Example{Conv: fmt.Sprintf("c%03d", i/4), TurnFeatures: f, FCWins: win})
	}
	return ex
}

// The paper's features (A.15): the numeric and one-hot features under the
// paper's names, then the principal components of the prompt and history
// embeddings; a rule carried by the prompt's embedding is found, the
// policy reads back, and a turn without embeddings, or with embeddings of
// another model's size, is refused rather than scored.
func TestFitPolicyOnThePapersFeatures(t *testing.T) {
	ex := paperTurns(240, 32, 0.05)
	p, err := policy.Fit(ex, policy.FitOptions{Features: policy.FeaturesPaper, Embedder: "text-embedding-3-large", EmbedMaxTokens: 8000})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Paper() || p.PromptPCA == nil || p.HistoryPCA == nil || len(p.PromptPCA.Components) != policy.DefaultPCs || p.Embedder != "text-embedding-3-large" || p.EmbedMaxTokens != 8000 {
		t.Fatalf("policy %q with %v PCs, embedder %q", p.FeatureSet, p.PromptPCA != nil, p.Embedder)
	}
	want := []string{"round_num", "total_rounds", "context_length_user", "context_length_asst", "type_new_ask", "type_no_feedback", "type_feedback", "prompt_pc1"}
	for i, w := range want {
		if p.Features[i] != w {
			t.Errorf("feature %d is %q, want %q", i, p.Features[i], w)
		}
	}
	if n := len(p.Features); n != 7+2*policy.DefaultPCs || p.Features[n-1] != "history_pc20" {
		t.Errorf("%d features ending %q, want 47 ending history_pc20", n, p.Features[n-1])
	}
	// About 5% of verdicts are flipped.
	if f := p.Fit; f.HeldOut.Accuracy < 0.85 || f.HeldOut.Accuracy <= f.Majority {
		t.Errorf("held-out accuracy %.3f (majority %.3f), want at least 0.85", f.HeldOut.Accuracy, f.Majority)
	}
	b, _ := json.Marshal(p)
	back, err := policy.Decode(b)
	if err != nil || back.Hash() != p.Hash() {
		t.Fatalf("stored policy does not read back: %v", err)
	}
	for _, e := range ex[:20] {
		got, err := back.For(e.Conv).Score(e.TurnFeatures, 0)
		if err != nil || math.IsNaN(got) {
			t.Fatalf("scoring a fitted turn: %v, %v", got, err)
		}
	}
	bare := ex[0].TurnFeatures
	bare.Prompt = nil
	if _, err := p.Score(bare, 0); err == nil {
		t.Error("a turn without its prompt embedding was scored")
	}
	short := ex[0].TurnFeatures
	short.History = short.History[:16]
	if _, err := p.Score(short, 0); err == nil {
		t.Error("a history embedding of another size was scored")
	}
	if _, err := policy.Fit(synthTurns(60, 0, 0), policy.FitOptions{Features: policy.FeaturesPaper}); err == nil {
		t.Error("the paper's features were fitted on turns without embeddings")
	}
	if _, err := policy.Fit(ex, policy.FitOptions{Features: "bert"}); err == nil {
		t.Error("an unknown feature set was accepted")
	}
	// A paper policy stored without its components is refused on load.
	var raw map[string]any
	_ = json.Unmarshal(b, &raw)
	delete(raw, "prompt_pca")
	b2, _ := json.Marshal(raw)
	if _, err := policy.Decode(b2); err == nil {
		t.Error("a paper policy without its principal components decoded")
	}
}
