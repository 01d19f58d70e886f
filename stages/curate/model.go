package curate

import (
	"context"
	"errors"
	"fmt"

	"github.com/ac3/ac3/pipeline/ledger"
)

// UnitSource reads another stage's stored units of one conversation (turn 0
// means every turn). *ledger.Ledger satisfies it.
type UnitSource interface {
	ConversationUnits(ctx context.Context, stage, convID string, turn int) ([]ledger.Unit, error)
}

// Upstream names the variant of another stage a strategy reads. Variant
// defaults to "llm"; an empty Version accepts any version, which is only
// safe when the stage ran one version (commands pass the version of the
// stage's current plan, so a re-annotation changes the unit keys here too).
type Upstream struct {
	Variant string
	Version string
}

func (u Upstream) variant() string {
	if u.Variant == "" {
		return "llm"
	}
	return u.Variant
}

func (u Upstream) String() string { return u.variant() + "@" + u.Version }

// upstreamUnits are one conversation's units of the upstream variant a
// strategy reads, by turn: those done, and those recorded as failed.
type upstreamUnits struct {
	stage  string
	up     Upstream
	done   map[int]ledger.Unit
	failed map[int]ledger.Unit
}

// unitsByTurn reads stage's units of c for the upstream variant, by turn.
// Units of other variants or versions are ignored.
func unitsByTurn(ctx context.Context, src UnitSource, stage, convID string, up Upstream) (upstreamUnits, error) {
	out := upstreamUnits{stage: stage, up: up, done: map[int]ledger.Unit{}, failed: map[int]ledger.Unit{}}
	us, err := src.ConversationUnits(ctx, stage, convID, 0)
	if err != nil {
		return out, fmt.Errorf("reading %s units of %s: %w", stage, convID, err)
	}
	for _, u := range us {
		if u.Variant != up.variant() || (up.Version != "" && u.Version != up.Version) {
			continue
		}
		switch u.Status {
		case ledger.Done:
			out.done[u.Turn] = u
		case ledger.Failed:
			out.failed[u.Turn] = u
		}
	}
	return out, nil
}

// missing says why turn has no unit to read: the upstream unit failed
// (with its error, and how to run it again), or the upstream stage has not
// reached this turn.
func (u upstreamUnits) missing(turn int) error {
	if f, ok := u.failed[turn]; ok {
		return fmt.Errorf("the %s unit (variant %s) of this turn failed: %s; 'ac3 retry --stage %s' queues it again, then run %s and this stage again",
			u.stage, u.up.variant(), f.Error, u.stage, u.stage)
	}
	return fmt.Errorf("no %s unit (variant %s) for this turn: run the %s stage first", u.stage, u.up.variant(), u.stage)
}

// TurnError reports that one turn could not be curated: a model answer that
// stayed malformed after its retries, a request the endpoint rejected, or a
// missing upstream unit. Contexts returns it with the contexts of the turns
// before it; the stage records those as done and this turn as failed, and
// stops the conversation there, since later turns of a stateful strategy
// depend on this one. `ac3 retry` re-queues it.
type TurnError struct {
	Turn int
	Raw  string // the model's last raw answer, when there was one
	Err  error
}

func (e *TurnError) Error() string { return fmt.Sprintf("turn %d: %v", e.Turn, e.Err) }

func (e *TurnError) Unwrap() error { return e.Err }

// Gate is when an AC3 operator may act.
//
// Floor counts user turns, numbered from 1 as conv.Turn.Index numbers them:
// the operator does not act at turns 1..Floor, and may act from turn
// Floor+1. Floor 0 lets it act at every curated turn; floor 1 skips exactly
// the first user turn (the AC3 paper's Gated Reset on WildChat, LiC actions
// and tau2-bench, Section 3.2); floor 2 skips the first two (its Gated Reset
// elsewhere). Turn 1 has no history, so with the usual first curated turn
// DefaultFrom = 2, floors 0 and 1 give the same contexts (their versions
// still differ). For augment the floor is its warm-up W: it appends from
// turn W+1 on (the paper's CollabLLM runs start augment and rewrite at the
// fourth user turn, floor 3, and reset at the second, floor 1).
//
// Cap applies to the operators that remove content (reset, gated-reset,
// rewrite): it is how many turns of one conversation the operator may
// replace the history at, counted in turn order over the curated turns;
// once reached, the operator stops analyzing and acting for the rest of the
// conversation. 0 means no cap. The paper caps Gated Reset at 3 per
// conversation and runs Reset and Rewrite uncapped.
type Gate struct {
	Floor int
	Cap   int
}

// DefaultGate returns an operator's default gate: gated-reset skips the
// first 2 user turns and resets at most 3 times (the paper's general
// setting; its WildChat, LiC-actions and tau2-bench runs use floor 1);
// augment warms up for 2 turns; reset and rewrite act from the first
// curated turn with no cap.
func DefaultGate(op string) Gate {
	switch op {
	case OpGatedReset:
		return Gate{Floor: 2, Cap: 3}
	case OpAugment:
		return Gate{Floor: 2}
	}
	return Gate{}
}

// Memory is a frozen cheatsheet given to step 2 of every analysis (the
// offline regime of the optional AC3 memory). Hash identifies it in unit
// keys; see analyze.MemoryHash.
type Memory struct {
	Cheatsheet string
	Hash       string
}

func modelByName(name string, opts Options) (Strategy, bool, error) {
	switch name {
	case OpAugment, OpReset, OpGatedReset, OpRewrite:
		if opts.Analyzer == nil {
			return nil, false, nil
		}
		g, ok := opts.Gates[name]
		if !ok {
			g = DefaultGate(name)
		}
		if g.Floor < 0 || g.Cap < 0 {
			return nil, false, fmt.Errorf("building strategy %q: floor and cap must be >= 0 (got %d, %d)", name, g.Floor, g.Cap)
		}
		f, err := formOf(opts)
		if err != nil {
			return nil, false, fmt.Errorf("building strategy %q: %w", name, err)
		}
		return newOperator(name, opts.Analyzer, g, f, opts.Memory), true, nil
	case "sum":
		if opts.Analyzer == nil {
			return nil, false, nil
		}
		return newSummarized(opts.Analyzer), true, nil
	case "adaptive":
		s, err := newAdaptive(opts)
		if errors.Is(err, errAdaptiveInputs) {
			return nil, false, nil
		}
		return s, err == nil, err
	}
	return nil, false, nil
}

// classifyUnit is the part of a classify unit adaptive reads.
type classifyUnit struct {
	Type string   `json:"type"`
	Refs []string `json:"refs"`
}
