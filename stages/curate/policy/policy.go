package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/ac3/ac3/pipeline/stats"
)

// Policy is the scored adaptive policy: a logistic regression predicting
// P(fc wins over ao) for a turn, fitted by Fit on the run's own judge
// results, and the mean assistant-history length Δ is measured against.
type Policy struct {
	Features []string  `json:"features"`
	Weights  []float64 `json:"weights"` // bias first, then one per feature, on standardized features
	Mean     []float64 `json:"mean"`    // standardization of each feature
	Scale    []float64 `json:"scale"`
	// MeanAsstTokens is the mean assistant-history length over the fitting
	// turns (l̄); Δ = AsstTokens / MeanAsstTokens.
	MeanAsstTokens float64 `json:"mean_asst_tokens"`
	N              int     `json:"n"`
	// FCWinRate is the share of the fitting turns labelled "fc wins" (a
	// tie counted as Fit.Ties says).
	FCWinRate float64 `json:"fc_win_rate"`
	// TrainAccuracy is the in-sample accuracy of "fc wins iff P ≥ 0.5";
	// Fit.HeldOut is the honest figure.
	TrainAccuracy float64 `json:"train_accuracy"`
	// Fit says how the weights were chosen; nil for a policy stored by an
	// older ac3 (L2, fixed strength).
	Fit *FitReport `json:"fit,omitempty"`
}

// FitReport is how Fit chose the policy's weights, and how well they
// predict turns the fit did not see.
type FitReport struct {
	Method  string `json:"method"`  // "l1-logistic"
	Ties    string `json:"ties"`    // losses | half | dropped
	Classes string `json:"classes"` // balanced
	Metric  string `json:"metric"`  // what chose λ: f1, as Huang et al.
	Folds   int    `json:"folds"`
	// FoldsBy is "conversation" (every turn of a conversation in one fold)
	// or "turn" (when there are fewer conversations than folds, or asked).
	FoldsBy string `json:"folds_by"`
	Seed    uint64 `json:"seed"`
	// Lambda is the chosen L1 strength, C scikit-learn's equivalent.
	Lambda float64 `json:"lambda"`
	C      float64 `json:"c"`
	// NonZero counts the coefficients the penalty kept.
	NonZero int `json:"nonzero"`
	// Wins, Losses and Ties count the fitting turns by the judge's verdict
	// for fc; DroppedTies those left out (ties dropped).
	Wins        int `json:"wins"`
	Losses      int `json:"losses"`
	TiesN       int `json:"ties_n"`
	DroppedTies int `json:"dropped_ties"`
	// HeldOut is the cross-validated score at Lambda: every metric on each
	// held-out fold, averaged over folds; SD is the spread over folds of
	// Metric.
	HeldOut struct {
		Accuracy         float64 `json:"accuracy"`
		BalancedAccuracy float64 `json:"balanced_accuracy"`
		F1               float64 `json:"f1"`
		LogLoss          float64 `json:"log_loss"`
		SD               float64 `json:"sd"`
	} `json:"held_out"`
	// Majority is the accuracy of always predicting the commoner label,
	// the figure HeldOut.Accuracy has to beat to mean anything.
	Majority float64 `json:"majority"`
	// Tau is the threshold on P(fc wins) (at λ = 0 cost) whose rule "keep
	// fc iff P ≥ τ" agrees best with the judge on held-out predictions,
	// and TauAccuracy that agreement. A τ above 1 keeps fc on no turn.
	Tau         float64 `json:"tau"`
	TauAccuracy float64 `json:"tau_accuracy"`
}

// TurnFeatures are what the scored policy knows about a turn.
type TurnFeatures struct {
	Turn       int
	FCTokens   int
	AOTokens   int
	AsstTokens int // tokens of the assistant-side messages before u_t
	TurnType   string
	// RefsAssistant is whether classify said u_t refers back to an
	// assistant turn; RefsAny whether it refers back at all.
	RefsAssistant, RefsAny bool
}

