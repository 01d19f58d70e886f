package policy

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/ac3/ac3/pipeline/stats"
)

// Policy is the scored adaptive policy: a logistic regression predicting
// P(fc wins over ao) for a turn, fitted by Fit on the run's own judge
// results, and the mean assistant-history length Δ is measured against.
type Policy struct {
	// FeatureSet is FeaturesAC3 (empty in a policy stored by an older ac3)
	// or FeaturesPaper; Features names each feature of the set.
	FeatureSet string    `json:"feature_set,omitempty"`
	Features   []string  `json:"features"`
	Weights    []float64 `json:"weights"` // bias first, then one per feature, on standardized features
	Mean       []float64 `json:"mean"`    // standardization of each feature
	Scale      []float64 `json:"scale"`
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
	// Folds are the cross-validation's fits at the chosen strength, and
	// ConvFold the fold each fitting conversation was held out in. A
	// conversation the policy was fitted on is scored by the fold fit that
	// did not see it (For), so the adaptive arm's results on it are out of
	// sample; empty when the folds went by turn.
	Folds    []FoldWeights  `json:"folds,omitempty"`
	ConvFold map[string]int `json:"conv_fold,omitempty"`
	// PromptPCA and HistoryPCA reduce a turn's prompt and history
	// embeddings to their leading principal components (FeaturesPaper),
	// fitted on every fitting turn; Embedder names the model that embedded
	// them, which curating must use too.
	PromptPCA  *stats.PCA `json:"prompt_pca,omitempty"`
	HistoryPCA *stats.PCA `json:"history_pca,omitempty"`
	Embedder   string     `json:"embedder,omitempty"`
	// EmbedMaxTokens is where each embedded text was cut (tokens of the
	// run's tokenizer); curating cuts at the same place.
	EmbedMaxTokens int `json:"embed_max_tokens,omitempty"`
}

// Feature sets.
const (
	// FeaturesAC3 are ours: the round, log token sizes of the two contexts
	// and of the assistant history, the assistant share, the turn type and
	// classify's references (FeatureNames). No model is needed.
	FeaturesAC3 = "ac3"
	// FeaturesPaper are Huang et al.'s (App. A.15): the round, the
	// conversation's rounds, the characters of user and of assistant
	// messages in the context, the prompt type one-hot, and the prompt's
	// and the history's embeddings reduced to DefaultPCs principal
	// components each. Needs the embedder role.
	FeaturesPaper = "paper"
)

// DefaultPCs is how many principal components of each embedding
// FeaturesPaper keeps: the paper's 20 (it tried 10, 20, 40 and 80).
const DefaultPCs = 20

// DefaultEmbedMaxTokens is how much of a prompt or history the paper's
// features embed, counted with the run's tokenizer: within the 8,191-token
// input of OpenAI's text-embedding-3 models (the paper's), with room for
// the two tokenizers' difference.
const DefaultEmbedMaxTokens = 8000

// ParseFeatureSet checks a feature set's name ("" is FeaturesAC3).
func ParseFeatureSet(s string) (string, error) {
	switch s {
	case "", FeaturesAC3:
		return FeaturesAC3, nil
	case FeaturesPaper:
		return s, nil
	}
	return "", fmt.Errorf("unknown feature set %q (valid: %s, %s)", s, FeaturesAC3, FeaturesPaper)
}

// Paper reports whether p uses FeaturesPaper, so scoring a turn needs its
// embeddings.
func (p *Policy) Paper() bool { return p.FeatureSet == FeaturesPaper }

// FoldWeights is one fold fit: weights (bias first) on its own
// standardisation.
type FoldWeights struct {
	Weights []float64 `json:"weights"`
	Mean    []float64 `json:"mean"`
	Scale   []float64 `json:"scale"`
}

