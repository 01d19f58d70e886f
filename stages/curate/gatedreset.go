package curate

import (
	"context"
	"fmt"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/curate/memory"
)

// Gated reset and the other AC3 operators. One Operator type implements all
// four, since they differ only in what they do once the shared analysis is
// in: its gate is in gate.go (Gate, DefaultGate), the forms it writes in
// gatedreset_templates.go (reset template, replay, rewrite variant), and its
// texts in gatedreset_texts.go.

// Operator is an AC3 operator (augment, reset, gated-reset, rewrite) over
// the shared analysis.
//
// At each curated turn t > Gate.Floor (and, for reset and rewrite, while
// fewer than Gate.Cap resets happened) the analyzer runs on the original U_t
// and C_t; then:
//
//   - augment: C_t with the analysis appended after u_t (always, once warm);
//   - reset, gated-reset: when the issues are not None, the history is
//     replaced by the reset template filled with the analysis (ResetAC3 or
//     ResetWildChat), followed by u_t; otherwise the context is left as it
//     stands;
//   - rewrite: when the issues are not None, one more call writes a new
//     context (with the ac3 or the paper prompt) that replaces the history,
//     followed by u_t.
//
// Replay over a logged conversation (ReplayContinue, the default): once a
// reset (or rewrite) happened at turn k, the context of a later turn t is
// rebuilt as the reset context of turn k followed by the logged messages
// after u_k up to u_t (a_k, u_{k+1}, …, u_t), unless turn t resets again.
// The logged replies a_k… were written from the original history, which is
// what replay can offer; the analysis of turn t is likewise made over the
// original U_t and C_t, so one analysis per turn serves every operator, and
// the cap counts resets whether or not the history had changed. With
// ReplayPrefix every turn starts again from its own logged prefix C_t.
//
// So no call reads the answer of another turn: only whether a turn is
// under the cap depends on earlier gates. In batch mode every turn past
// the floor is asked at once and the cap applied afterwards (prefetch),
// which gives the same contexts in as many batch rounds as the calls have
// steps.
type Operator struct {
	op      string
	an      *analyze.Analyzer
	gate    Gate
	form    form
	sheet   memory.Memory // the cheatsheet step 2 is given
	version string
}

func newOperator(op string, an *analyze.Analyzer, g Gate, f form, m memory.Memory) *Operator {
	v := fmt.Sprintf("%s;%s;floor=%d;cap=%d", templateVersion, an.Version(), g.Floor, g.Cap) + f.version(op, an)
	if f.replay == ReplayPrefix && g.Cap > 0 && op != curated.OpAugment {
		v += ";cap-per=prefix" // the cap counted across prefixes before
	}
	if m.Hash != "" {
		v += ";memory=" + m.Hash
	}
	return &Operator{op: op, an: an, gate: g, form: f, sheet: m, version: v}
}

// Name returns the operator's name.
func (s *Operator) Name() string { return s.op }

// Version includes the analyzer's prompts (and any ablation), the gate, the
// fixed texts, the reset template, rewrite prompt and replay mode when they
// are not the defaults, and the memory's hash.
func (s *Operator) Version() string { return s.version }

// Gate returns the operator's floor and cap.
func (s *Operator) Gate() Gate { return s.gate }

// prefetch asks, in batch mode, every call of the operator over c whose
// inputs are known, so they share a batch instead of taking a round trip
// each: the analysis of every turn past the floor (step 1 of all turns in
// one round, step 2 in the next) and, for rewrite, the rewrite of every
// turn whose analysis found issues. The cap is not applied here: whether a
// turn is under it depends on the gate answers of the turns before, so
// turns past it are asked too and the cap is applied after the answers are
// in, by the pass in turn order. That pass then reads only memoized or
// cached answers and decides exactly as online; the analyses of turns
// past the cap are paid for and not used (the dry run's estimate already
// counts them). It returns the first deferral, or an error that stops the
// run.
func (s *Operator) prefetch(ctx context.Context, c *conv.Conversation, sel []conv.Turn, ws *Workspace) error {
	var d deferrals
	for _, tr := range sel {
		if tr.Index <= s.gate.Floor {
			continue
		}
		a, _, err := analysisOf(ctx, s.an, s.sheet, c, tr.Index, ws)
		if err == nil && s.op == curated.OpRewrite && a.HasIssues() {
			_, _, err = s.rewriteOf(ctx, c, a, tr, ws)
		}
		if err := d.note(err); err != nil {
			return err
		}
	}
	return d.err
}

type rewriteResult struct {
	text string
	use  analyze.Usage
	err  error
}

