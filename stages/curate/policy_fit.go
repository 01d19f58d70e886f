package curate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/tokens"
)

// MetaPolicy is the settings key of the fitted adaptive policy (JSON).
const MetaPolicy = "ac3.policy"

// LoadPolicy reads the run's fitted policy; nil when it has none.
func LoadPolicy(ctx context.Context, store MetaReader) (*Policy, error) {
	raw, ok, err := store.Meta(ctx, MetaPolicy)
	if err != nil || !ok {
		return nil, err
	}
	return DecodePolicy([]byte(raw))
}

// ErrTooFewJudged means the run has too few judged fc-vs-ao turns to fit
// the policy.
var ErrTooFewJudged = errors.New("too few judged fc-vs-ao turns")

// JudgedTurn is one turn the run's judge compared fc with ao on: the share
// of its comparisons fc won (a tie counts half; FitPolicy turns the share
// into a win, a loss or a tie).
type JudgedTurn struct {
	Conv   string
	Turn   int
	FCWins float64
}

// PolicyStore is what fitting reads and writes. *ledger.Ledger satisfies
// it.
type PolicyStore interface {
	MetaStore
	UnitSource
	Conversation(ctx context.Context, id string) (ledger.Stored, bool, error)
}

// FitRunPolicy fits the scored policy on judged turns of the run (see
// FitPolicy, with o) and stores it under MetaPolicy. Features are computed as
// adaptive computes them while curating, with counter; classify names the
// classify variant whose turn types and references become features (zero
// when the run has none: those features are then zero).
func FitRunPolicy(ctx context.Context, store PolicyStore, judged []JudgedTurn, classify Upstream, counter *tokens.Counter, o PolicyFitOptions) (Policy, error) {
	if len(judged) < MinPolicyExamples {
		return Policy{}, fmt.Errorf("fitting the adaptive policy: %w: %d, need at least %d", ErrTooFewJudged, len(judged), MinPolicyExamples)
	}
	var ex []PolicyExample
	convs := map[string]*conv.Conversation{}
	caches := map[string]*TokenCache{}
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
			convs[j.Conv], caches[j.Conv] = c, NewTokenCache(c, counter)
		}
		var cls []byte
		if classify.Variant != "" {
			us, err := store.ConversationUnits(ctx, ClassifyStage, j.Conv, j.Turn)
			if err != nil {
				return Policy{}, err
			}
			for _, u := range us {
				if u.Variant == classify.Variant && u.Version == classify.Version && u.Status == ledger.Done {
					cls = u.Output
				}
			}
		}
		f, err := FeaturesOf(ctx, c, j.Turn, caches[j.Conv], cls)
		if err != nil {
			continue
		}
		ex = append(ex, PolicyExample{Conv: j.Conv, TurnFeatures: f, FCWins: j.FCWins})
	}
	p, err := FitPolicy(ex, o)
	if err != nil {
		return Policy{}, err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return Policy{}, err
	}
	if err := store.SetMeta(ctx, MetaPolicy, string(b)); err != nil {
		return Policy{}, err
	}
	return p, nil
}