// For is the policy that scores conversation conv: the fold fit that held
// conv out when the policy was fitted on it, else p itself.
func (p *Policy) For(conv string) *Policy {
	f, ok := p.ConvFold[conv]
	if !ok || f < 0 || f >= len(p.Folds) {
		return p
	}
	q := *p
	q.Weights, q.Mean, q.Scale = p.Folds[f].Weights, p.Folds[f].Mean, p.Folds[f].Scale
	q.Folds, q.ConvFold = nil, nil
	return &q
}

// Figures are what the policy's rule "keep fc iff P(fc wins) ≥ τ" (no cost
// term) would have given on the judged turns, read off the judge's fc-vs-ao
// verdicts: where it keeps fc the turn is fc's own answer (a tie with fc);
// where it drops the assistant history, ao's verdict against fc counts.
type Figures struct {
	Turns int `json:"turns"`
	// FCShare is the share of turns it keeps fc on.
	FCShare float64 `json:"fc_share"`
	// WinRateVsFC is its win rate against always-fc (a tie counts half,
	// 0.5 is parity); QualityRetained is that over fc's 0.5, Huang et al.'s
	// "share of full context's performance".
	WinRateVsFC     float64 `json:"win_rate_vs_fc"`
	QualityRetained float64 `json:"quality_retained"`
	// TokenShare is its context tokens over always-fc's.
	TokenShare float64 `json:"token_share"`
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
	// InSample is the rule at Tau on the turns it was fitted on, scored by
	// the fitted weights; CrossFitted the same with each turn scored by the
	// fold fit that held it out, the honest figure (Huang et al. report
	// the in-sample one).
	InSample    Figures `json:"in_sample"`
	CrossFitted Figures `json:"cross_fitted"`
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
	// Rounds is the conversation's number of user turns; UserChars and
	// AsstChars the characters of the user messages up to and with u_t
	// and of the assistant-side messages before it (FeaturesPaper).
	Rounds, UserChars, AsstChars int
	// PromptText and HistoryText are what FeaturesPaper embeds (see
	// curate.EmbedTexts); Prompt and History their embeddings.
	PromptText, HistoryText string
	Prompt, History         []float32
}

// FeatureNames names the features Fit uses: the round, the log
// sizes of the two contexts and of the assistant history, the assistant
// share of the full context, the turn type (new_ask and feedback against
// no_feedback or unknown), and whether the user's turn refers back at all
// and to an assistant turn in particular (from the classify stage's refs).
func FeatureNames() []string {
	return []string{"round", "log_fc_tokens", "log_ao_tokens", "log_asst_tokens", "asst_share", "type_new_ask", "type_feedback", "refs_any", "refs_assistant"}
}

// paperNames names FeaturesPaper's features with the given numbers of
// principal components: A.15's numeric and one-hot features under its
// names, then prompt_pc1… and history_pc1….
func paperNames(promptPCs, historyPCs int) []string {
	out := []string{"round_num", "total_rounds", "context_length_user", "context_length_asst", "type_new_ask", "type_no_feedback", "type_feedback"}
	for i := range promptPCs {
		out = append(out, fmt.Sprintf("prompt_pc%d", i+1))
	}
	for i := range historyPCs {
		out = append(out, fmt.Sprintf("history_pc%d", i+1))
	}
	return out
}

