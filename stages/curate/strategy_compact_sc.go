package curate

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/curate/curated"
)

// ExtractSC is extract-sc=C, the SC-extractor arm of Wang et al. (§5.4,
// Eq. 10): C(H^t) ⊕ S^t, compactor C's stand-in for the history followed
// by S^t, the session constraints the constraints stage recorded from the
// user turns up to t (its registry as of turn t, which a compactor never
// sees and so cannot drop). The registry is ConstraintsText, the block
// +constraints appends, but it goes where the paper puts it: after the
// compacted history, before u_t. When C's last message is the assistant's
// (llm-compact's summary, a plug-in's usual answer) the block is joined to
// it, as the paper appends the registry to the summary; otherwise it is an
// assistant message of its own. A turn with an empty registry gets no
// block, as under +constraints.
type ExtractSC struct {
	name  string
	inner compactor
	units UnitSource
	up    Upstream
}

// Name returns the LIST item, e.g. "extract-sc" or "extract-sc=recent-n=5".
func (s *ExtractSC) Name() string { return s.name }

// Version joins the compactor's version and the registry's upstream.
func (s *ExtractSC) Version() string {
	return "xsc1;c=" + s.inner.Name() + "@" + s.inner.Version() + ";constraints=" + s.up.String()
}

// Compactor returns C.
func (s *ExtractSC) Compactor() Strategy { return s.inner }

// Contexts builds C(H^t) ⊕ S^t, then u_t, for each turn t >= from.
func (s *ExtractSC) Contexts(ctx context.Context, c *conv.Conversation, from int, ws *Workspace) ([]curated.Context, error) {
	var units upstreamUnits
	read := false
	xs, err := compactContexts(ctx, s.inner, c, from, ws, func(ct compactedTurn) ([]curated.Part, curated.Info, error) {
		info := ct.info
		if info.Operator == "" {
			info.Operator = s.inner.Name()
		}
		if !read {
			var err error
			if units, err = unitsByTurn(ctx, s.units, ConstraintsStage, c.ID, s.up); err != nil {
				return nil, info, err
			}
			read = true
		}
		u, ok := units.done[ct.turn.Index]
		if !ok {
			return nil, info, &TurnError{Turn: ct.turn.Index, Err: units.missing(ct.turn.Index)}
		}
		var cu constraintsUnit
		if err := json.Unmarshal(u.Output, &cu); err != nil {
			return nil, info, &TurnError{Turn: ct.turn.Index, Err: fmt.Errorf("decoding %s unit: %w", ConstraintsStage, err)}
		}
		if len(cu.Registry) == 0 {
			return nil, info, nil
		}
		info.Constraints = len(cu.Registry)
		block := curated.TextPart(conv.Assistant, ConstraintsText(cu.Registry))
		if n := len(ct.parts); n > 0 && partRole(c, ct.parts[n-1]) == conv.Assistant {
			block.Join = true
		}
		return []curated.Part{block}, info, nil
	})
	s.rename(xs)
	return xs, err
}

// rename gives contexts built from the compactor's (named after it)
// extract-sc's name.
func (s *ExtractSC) rename(xs []curated.Context) {
	for i := range xs {
		xs[i].Strategy = s.name
	}
}

// partRole is the role of the message a part starts or joins.
func partRole(c *conv.Conversation, p curated.Part) conv.Role {
	switch {
	case p.Ref == curated.RefSystem:
		return conv.System
	case p.Ref == curated.RefText:
		return p.Role
	default:
		return c.Messages[p.Ref].Role
	}
}
