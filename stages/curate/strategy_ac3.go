package curate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/stages/analyze"
)

// The AC3 operators.
const (
	OpAugment    = "augment"
	OpReset      = "reset"
	OpGatedReset = "gated-reset"
	OpRewrite    = "rewrite"
)

// templateVersion versions the fixed texts below (reset template, augment
// and rewrite framing); bump it when any of them changes.
const templateVersion = "t1"

// ResetText fills the reset template with an analysis: the consolidated
// request and the earlier work that fits it. It is fixed text around the two
// fields, so the same analysis always gives the same context and no call is
// needed. The user's latest message follows it in the same user message.
func ResetText(spec, aligned string) string {
	if strings.TrimSpace(aligned) == "" {
		aligned = "(nothing yet)"
	}
	return "[Context reset] The conversation up to this point has been replaced by a reviewed summary. " +
		"It states what the user is asking for, consolidated from the user's own messages, and the earlier work that fits that request. " +
		"The earlier assistant replies themselves are not shown.\n\n" +
		"What the user wants:\n" + strings.TrimSpace(spec) + "\n\n" +
		"Earlier work that fits the request:\n" + strings.TrimSpace(aligned) + "\n\n" +
		"[End of summary. The user's latest message follows.]"
}

// AugmentText is the analysis as augment appends it after u_t, marked as a
// reviewer's note so the respondent does not take it for the user's words.
func AugmentText(a analyze.Analysis) string {
	return "[Review of the conversation so far, added by a reviewer; not written by the user]\n\n" +
		"What the user wants:\n" + strings.TrimSpace(a.Spec) + "\n\n" +
		"What fits the request so far:\n" + orNothing(a.Aligned) + "\n\n" +
		"Problems to avoid:\n" + orNothing(a.Issues) + "\n\n" +
		"[End of review]"
}

// RewriteText frames the rewrite call's briefing, which replaces the
// history; the user's latest message follows it.
func RewriteText(briefing string) string {
	return "[Context rewritten] The conversation up to this point has been replaced by the following briefing.\n\n" +
		strings.TrimSpace(briefing) + "\n\n[End of briefing. The user's latest message follows.]"
}

func orNothing(s string) string {
	if s = strings.TrimSpace(s); s == "" {
		return "(nothing)"
	}
	return s
}

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
	memory  Memory
	version string
}

func newOperator(op string, an *analyze.Analyzer, g Gate, f form, m Memory) *Operator {
	v := fmt.Sprintf("%s;%s;floor=%d;cap=%d", templateVersion, an.Version(), g.Floor, g.Cap) + f.version(op, an)
	if m.Hash != "" {
		v += ";memory=" + m.Hash
	}
	return &Operator{op: op, an: an, gate: g, form: f, memory: m, version: v}
}

// Name returns the operator's name.
func (s *Operator) Name() string { return s.op }

// Version includes the analyzer's prompts (and any ablation), the gate, the
// fixed texts, the reset template, rewrite prompt and replay mode when they
// are not the defaults, and the memory's hash.
func (s *Operator) Version() string { return s.version }

// Gate returns the operator's floor and cap.
func (s *Operator) Gate() Gate { return s.gate }

// analysisResult is a memoized analysis of one turn.
type analysisResult struct {
	a   analyze.Analysis
	use analyze.Usage
	err error
}

// analysis returns the analysis of turn t, running it once per conversation
// for every operator with the same analyzer and memory.
func analysisOf(ctx context.Context, an *analyze.Analyzer, m Memory, c *conv.Conversation, t int, tc *TokenCache) (analyze.Analysis, analyze.Usage, error) {
	if v, ok := tc.recall(analysisKey(an, m, t)); ok {
		r := v.(analysisResult)
		return r.a, r.use, r.err
	}
	a, use, err := an.Analyze(ctx, c, t, m.Cheatsheet, tc.Retry())
	return a, use, rememberAnalysis(ctx, an, m, t, tc, a, use, err)
}

func analysisKey(an *analyze.Analyzer, m Memory, t int) memoKey {
	return memoKey{kind: "analysis", version: an.Version() + "|" + m.Hash, n: t}
}

// rememberAnalysis keeps in tc the analysis of turn t that an made with
// memory m (and tc's re-ask counter), so the operators reuse it, and returns
// its error as the operators see it: a unit failure as a *TurnError. An
// analysis cut short by ctx is not kept.
func rememberAnalysis(ctx context.Context, an *analyze.Analyzer, m Memory, t int, tc *TokenCache, a analyze.Analysis, use analyze.Usage, err error) error {
	if err != nil {
		if raw, ok := analyze.Failure(err); ok {
			err = &TurnError{Turn: t, Raw: raw, Err: err}
		}
	}
	if ctx.Err() == nil {
		tc.remember(analysisKey(an, m, t), analysisResult{a, use, err})
	}
	return err
}

// batched reports whether an's calls go to batches, where an answer not in
// the cache comes back a round trip (minutes to a day) later.
func batched(an *analyze.Analyzer) bool {
	cl := an.Client()
	return cl != nil && cl.BatchMode(an.Role())
}

