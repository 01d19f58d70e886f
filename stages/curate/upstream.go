package curate

import (
	"context"
	"fmt"

	"github.com/ac3/ac3/pipeline/ledger"
)

// The strategies that read another stage's units (the +constraints
// overlay, adaptive) name the variant they read with Upstream and read it
// through UnitSource.

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

// PickUpstream picks the variant of another stage a strategy reads, from
// that stage's current plan: the one asked for, else llm, else heuristic.
// ok is false when the plan has none of them (the stage has not run, or not
// with the variant asked for).
func PickUpstream(plan []ledger.Variant, want string) (Upstream, bool) {
	for _, pref := range []string{want, "llm", "heuristic"} {
		if pref == "" {
			continue
		}
		for _, v := range plan {
			if v.Name == pref {
				return Upstream{Variant: v.Name, Version: v.Version}, true
			}
		}
		if want != "" {
			break
		}
	}
	return Upstream{}, false
}

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