// FeatureNames names the features Fit uses: the round, the log
// sizes of the two contexts and of the assistant history, the assistant
// share of the full context, the turn type (new_ask and feedback against
// no_feedback or unknown), and whether the user's turn refers back at all
// and to an assistant turn in particular (from the classify stage's refs).
func FeatureNames() []string {
	return []string{"round", "log_fc_tokens", "log_ao_tokens", "log_asst_tokens", "asst_share", "type_new_ask", "type_feedback", "refs_any", "refs_assistant"}
}

func featureVector(f TurnFeatures) []float64 {
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	share := 0.0
	if f.FCTokens > 0 {
		share = float64(f.AsstTokens) / float64(f.FCTokens)
	}
	return []float64{
		float64(f.Turn), math.Log1p(float64(f.FCTokens)), math.Log1p(float64(f.AOTokens)), math.Log1p(float64(f.AsstTokens)), share,
		b(f.TurnType == "new_ask"), b(f.TurnType == "feedback"), b(f.RefsAny), b(f.RefsAssistant),
	}
}

// Example is one judged turn: its conversation, its features and the
// judge's verdict of fc against ao as the share of comparisons fc won (1 fc
// won, 0 ao won, 0.5 a tie; with several samples, above 0.5 is a win and
// below a loss).
type Example struct {
	Conv string
	TurnFeatures
	FCWins float64
}

// outcome is the example's verdict for fc.
func (e Example) outcome() stats.Outcome {
	switch {
	case e.FCWins > 0.5:
		return stats.AWins
	case e.FCWins < 0.5:
		return stats.BWins
	}
	return stats.Tie
}

// MinExamples is the fewest judged turns Fit accepts.
const MinExamples = 20

// FitOptions configures Fit. The zero value follows Huang et
// al. (A.15): ties count as losses (a turn is labelled 1 only when the
// judge preferred full context), balanced class weights, strength by
// 5-fold cross-validation on F1. Where we differ: folds keep each
// conversation's turns together (its turns are correlated, and splitting
// them would flatter the held-out score) unless ByTurn is set or there are
// fewer conversations than folds.
type FitOptions struct {
	Ties   stats.TiePolicy
	Folds  int // default stats.DefaultL1Folds
	Seed   uint64
	ByTurn bool
}

// Fit fits the scored policy by L1-regularised logistic regression
// (stats.FitL1Logistic) on standardised features, choosing the strength by
// k-fold cross-validation on the examples themselves, with balanced class
// weights and ties as o.Ties says. It also picks a threshold τ on the
// held-out probabilities (stats.BestTau, accuracy) and records the held-out
// scores in Policy.Fit. The same examples and options give the same policy.
func Fit(ex []Example, o FitOptions) (Policy, error) {
	if len(ex) < MinExamples {
		return Policy{}, fmt.Errorf("fitting the adaptive policy: %d judged fc-vs-ao turns, need at least %d", len(ex), MinExamples)
	}
	if o.Folds == 0 {
		o.Folds = stats.DefaultL1Folds
	}
	names := FeatureNames()
	X := make([][]float64, len(ex))
	y := make([]stats.Outcome, len(ex))
	groups := make([]string, len(ex))
	convs := map[string]bool{}
	fit := &FitReport{Method: "l1-logistic", Ties: o.Ties.String(), Classes: stats.BalancedClasses.String(),
		Metric: stats.MetricF1.String(), Folds: o.Folds, FoldsBy: "conversation", Seed: o.Seed}
	p := Policy{Features: names, N: len(ex), Fit: fit}
	for i, e := range ex {
		X[i] = featureVector(e.TurnFeatures)
		y[i] = e.outcome()
		groups[i] = e.Conv
		convs[e.Conv] = true
		p.MeanAsstTokens += float64(e.AsstTokens)
		switch y[i] {
		case stats.AWins:
			fit.Wins++
		case stats.BWins:
			fit.Losses++
		default:
			fit.TiesN++
		}
	}
	p.MeanAsstTokens /= float64(len(ex))
	opt := stats.L1Options{Ties: o.Ties, Classes: stats.BalancedClasses, Metric: stats.MetricF1, Folds: o.Folds, Seed: o.Seed, Groups: groups}
	if o.ByTurn || len(convs) < o.Folds {
		opt.Groups, fit.FoldsBy = nil, "turn"
	}
	m, err := stats.FitL1Logistic(X, y, opt)
	if err != nil {
		return Policy{}, fmt.Errorf("fitting the adaptive policy: %w", err)
	}
	p.Weights = append([]float64{m.Intercept}, m.Coef...)
	p.Mean, p.Scale = m.Mean, m.Scale
	fit.Lambda, fit.C, fit.DroppedTies = m.Lambda, m.C, m.DroppedTies
	for _, c := range m.Coef {
		if c != 0 {
			fit.NonZero++
		}
	}
	cv := m.CVScore()
	fit.HeldOut.Accuracy, fit.HeldOut.BalancedAccuracy, fit.HeldOut.F1, fit.HeldOut.LogLoss, fit.HeldOut.SD = cv.Accuracy, cv.BalancedAccuracy, cv.F1, cv.LogLoss, cv.SD

	// Labels as the fit saw them: the win rate, the majority baseline,
	// training accuracy and the held-out threshold.
	var pos, used, correct float64
	var oof []float64
	var oy []stats.Outcome
	for i, e := range ex {
		w, ok := labelOf(y[i], o.Ties)
		if !ok {
			continue
		}
		used++
		pos += w
		pred := p.PFCWins(e.TurnFeatures) >= 0.5
		if pred {
			correct += w
		} else {
			correct += 1 - w
		}
		if !math.IsNaN(m.OOF[i]) {
			oof, oy = append(oof, m.OOF[i]), append(oy, y[i])
		}
	}
	if used > 0 {
		p.FCWinRate, p.TrainAccuracy = pos/used, correct/used
		fit.Majority = max(pos, used-pos) / used
	}
	tau, acc, err := stats.BestTau(oof, oy, o.Ties, stats.MetricAccuracy)
	if err != nil {
		return Policy{}, fmt.Errorf("fitting the adaptive policy: %w", err)
	}
	if math.IsInf(tau, 1) {
		tau = math.Nextafter(1, 2) // keep fc nowhere; JSON has no infinity
	}
	fit.Tau, fit.TauAccuracy = tau, acc
	return p, nil
}