// deferrals collects what a pass that asks every call at once meets: the
// first deferral to a batch, which leaves the task pending, and a unit
// failure, which is only noted, since the pass in turn order meets it where
// the online run would.
type deferrals struct{ err error }

// note keeps a deferral and passes over a unit failure; any other error is
// returned, to stop the run.
func (d *deferrals) note(err error) error {
	var te *TurnError
	switch {
	case err == nil:
	case errors.Is(err, llm.ErrDeferred):
		if d.err == nil {
			d.err = err
		}
	case errors.As(err, &te):
	default:
		if _, failed := analyze.Failure(err); !failed {
			return err
		}
	}
	return nil
}

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
func (s *Operator) prefetch(ctx context.Context, c *conv.Conversation, sel []conv.Turn, tc *TokenCache) error {
	var d deferrals
	for _, tr := range sel {
		if tr.Index <= s.gate.Floor {
			continue
		}
		a, _, err := analysisOf(ctx, s.an, s.memory, c, tr.Index, tc)
		if err == nil && s.op == OpRewrite && a.HasIssues() {
			_, _, err = s.rewriteOf(ctx, c, a, tr, tc)
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
func (s *Operator) rewriteOf(ctx context.Context, c *conv.Conversation, a analyze.Analysis, tr conv.Turn, tc *TokenCache) (string, analyze.Usage, error) {
	k := memoKey{kind: "rewrite", version: s.an.Version() + "|" + s.memory.Hash + "|" + s.an.RewriteVersion(s.form.rewrite), n: tr.Index}
	if v, ok := tc.recall(k); ok {
		r := v.(rewriteResult)
		return r.text, r.use, r.err
	}
	ct, _ := c.ContextBefore(tr.Index)
	text, use, err := s.an.Rewrite(ctx, s.form.rewrite, a, ct, tc.Retry())
	if err != nil {
		if raw, ok := analyze.Failure(err); ok {
			err = &TurnError{Turn: tr.Index, Raw: raw, Err: err}
		}
	}
	if ctx.Err() == nil {
		tc.remember(k, rewriteResult{text, use, err})
	}
	return text, use, err
}

// Contexts builds the operator's context for each turn t >= from. It
// returns a *TurnError with the contexts before a turn whose analysis
// failed; any other error stops the run. In batch mode it first asks every
// call it may need (prefetch) and returns the deferral, with no contexts,
// while any of them waits for a batch.
func (s *Operator) Contexts(ctx context.Context, c *conv.Conversation, from int, tc *TokenCache) ([]Context, error) {
	sel, _ := selectTurns(c, from)
	if batched(s.an) {
		if err := s.prefetch(ctx, c, sel, tc); err != nil {
			return nil, err
		}
	}
	head, _ := systemHead(c, tc)
	var (
		out    []Context
		base   []Part // context up to and including u_k after the last reset at k; nil before any, and always with ReplayPrefix
		baseAt int    // message index of u_k
		resets int
	)
	// current is the context of turn tr without a new action: the original
	// history, or the last reset context continued with the logged messages.
	current := func(tr conv.Turn) []Part {
		var parts []Part
		if base == nil {
			parts = make([]Part, 0, len(head)+tr.User+1)
			parts = append(parts, head...)
			for i := 0; i <= tr.User; i++ {
				parts = append(parts, MessagePart(i))
			}
			return parts
		}
		parts = append(make([]Part, 0, len(base)+tr.User-baseAt), base...)
		for i := baseAt + 1; i <= tr.User; i++ {
			parts = append(parts, MessagePart(i))
		}
		return parts
	}
	for _, tr := range sel {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		info := Info{Operator: s.op, Memory: s.memory.Hash, Resets: resets}
		var parts []Part
		removes := s.op != OpAugment
		switch {
		case tr.Index <= s.gate.Floor:
			info.Action = ActionFloor
			if !removes {
				info.Action = ActionWarmup
			}
		case removes && s.gate.Cap > 0 && resets >= s.gate.Cap:
			info.Action = ActionCap
		}
		if info.Action != "" {
			parts = current(tr)
			if base != nil {
				info.Action += "+" + ActionContinue
			}
		} else {
			a, use, err := analysisOf(ctx, s.an, s.memory, c, tr.Index, tc)
			if err != nil {
				return out, err
			}
			info.Analyzed, info.Analysis, info.AnalysisUsage = true, a, use
			switch {
			case s.op == OpAugment:
				parts = current(tr)
				note, err := s.form.augmentText(a)
				if err != nil {
					return out, err
				}
				extra := TextPart(conv.User, note)
				extra.Join = true
				parts = append(parts, extra)
				info.Action, info.GateOpen = ActionAugment, true
			case !a.HasIssues():
				parts = current(tr)
				info.Action = ActionPass
				if base != nil {
					info.Action = ActionContinue
				}
			case s.op == OpRewrite:
				text, use, err := s.rewriteOf(ctx, c, a, tr, tc)
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
				if s.op != OpRewrite {
					info.Action = ActionReset
				}
			}
		}
		n := len(parts)
		parts = parts[:n:n]
		out = append(out, Context{Strategy: s.op, Turn: tr.Index, Parts: parts, Tokens: tc.Total(parts), Messages: messageCount(parts), Info: info})
	}
	return out, nil
}
