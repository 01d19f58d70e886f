package curate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/curate/curated"
)

// ConstraintsStage is the stage whose units carry the session-constraint
// registry.
const ConstraintsStage = "constraints"

// Constraint is one session constraint as the constraints stage stores it.
type Constraint struct {
	Text     string `json:"text"`
	Evidence string `json:"evidence"`
	Type     string `json:"type"`
	Turn     int    `json:"turn"`
}

// constraintsUnit is the part of a constraints unit the overlay reads: the
// registry of every constraint in force as of the unit's turn.
type constraintsUnit struct {
	Registry []Constraint `json:"registry"`
}

// ConstraintsText is the fixed, clearly marked block the overlay appends:
// one numbered line per constraint, in registry order, with its type.
func ConstraintsText(reg []Constraint) string {
	var b strings.Builder
	b.WriteString("[Session constraints: instructions the user gave earlier in this conversation that still apply to every reply]\n")
	for i, c := range reg {
		fmt.Fprintf(&b, "%d. %s", i+1, strings.TrimSpace(c.Text))
		if c.Type != "" {
			fmt.Fprintf(&b, " (%s)", c.Type)
		}
		b.WriteByte('\n')
	}
	b.WriteString("[End of session constraints]")
	return b.String()
}

// constraintsOverlay is any strategy with "+constraints".
type constraintsOverlay struct {
	inner Strategy
	units UnitSource
	up    Upstream
}

// WithConstraints returns inner with the session-constraint registry as of
// turn t appended to every context: ConstraintsText joined to the context's
// last message, which is always u_t or text joined to it. Because it is
// added after the inner strategy built the context, it is there after a
// reset or a rewrite too, which is the point: those drop the history in
// which the user stated the constraints. A turn with an empty registry gets
// no block. The registry is read from the constraints stage's units (variant
// and version up); a missing unit fails the turn.
func WithConstraints(inner Strategy, units UnitSource, up Upstream) Strategy {
	return &constraintsOverlay{inner: inner, units: units, up: up}
}

func (s *constraintsOverlay) Name() string { return s.inner.Name() + "+constraints" }

func (s *constraintsOverlay) Version() string {
	return s.inner.Version() + ";constraints=" + s.up.String() + ";ct1"
}

func (s *constraintsOverlay) Contexts(ctx context.Context, c *conv.Conversation, from int, ws *Workspace) ([]curated.Context, error) {
	xs, ierr := s.inner.Contexts(ctx, c, from, ws)
	if ierr != nil {
		if _, ok := ierr.(*TurnError); !ok {
			return nil, ierr
		}
	}
	units, err := unitsByTurn(ctx, s.units, ConstraintsStage, c.ID, s.up)
	if err != nil {
		return nil, err
	}
	out := make([]curated.Context, 0, len(xs))
	for _, x := range xs {
		u, ok := units.done[x.Turn]
		if !ok {
			return out, &TurnError{Turn: x.Turn, Err: units.missing(x.Turn)}
		}
		var cu constraintsUnit
		if err := json.Unmarshal(u.Output, &cu); err != nil {
			return out, &TurnError{Turn: x.Turn, Err: fmt.Errorf("decoding %s unit: %w", ConstraintsStage, err)}
		}
		x.Strategy = s.Name()
		if x.Info.Operator == "" {
			x.Info.Operator = s.inner.Name()
		}
		if len(cu.Registry) > 0 {
			block := curated.TextPart(conv.User, ConstraintsText(cu.Registry))
			block.Join = true
			parts := append(x.Parts[:len(x.Parts):len(x.Parts)], block)
			x.Parts = parts
			x.Tokens = ws.Total(parts)
			x.Info.Constraints = len(cu.Registry)
		}
		out = append(out, x)
	}
	return out, ierr
}