// labelOf is an outcome's weight on "fc wins" under ties: 1, 0, or ½ for a
// tie under TiesHalf; ok is false for a dropped tie.
func labelOf(o stats.Outcome, ties stats.TiePolicy) (float64, bool) {
	switch {
	case o == stats.AWins:
		return 1, true
	case o == stats.BWins:
		return 0, true
	case ties == stats.TiesHalf:
		return 0.5, true
	case ties == stats.TiesDropped:
		return 0, false
	}
	return 0, true
}

func (p *Policy) standardize(x []float64) []float64 {
	z := make([]float64, len(x))
	for j := range x {
		z[j] = (x[j] - p.Mean[j]) / p.Scale[j]
	}
	return z
}

func dot(w, z []float64) float64 {
	s := w[0]
	for j, v := range z {
		s += w[j+1] * v
	}
	return s
}

func sigmoid(v float64) float64 { return 1 / (1 + math.Exp(-v)) }

// PFCWins is the predicted probability that fc wins over ao on a turn.
func (p *Policy) PFCWins(f TurnFeatures) float64 {
	return sigmoid(dot(p.Weights, p.standardize(featureVector(f))))
}

// Score is P(fc wins) − λ·Δ, Δ the turn's assistant-history tokens over
// MeanAsstTokens.
func (p *Policy) Score(f TurnFeatures, lambda float64) float64 {
	delta := 0.0
	if p.MeanAsstTokens > 0 {
		delta = float64(f.AsstTokens) / p.MeanAsstTokens
	}
	return p.PFCWins(f) - lambda*delta
}

// Hash identifies the fitted policy in unit keys.
func (p *Policy) Hash() string {
	b, _ := json.Marshal(p)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// Decode reads a policy stored as JSON and checks its shape.
func Decode(b []byte) (*Policy, error) {
	var p Policy
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("decoding adaptive policy: %w", err)
	}
	d := len(FeatureNames())
	if len(p.Features) != d || len(p.Weights) != d+1 || len(p.Mean) != d || len(p.Scale) != d {
		return nil, errors.New("decoding adaptive policy: it was fitted with other features; run 'ac3 policy fit' again")
	}
	return &p, nil
}