// rewriteOf returns the rewrite call's briefing for turn tr, made once per
// conversation from the analysis a (memoized with the analysis' version and
// memory, so prefetch and the pass in turn order share it). A unit failure
// comes back as a *TurnError.
func (s *Operator) rewriteOf(ctx context.Context, c *conv.Conversation, a analyze.Analysis, tr conv.Turn, ws *Workspace) (string, analyze.Usage, error) {
	k := memoKey{kind: "rewrite", version: s.an.Version() + "|" + s.sheet.Hash + "|" + s.an.RewriteVersion(s.form.rewrite), n: tr.Index}
	if v, ok := ws.recall(k); ok {
		r := v.(rewriteResult)
		return r.text, r.use, r.err
	}
	ct, _ := c.ContextBefore(tr.Index)
	text, use, err := s.an.Rewrite(ctx, s.form.rewrite, a, ct, ws.Retry())
	if err != nil {
		if raw, ok := analyze.Failure(err); ok {
			err = &TurnError{Turn: tr.Index, Raw: raw, Err: err}
		}
	}
	if ctx.Err() == nil {
		ws.remember(k, rewriteResult{text, use, err})
	}
	return text, use, err
}

// Contexts builds the operator's context for each turn t >= from. It
// returns a *TurnError with the contexts before a turn whose analysis
// failed; any other error stops the run. In batch mode it first asks every
// call it may need (prefetch) and returns the deferral, with no contexts,
// while any of them waits for a batch.
func (s *Operator) Contexts(ctx context.Context, c *conv.Conversation, from int, ws *Workspace) ([]curated.Context, error) {
	sel, _ := selectTurns(c, from)
	if batched(s.an) {
		if err := s.prefetch(ctx, c, sel, ws); err != nil {
			return nil, err
		}
	}
	head, _ := systemHead(c, ws)
	var (
		out    []curated.Context
		base   []curated.Part // context up to and including u_k after the last reset at k; nil before any, and always with ReplayPrefix
		baseAt int            // message index of u_k
		resets int
	)
	// current is the context of turn tr without a new action: the original
	// history, or the last reset context continued with the logged messages.
	current := func(tr conv.Turn) []curated.Part {
		var parts []curated.Part
		if base == nil {
			parts = make([]curated.Part, 0, len(head)+tr.User+1)
			parts = append(parts, head...)
			for i := 0; i <= tr.User; i++ {
				parts = append(parts, curated.MessagePart(i))
			}
			return parts
		}
		parts = append(make([]curated.Part, 0, len(base)+tr.User-baseAt), base...)
		for i := baseAt + 1; i <= tr.User; i++ {
			parts = append(parts, curated.MessagePart(i))
		}
		return parts
	}
	for _, tr := range sel {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s.form.replay == ReplayPrefix {
			// Each prefix is its own item, whose history holds none of the
			// earlier prefixes' resets: the cap counts within the item.
			resets = 0
		}
		info := curated.Info{Operator: s.op, Memory: s.sheet.Hash, Resets: resets}
		var parts []curated.Part
		removes := s.op != curated.OpAugment
		switch {
		case tr.Index <= s.gate.Floor:
			info.Action = curated.ActionFloor
			if !removes {
				info.Action = curated.ActionWarmup
			}
		case removes && s.gate.Cap > 0 && resets >= s.gate.Cap:
			info.Action = curated.ActionCap
		}
		if info.Action != "" {
			parts = current(tr)
			if base != nil {
				info.Action += "+" + curated.ActionContinue
			}
		} else {
			a, use, err := analysisOf(ctx, s.an, s.sheet, c, tr.Index, ws)
			if err != nil {
				return out, err
			}
			info.Analyzed, info.Analysis, info.AnalysisUsage = true, a, use
			switch {
			case s.op == curated.OpAugment:
				parts = current(tr)
				note, err := s.form.augmentText(a)
				if err != nil {
					return out, err
				}
				extra := curated.TextPart(conv.User, note)
				extra.Join = true
				parts = append(parts, extra)
				info.Action, info.GateOpen = curated.ActionAugment, true
			case !a.HasIssues():
				parts = current(tr)
				info.Action = curated.ActionPass
				if base != nil {
					info.Action = curated.ActionContinue
				}
			case s.op == curated.OpRewrite:
				text, use, err := s.rewriteOf(ctx, c, a, tr, ws)
				info.OperatorUsage = use
				if err != nil {
					return out, err
				}
				if parts, err = s.form.replacement(s.op, c, head, a, text, tr); err != nil {
					return out, err
				}
				fallthrough
			default: // reset, gated-reset
				if parts == nil {
					var err error
					if parts, err = s.form.replacement(s.op, c, head, a, "", tr); err != nil {
						return out, err
					}
				}
				resets++
				if s.form.replay == ReplayContinue {
					base, baseAt = parts, tr.User
				}
				info.Action, info.GateOpen, info.Resets = s.op, true, resets
				if s.op != curated.OpRewrite {
					info.Action = curated.ActionReset
				}
			}
		}
		n := len(parts)
		parts = parts[:n:n]
		out = append(out, curated.Context{Strategy: s.op, Turn: tr.Index, Parts: parts, Tokens: ws.Total(parts), Messages: curated.MessageCount(parts), Info: info})
	}
	return out, nil
}
