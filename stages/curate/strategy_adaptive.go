package curate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/curate/policy"
)

// ClassifyStage is the stage whose units carry turn types.
const ClassifyStage = "classify"

// Adaptive policies.
const (
	// PolicyOmitOnNewAsk uses ao on turns the classify stage labelled
	// new_ask and fc on every other turn.
	PolicyOmitOnNewAsk = "omit-on-new-ask"
	// PolicyScored keeps fc iff P(fc wins) − λ·Δ ≥ τ, with P from a policy
	// fitted by 'ac3 policy fit' and Δ the assistant-history tokens over
	// their mean in the fitting data.
	PolicyScored = "scored"
)

// AdaptiveOptions configure adaptive. The zero value is PolicyOmitOnNewAsk.
type AdaptiveOptions struct {
	Policy string
	// Lambda and Tau are λ and τ of PolicyScored (defaults 0 and 0.5: keep
	// fc when it is predicted to win at least half the time, with no cost
	// pressure; raise Lambda to trade quality for tokens).
	Lambda, Tau float64
	// Fitted is the model 'ac3 policy fit' stored; PolicyScored needs it.
	Fitted *policy.Policy
}

// classifyUnit is the part of a classify unit adaptive reads.
type classifyUnit struct {
	Type string   `json:"type"`
	Refs []string `json:"refs"`
}

var errAdaptiveInputs = errors.New("adaptive needs its inputs")

// Adaptive chooses, per turn, between fc and ao.
type Adaptive struct {
	opts    AdaptiveOptions
	units   UnitSource
	up      Upstream
	ao      AssistantOmission
	version string
}

func newAdaptive(o Options) (*Adaptive, error) {
	a := o.Adaptive
	if a.Policy == "" {
		a.Policy = PolicyOmitOnNewAsk
	}
	if a.Tau == 0 && a.Policy == PolicyScored {
		a.Tau = 0.5
	}
	s := &Adaptive{opts: a, units: o.Units, up: o.Classify, ao: NewAssistantOmission(o)}
	switch a.Policy {
	case PolicyOmitOnNewAsk:
		if o.Units == nil {
			return nil, errAdaptiveInputs
		}
		s.version = fmt.Sprintf("1;%s;classify=%s;ao=%s", a.Policy, o.Classify, s.ao.Version())
	case PolicyScored:
		if a.Fitted == nil {
			return nil, fmt.Errorf("building strategy adaptive: policy %s needs a fitted policy: run 'ac3 policy fit' after judging fc against ao", PolicyScored)
		}
		s.version = fmt.Sprintf("1;%s;lambda=%g;tau=%g;policy=%s;classify=%s;ao=%s", a.Policy, a.Lambda, a.Tau, a.Fitted.Hash(), o.Classify, s.ao.Version())
	default:
		return nil, fmt.Errorf("building strategy adaptive: unknown policy %q (valid: %s, %s)", a.Policy, PolicyOmitOnNewAsk, PolicyScored)
	}
	return s, nil
}

// Name returns "adaptive".
func (*Adaptive) Name() string { return "adaptive" }

// Version includes the policy, its parameters and fitted model's hash, and
// the classify variant read.
func (s *Adaptive) Version() string { return s.version }

