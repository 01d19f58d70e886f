package curate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
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
	Fitted *Policy
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

// Contexts builds fc and ao for each turn t >= from and keeps one.
func (s *Adaptive) Contexts(ctx context.Context, c *conv.Conversation, from int, tc *TokenCache) ([]Context, error) {
	fcs, err := FullContext{}.Contexts(ctx, c, from, tc)
	if err != nil {
		return nil, err
	}
	aos, err := s.ao.Contexts(ctx, c, from, tc)
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
	out := make([]Context, 0, len(fcs))
	for k, tr := range sel {
		for ; next < tr.User; next++ {
			if isAssistantSide(c.Messages[next].Role) {
				asst += messageCost(c, tc, next)
			}
		}
		cu, known := types[tr.Index]
		info := Info{Operator: "adaptive", TurnType: cu.Type}
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
			f := TurnFeatures{Turn: tr.Index, FCTokens: fcs[k].Tokens, AOTokens: aos[k].Tokens, AsstTokens: asst, TurnType: cu.Type}
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
