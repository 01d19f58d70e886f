package policy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

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

// Embedder returns the embeddings of texts, one per text in order.
type Embedder func(ctx context.Context, texts []string) ([][]float32, error)

// embedChunk is how many turns' texts FitRun embeds in one Embedder call
// (two texts a turn): the calls are spread over the endpoint's limits, and
// the texts of only so many turns are held at once.
const embedChunk = 128

// FitRun fits the scored policy on judged turns of the run (see Fit, with
// o) and stores it under MetaKey. features computes each turn's features;
// with FeaturesPaper, embed embeds their texts.
func FitRun(ctx context.Context, store Store, judged []JudgedTurn, features FeatureFunc, embed Embedder, o FitOptions) (Policy, error) {
	if len(judged) < MinExamples {
		return Policy{}, fmt.Errorf("fitting the adaptive policy: %w: %d, need at least %d", ErrTooFewJudged, len(judged), MinExamples)
	}
	set, err := ParseFeatureSet(o.Features)
	if err != nil {
		return Policy{}, err
	}
	if set == FeaturesPaper && embed == nil {
		return Policy{}, errors.New("fitting the adaptive policy on the paper's features: no embedder (bind the embedder role in --config)")
	}
	var ex []Example
	embedded := 0
	embedRest := func() error {
		if set != FeaturesPaper || embedded == len(ex) {
			return nil
		}
		texts := make([]string, 0, 2*(len(ex)-embedded))
		for _, e := range ex[embedded:] {
			texts = append(texts, e.PromptText, e.HistoryText)
		}
		vs, err := embed(ctx, texts)
		if err != nil {
			return fmt.Errorf("fitting the adaptive policy: embedding the prompts and histories of %d turns: %w", len(ex)-embedded, err)
		}
		if len(vs) != len(texts) {
			return fmt.Errorf("fitting the adaptive policy: %d embeddings for %d texts", len(vs), len(texts))
		}
		for i := range ex[embedded:] {
			e := &ex[embedded+i]
			e.Prompt, e.History = vs[2*i], vs[2*i+1]
			e.PromptText, e.HistoryText = "", ""
		}
		embedded = len(ex)
		return nil
	}
	// A conversation at a time: its judged turns together, so only the
	// current one is held.
	judged = slices.Clone(judged)
	slices.SortStableFunc(judged, func(a, b JudgedTurn) int { return cmp.Or(cmp.Compare(a.Conv, b.Conv), cmp.Compare(a.Turn, b.Turn)) })
	var c *conv.Conversation
	for _, j := range judged {
		if c == nil || c.ID != j.Conv {
			s, found, err := store.Conversation(ctx, j.Conv)
			if err != nil {
				return Policy{}, err
			}
			if !found {
				c = nil
				continue
			}
			c = s.Conv
		}
		f, ok, err := features(ctx, c, j.Turn)
		if err != nil {
			return Policy{}, err
		}
		if !ok {
			continue
		}
		ex = append(ex, Example{Conv: j.Conv, TurnFeatures: f, FCWins: j.FCWins})
		if len(ex)-embedded == embedChunk {
			if err := embedRest(); err != nil {
				return Policy{}, err
			}
		}
	}
	if err := embedRest(); err != nil {
		return Policy{}, err
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