// Contexts builds fc and ao for each turn t >= from and keeps one.
func (s *Adaptive) Contexts(ctx context.Context, c *conv.Conversation, from int, ws *Workspace) ([]curated.Context, error) {
	fcs, err := FullContext{}.Contexts(ctx, c, from, ws)
	if err != nil {
		return nil, err
	}
	aos, err := s.ao.Contexts(ctx, c, from, ws)
	if err != nil {
		return nil, err
	}
	var types map[int]classifyUnit
	var us upstreamUnits
	undecoded := map[int]error{}
	if s.units != nil {
		var err error
		if us, err = unitsByTurn(ctx, s.units, ClassifyStage, c.ID, s.up); err != nil {
			return nil, err
		}
		types = map[int]classifyUnit{}
		for t, u := range us.done {
			var cu classifyUnit
			if err := decodeJSON(u.Output, &cu); err != nil {
				undecoded[t] = fmt.Errorf("decoding %s unit %s: %w", ClassifyStage, u.Key, err)
				continue
			}
			types[t] = cu
		}
	}
	sel, _ := selectTurns(c, from)
	asst := 0
	next := 0
	out := make([]curated.Context, 0, len(fcs))
	for k, tr := range sel {
		for ; next < tr.User; next++ {
			if isAssistantSide(c.Messages[next].Role) {
				asst += messageCost(c, ws, next)
			}
		}
		cu, known := types[tr.Index]
		info := curated.Info{Operator: "adaptive", TurnType: cu.Type}
		useAO := false
		switch s.opts.Policy {
		case PolicyOmitOnNewAsk:
			if !known && tr.Index >= 2 {
				err := undecoded[tr.Index]
				switch {
				case err != nil:
				case s.units == nil:
					err = fmt.Errorf("no %s unit (variant %s) for this turn: run the classify stage first", ClassifyStage, s.up.variant())
				default:
					err = us.missing(tr.Index)
				}
				return out, &TurnError{Turn: tr.Index, Err: err}
			}
			useAO = cu.Type == "new_ask"
		case PolicyScored:
			f := policy.TurnFeatures{Turn: tr.Index, FCTokens: fcs[k].Tokens, AOTokens: aos[k].Tokens, AsstTokens: asst, TurnType: cu.Type}
			f.RefsAny, f.RefsAssistant = refsFlags(cu.Refs)
			score := s.opts.Fitted.Score(f, s.opts.Lambda)
			info.Scored, info.Score = true, score
			useAO = score < s.opts.Tau
		}
		x := fcs[k]
		info.Action = "fc"
		if useAO {
			x = aos[k]
			info.Action, info.GateOpen = "ao", true
		}
		x.Strategy, x.Info = "adaptive", info
		out = append(out, x)
	}
	return out, nil
}

// refsFlags reads classify refs ("1a", "2u"; none means self-contained).
func refsFlags(refs []string) (anyRef, assistant bool) {
	for _, r := range refs {
		r = strings.TrimSpace(r)
		if r == "" || r == "0" {
			continue
		}
		anyRef = true
		if strings.HasSuffix(r, "a") {
			assistant = true
		}
	}
	return anyRef, assistant
}

func decodeJSON(b []byte, v any) error { return json.Unmarshal(b, v) }

// FeaturesOf computes the scored policy's features for turn t of c, as
// adaptive computes them while curating; classify is the turn's classify
// unit output (nil when unknown). 'ac3 policy fit' uses it on judged turns.
func FeaturesOf(ctx context.Context, c *conv.Conversation, t int, ws *Workspace, classify []byte) (policy.TurnFeatures, error) {
	f := policy.TurnFeatures{Turn: t}
	fcs, err := FullContext{}.Contexts(ctx, c, t, ws)
	if err != nil || len(fcs) == 0 {
		return f, fmt.Errorf("computing features of turn %d of %s: no such turn", t, c.ID)
	}
	aos, err := NewAssistantOmission(Options{}).Contexts(ctx, c, t, ws)
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
			f.AsstTokens += messageCost(c, ws, i)
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

// PolicyFeatures computes the scored policy's features of judged turns for
// policy.FitRun, as FeaturesOf does, with one workspace per conversation
// counting with counter. classify names the classify variant whose turn
// types and references become features (zero when the run has none: those
// features are then zero); its units are read from units.
func PolicyFeatures(units UnitSource, classify Upstream, counter *tokens.Counter) policy.FeatureFunc {
	workspaces := map[string]*Workspace{}
	return func(ctx context.Context, c *conv.Conversation, t int) (policy.TurnFeatures, bool, error) {
		ws, ok := workspaces[c.ID]
		if !ok {
			ws = NewWorkspace(c, counter)
			workspaces[c.ID] = ws
		}
		var cls []byte
		if classify.Variant != "" {
			us, err := units.ConversationUnits(ctx, ClassifyStage, c.ID, t)
			if err != nil {
				return policy.TurnFeatures{}, false, err
			}
			for _, u := range us {
				if u.Variant == classify.Variant && u.Version == classify.Version && u.Status == ledger.Done {
					cls = u.Output
				}
			}
		}
		f, err := FeaturesOf(ctx, c, t, ws, cls)
		if err != nil {
			return f, false, nil
		}
		return f, true, nil
	}
}
