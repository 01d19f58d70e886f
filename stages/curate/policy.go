package curate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/ac3/ac3/pipeline/conv"
)

// Policy is the scored adaptive policy: a logistic regression predicting
// P(fc wins over ao) for a turn, fitted by FitPolicy on the run's own judge
// results, and the mean assistant-history length Δ is measured against.
type Policy struct {
	Features []string  `json:"features"`
	Weights  []float64 `json:"weights"` // bias first, then one per feature
	Mean     []float64 `json:"mean"`    // standardization of each feature
	Scale    []float64 `json:"scale"`
	// MeanAsstTokens is the mean assistant-history length over the fitting
	// turns (l̄); Δ = AsstTokens / MeanAsstTokens.
	MeanAsstTokens float64 `json:"mean_asst_tokens"`
	N              int     `json:"n"`
	FCWinRate      float64 `json:"fc_win_rate"`
	TrainAccuracy  float64 `json:"train_accuracy"`
}

// PolicyFeatures names the features FitPolicy uses: the round, the log
// sizes of the two contexts and of the assistant history, the assistant
// share of the full context, the turn type (new_ask and feedback against
// no_feedback or unknown), and whether the user's turn refers back at all
// and to an assistant turn in particular (from the classify stage's refs).
func PolicyFeatures() []string {
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

// PolicyExample is one judged turn: its features and the judge's verdict
// of fc against ao (1 fc won, 0 ao won, 0.5 a tie).
type PolicyExample struct {
	TurnFeatures
	FCWins float64
}

// MinPolicyExamples is the fewest judged turns FitPolicy accepts.
const MinPolicyExamples = 20

// FitPolicy fits the scored policy by L2-regularized logistic regression
// (ties count half to each side) on standardized features, with a fixed
// number of full-batch gradient steps, so the same examples always give the
// same policy.
func FitPolicy(ex []PolicyExample) (Policy, error) {
	if len(ex) < MinPolicyExamples {
		return Policy{}, fmt.Errorf("fitting the adaptive policy: %d judged fc-vs-ao turns, need at least %d", len(ex), MinPolicyExamples)
	}
	names := PolicyFeatures()
	d := len(names)
	X := make([][]float64, len(ex))
	y := make([]float64, len(ex))
	p := Policy{Features: names, Mean: make([]float64, d), Scale: make([]float64, d), N: len(ex)}
	for i, e := range ex {
		X[i] = featureVector(e.TurnFeatures)
		y[i] = e.FCWins
		p.MeanAsstTokens += float64(e.AsstTokens)
		p.FCWinRate += e.FCWins
	}
	p.MeanAsstTokens /= float64(len(ex))
	p.FCWinRate /= float64(len(ex))
	for j := range d {
		for i := range X {
			p.Mean[j] += X[i][j]
		}
		p.Mean[j] /= float64(len(X))
		for i := range X {
			p.Scale[j] += (X[i][j] - p.Mean[j]) * (X[i][j] - p.Mean[j])
		}
		p.Scale[j] = math.Sqrt(p.Scale[j] / float64(len(X)))
		if p.Scale[j] == 0 {
			p.Scale[j] = 1
		}
	}
	Z := make([][]float64, len(X))
	for i := range X {
		Z[i] = p.standardize(X[i])
	}
	w := make([]float64, d+1)
	const (
		steps = 3000
		rate  = 0.5
		l2    = 0.01
	)
	grad := make([]float64, d+1)
	for range steps {
		clear(grad)
		for i, z := range Z {
			r := sigmoid(dot(w, z)) - y[i]
			grad[0] += r
			for j, v := range z {
				grad[j+1] += r * v
			}
		}
		for j := range w {
			g := grad[j] / float64(len(Z))
			if j > 0 {
				g += l2 * w[j]
			}
			w[j] -= rate * g
		}
	}
	p.Weights = w
	correct := 0.0
	for i, z := range Z {
		pred := sigmoid(dot(w, z))
		if (pred >= 0.5) == (y[i] >= 0.5) {
			correct++
		}
	}
	p.TrainAccuracy = correct / float64(len(Z))
	return p, nil
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

// DecodePolicy reads a policy stored as JSON and checks its shape.
func DecodePolicy(b []byte) (*Policy, error) {
	var p Policy
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("decoding adaptive policy: %w", err)
	}
	d := len(PolicyFeatures())
	if len(p.Features) != d || len(p.Weights) != d+1 || len(p.Mean) != d || len(p.Scale) != d {
		return nil, errors.New("decoding adaptive policy: it was fitted with other features; run 'ac3 policy fit' again")
	}
	return &p, nil
}

func decodeJSON(b []byte, v any) error { return json.Unmarshal(b, v) }

// FeaturesOf computes the scored policy's features for turn t of c, as
// adaptive computes them while curating; classify is the turn's classify
// unit output (nil when unknown). 'ac3 policy fit' uses it on judged turns.
func FeaturesOf(ctx context.Context, c *conv.Conversation, t int, tc *TokenCache, classify []byte) (TurnFeatures, error) {
	f := TurnFeatures{Turn: t}
	fcs, err := FullContext{}.Contexts(ctx, c, t, tc)
	if err != nil || len(fcs) == 0 {
		return f, fmt.Errorf("computing features of turn %d of %s: no such turn", t, c.ID)
	}
	aos, err := NewAssistantOmission(Options{}).Contexts(ctx, c, t, tc)
	if err != nil || len(aos) == 0 {
		return f, fmt.Errorf("computing features of turn %d of %s: no such turn", t, c.ID)
	}
	f.FCTokens, f.AOTokens = fcs[0].Tokens, aos[0].Tokens
	user := -1
	for _, tr := range c.Turns() {
		if tr.Index == t {
			user = tr.User
		}
	}
	for i := 0; i < user; i++ {
		if isAssistantSide(c.Messages[i].Role) {
			f.AsstTokens += messageCost(c, tc, i)
		}
	}
	if classify != nil {
		var cu classifyUnit
		if err := json.Unmarshal(classify, &cu); err == nil {
			f.TurnType = cu.Type
			f.RefsAny, f.RefsAssistant = refsFlags(cu.Refs)
		}
	}
	return f, nil
}
