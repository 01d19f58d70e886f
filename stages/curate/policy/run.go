package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
)

// MetaKey is the settings key of the fitted adaptive policy (JSON).
const MetaKey = "ac3.policy"

// MetaReader reads a run's settings by key. *ledger.Ledger satisfies it.
type MetaReader interface {
	Meta(ctx context.Context, key string) (string, bool, error)
}

// Load reads the run's fitted policy; nil when it has none.
func Load(ctx context.Context, store MetaReader) (*Policy, error) {
	raw, ok, err := store.Meta(ctx, MetaKey)
	if err != nil || !ok {
		return nil, err
	}
	return Decode([]byte(raw))
}

// ErrTooFewJudged means the run has too few judged fc-vs-ao turns to fit
// the policy.
var ErrTooFewJudged = errors.New("too few judged fc-vs-ao turns")

// JudgedTurn is one turn the run's judge compared fc with ao on: the share
// of its comparisons fc won (a tie counts half; Fit turns the share into a
// win, a loss or a tie).
type JudgedTurn struct {
	Conv   string
	Turn   int
	FCWins float64
}

// Store is what fitting reads and writes. *ledger.Ledger satisfies it.
type Store interface {
	MetaReader
	SetMeta(ctx context.Context, key, value string) error
	Conversation(ctx context.Context, id string) (ledger.Stored, bool, error)
}

// FeatureFunc computes the features of turn t of conversation c as the
// adaptive strategy computes them while curating (curate.PolicyFeatures
// makes one). ok is false for a turn it has no features of, which the fit
// leaves out; an error stops the fit.
type FeatureFunc func(ctx context.Context, c *conv.Conversation, t int) (f TurnFeatures, ok bool, err error)

// FitRun fits the scored policy on judged turns of the run (see Fit, with
// o) and stores it under MetaKey. features computes each turn's features.
func FitRun(ctx context.Context, store Store, judged []JudgedTurn, features FeatureFunc, o FitOptions) (Policy, error) {
	if len(judged) < MinExamples {
		return Policy{}, fmt.Errorf("fitting the adaptive policy: %w: %d, need at least %d", ErrTooFewJudged, len(judged), MinExamples)
	}
	var ex []Example
	convs := map[string]*conv.Conversation{}
	for _, j := range judged {
		c, ok := convs[j.Conv]
		if !ok {
			s, found, err := store.Conversation(ctx, j.Conv)
			if err != nil {
				return Policy{}, err
			}
			if !found {
				continue
			}
			c = s.Conv
			convs[j.Conv] = c
		}
		f, ok, err := features(ctx, c, j.Turn)
		if err != nil {
			return Policy{}, err
		}
		if !ok {
			continue
		}
		ex = append(ex, Example{Conv: j.Conv, TurnFeatures: f, FCWins: j.FCWins})
	}
	p, err := Fit(ex, o)
	if err != nil {
		return Policy{}, err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return Policy{}, err
	}
	if err := store.SetMeta(ctx, MetaKey, string(b)); err != nil {
		return Policy{}, err
	}
	return p, nil
}