func b01(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// vector is f's features under p's feature set; an error when f lacks an
// embedding the set needs, or has one of another dimension.
func (p *Policy) vector(f TurnFeatures) ([]float64, error) {
	if !p.Paper() {
		share := 0.0
		if f.FCTokens > 0 {
			share = float64(f.AsstTokens) / float64(f.FCTokens)
		}
		return []float64{
			float64(f.Turn), math.Log1p(float64(f.FCTokens)), math.Log1p(float64(f.AOTokens)), math.Log1p(float64(f.AsstTokens)), share,
			b01(f.TurnType == "new_ask"), b01(f.TurnType == "feedback"), b01(f.RefsAny), b01(f.RefsAssistant),
		}, nil
	}
	x := []float64{float64(f.Turn), float64(f.Rounds), float64(f.UserChars), float64(f.AsstChars),
		b01(f.TurnType == "new_ask"), b01(f.TurnType == "no_feedback"), b01(f.TurnType == "feedback")}
	for _, e := range []struct {
		name string
		pca  *stats.PCA
		v    []float32
	}{{"prompt", p.PromptPCA, f.Prompt}, {"history", p.HistoryPCA, f.History}} {
		if e.pca == nil {
			return nil, fmt.Errorf("the policy has no %s components", e.name)
		}
		pcs := e.pca.Project(e.v)
		if pcs == nil {
			return nil, fmt.Errorf("turn %d: %s embedding of %d dimensions, the policy was fitted on %d (is the embedder the fit's, %s?)", f.Turn, e.name, len(e.v), len(e.pca.Mean), p.Embedder)
		}
		x = append(x, pcs...)
	}
	return x, nil
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
	// Features is the feature set (FeaturesAC3 when empty); PCs the
	// principal components FeaturesPaper keeps of each embedding
	// (DefaultPCs when 0); Embedder names the model that embedded the
	// examples and EmbedMaxTokens where their texts were cut (both stored
	// in the policy).
	Features       string
	PCs            int
	Embedder       string
	EmbedMaxTokens int
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
	set, err := ParseFeatureSet(o.Features)
	if err != nil {
		return Policy{}, fmt.Errorf("fitting the adaptive policy: %w", err)
	}
	X := make([][]float64, len(ex))
	y := make([]stats.Outcome, len(ex))
	groups := make([]string, len(ex))
	convs := map[string]bool{}
	fit := &FitReport{Method: "l1-logistic", Ties: o.Ties.String(), Classes: stats.BalancedClasses.String(),
		Metric: stats.MetricF1.String(), Folds: o.Folds, FoldsBy: "conversation", Seed: o.Seed}
	p := Policy{FeatureSet: set, Features: FeatureNames(), N: len(ex), Fit: fit}
	if set == FeaturesPaper {
		if err := p.fitPCA(ex, cmp.Or(o.PCs, DefaultPCs), o.Seed); err != nil {
			return Policy{}, fmt.Errorf("fitting the adaptive policy: %w", err)
		}
		p.Embedder, p.EmbedMaxTokens = o.Embedder, o.EmbedMaxTokens
	}
	for i, e := range ex {
		if X[i], err = p.vector(e.TurnFeatures); err != nil {
			return Policy{}, fmt.Errorf("fitting the adaptive policy on %s: %w", e.Conv, err)
		}
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
	in := make([]float64, len(ex))
	for i, e := range ex {
		in[i] = p.PFCWins(e.TurnFeatures)
	}
	fit.InSample, fit.CrossFitted = figures(ex, in, tau), figures(ex, m.OOF, tau)
	if fit.FoldsBy == "conversation" {
		p.ConvFold = map[string]int{}
		for i, e := range ex {
			if m.RowFold[i] >= 0 {
				p.ConvFold[e.Conv] = m.RowFold[i]
			}
		}
		for _, f := range m.FoldFits {
			p.Folds = append(p.Folds, FoldWeights{Weights: append([]float64{f.Intercept}, f.Coef...), Mean: f.Mean, Scale: f.Scale})
		}
	}
	return p, nil
}

// fitPCA fits FeaturesPaper's principal components of the examples'
// prompt and history embeddings (unsupervised, on every example: the
// held-out folds' embeddings are in it, their verdicts are not) and names
// the features.
func (p *Policy) fitPCA(ex []Example, k int, seed uint64) error {
	prompts, histories := make([][]float32, len(ex)), make([][]float32, len(ex))
	for i, e := range ex {
		if e.Prompt == nil || e.History == nil {
			return fmt.Errorf("turn %d of %s has no embeddings (the paper's features need the embedder role)", e.Turn, e.Conv)
		}
		prompts[i], histories[i] = e.Prompt, e.History
	}
	pp, err := stats.FitPCA(prompts, k, seed)
	if err != nil {
		return fmt.Errorf("prompt embeddings: %w", err)
	}
	hp, err := stats.FitPCA(histories, k, seed)
	if err != nil {
		return fmt.Errorf("history embeddings: %w", err)
	}
	p.PromptPCA, p.HistoryPCA = &pp, &hp
	p.Features = paperNames(len(pp.Components), len(hp.Components))
	return nil
}

// figures scores the rule "keep fc iff prob ≥ tau" on the examples with a
// probability (NaN: left out).
func figures(ex []Example, prob []float64, tau float64) Figures {
	var f Figures
	var win, fcTok, tok float64
	for i, e := range ex {
		if math.IsNaN(prob[i]) {
			continue
		}
		f.Turns++
		fcTok += float64(e.FCTokens)
		if prob[i] >= tau {
			f.FCShare++
			win += 0.5
			tok += float64(e.FCTokens)
			continue
		}
		win += 1 - e.FCWins // ao's share against fc
		tok += float64(e.AOTokens)
	}
	if f.Turns == 0 {
		return f
	}
	n := float64(f.Turns)
	f.FCShare /= n
	f.WinRateVsFC = win / n
	f.QualityRetained = f.WinRateVsFC / 0.5
	if fcTok > 0 {
		f.TokenShare = tok / fcTok
	}
	return f
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
	if len(x) != len(p.Mean) {
		return nil
	}
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

// PFCWins is the predicted probability that fc wins over ao on a turn; NaN
// when the turn lacks a feature the policy needs (PFCWinsErr says which).
func (p *Policy) PFCWins(f TurnFeatures) float64 {
	v, err := p.PFCWinsErr(f)
	if err != nil {
		return math.NaN()
	}
	return v
}

// PFCWinsErr is PFCWins, with an error when the turn lacks a feature the
// policy needs (an embedding, or one of another dimension).
func (p *Policy) PFCWinsErr(f TurnFeatures) (float64, error) {
	x, err := p.vector(f)
	if err != nil {
		return 0, err
	}
	return sigmoid(dot(p.Weights, p.standardize(x))), nil
}

// Score is P(fc wins) − λ·Δ, Δ the turn's assistant-history tokens over
// MeanAsstTokens; an error as PFCWinsErr's.
func (p *Policy) Score(f TurnFeatures, lambda float64) (float64, error) {
	delta := 0.0
	if p.MeanAsstTokens > 0 {
		delta = float64(f.AsstTokens) / p.MeanAsstTokens
	}
	pr, err := p.PFCWinsErr(f)
	return pr - lambda*delta, err
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
	want := FeatureNames()
	switch p.FeatureSet {
	case "", FeaturesAC3:
	case FeaturesPaper:
		if p.PromptPCA == nil || p.HistoryPCA == nil {
			return nil, errors.New("decoding adaptive policy: the paper's features without their principal components; run 'ac3 policy fit' again")
		}
		want = paperNames(len(p.PromptPCA.Components), len(p.HistoryPCA.Components))
	default:
		return nil, fmt.Errorf("decoding adaptive policy: unknown feature set %q; run 'ac3 policy fit' again", p.FeatureSet)
	}
	d := len(want)
	if !slices.Equal(p.Features, want) || len(p.Weights) != d+1 || len(p.Mean) != d || len(p.Scale) != d {
		return nil, errors.New("decoding adaptive policy: it was fitted with other features; run 'ac3 policy fit' again")
	}
	for _, f := range p.Folds {
		if len(f.Weights) != d+1 || len(f.Mean) != d || len(f.Scale) != d {
			return nil, errors.New("decoding adaptive policy: a fold fit has other features; run 'ac3 policy fit' again")
		}
	}
	return &p, nil
}
