package run

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/progress"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/inspect"
	"github.com/ac3/ac3/stages/lic/replay"
	"github.com/ac3/ac3/stages/respond"
)

// Inspect prints, as 'ac3 inspect' shows them, the contexts the strategies
// (nil: every one curated) built for user turn turn of conversation id,
// side by side in width columns (0: the terminal's, else 160), then the
// answers respond generated from them, the judge's verdicts with its
// reasoning, and the replay grades of a Lost in Conversation task. Turn 0
// lists the conversation's curated turns instead.
func Inspect(ctx context.Context, w io.Writer, l *ledger.Ledger, id string, turn int, strategies []string, width int) error {
	if width <= 0 {
		width = 160
		if cols, ok := progress.TerminalWidth(w); ok && cols > 40 {
			width = cols
		}
	}
	s, ok, err := l.Conversation(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no conversation %q in %s", id, l.Path())
	}
	ctxs, turns, err := curate.CurrentContexts(ctx, l, id, turn, strategies)
	if err != nil {
		return err
	}
	if len(ctxs) == 0 {
		return fmt.Errorf("conversation %s has no curated turn %d: run 'ac3 curate' (it has %d user turns)", id, turn, s.Conv.UserTurns())
	}
	if turn == 0 {
		fmt.Fprintf(w, "conversation %s (%s, %d user turns): curated turns %v\n", id, s.Conv.Source, s.Conv.UserTurns(), turns)
		fmt.Fprintln(w, "pick one with --turn")
		return nil
	}
	fmt.Fprintf(w, "conversation %s, turn %d (%s)\n\n", id, turn, s.Conv.Source)
	if err := inspect.Render(w, s.Conv, ctxs, width); err != nil {
		return err
	}
	answers, verdicts, err := judged(ctx, l, id, turn, strategies)
	if err != nil {
		return err
	}
	if err := inspect.RenderAnswers(w, answers, width); err != nil {
		return err
	}
	if err := inspect.RenderVerdicts(w, verdicts, width); err != nil {
		return err
	}
	return replay.Show(ctx, w, l, id, turn)
}

// judged reads the answers respond generated for one turn and the judge's
// verdicts on them, from the variants the run plans now (older versions
// are left out). With strategies set, only their answers are read, and
// the verdicts of pairs with one of them on a side.
func judged(ctx context.Context, l *ledger.Ledger, id string, turn int, strategies []string) ([]inspect.Answer, []inspect.Verdict, error) {
	plans, err := l.Plans(ctx)
	if err != nil {
		return nil, nil, err
	}
	current := func(stage string) map[ledger.Variant]bool {
		m := map[ledger.Variant]bool{}
		for _, v := range plans[stage] {
			m[v] = true
		}
		return m
	}
	wanted := func(names ...string) bool {
		if len(strategies) == 0 {
			return true
		}
		for _, n := range names {
			if slices.Contains(strategies, n) {
				return true
			}
		}
		return false
	}
	units := func(stage string) ([]ledger.Unit, error) {
		us, err := l.ConversationUnits(ctx, stage, id, turn)
		if err != nil {
			return nil, err
		}
		cur := current(stage)
		out := us[:0]
		for _, u := range us {
			if cur[ledger.Variant{Name: u.Variant, Version: u.Version}] {
				out = append(out, u)
			}
		}
		// In the order the run plans the variants, as 'ac3 run' shows them.
		slices.SortStableFunc(out, func(a, b ledger.Unit) int {
			return slices.IndexFunc(plans[stage], func(v ledger.Variant) bool { return v.Name == a.Variant }) -
				slices.IndexFunc(plans[stage], func(v ledger.Variant) bool { return v.Name == b.Variant })
		})
		return out, nil
	}
	var answers []inspect.Answer
	rus, err := units(respond.StageName)
	if err != nil {
		return nil, nil, err
	}
	for _, u := range rus {
		if !wanted(u.Variant) {
			continue
		}
		if u.Status != ledger.Done {
			answers = append(answers, inspect.Answer{Strategy: u.Variant, Failed: u.Error})
			continue
		}
		o, err := respond.Decode(u.Output)
		if err != nil {
			return nil, nil, fmt.Errorf("reading respond unit %s: %w", u.Key, err)
		}
		for _, s := range o.Samples {
			answers = append(answers, inspect.Answer{Strategy: u.Variant, Sample: s.Index, Text: s.Text, Tokens: s.CompletionTokens, Model: o.Model})
		}
	}
	var verdicts []inspect.Verdict
	jus, err := units(judge.StageName)
	if err != nil {
		return nil, nil, err
	}
	for _, u := range jus {
		if u.Status != ledger.Done {
			verdicts = append(verdicts, inspect.Verdict{Pair: u.Variant, Failed: u.Error})
			continue
		}
		o, err := judge.Decode(u.Output)
		if err != nil {
			return nil, nil, fmt.Errorf("reading judge unit %s: %w", u.Key, err)
		}
		if !wanted(o.A, o.B) {
			continue
		}
		verdicts = append(verdicts, verdictsOf(u.Variant, o)...)
	}
	return answers, verdicts, nil
}

// verdictsOf turns a judge unit's output into one Verdict per comparison
// and dimension, naming the strategies instead of the sides A and B.
func verdictsOf(pair string, o judge.Output) []inspect.Verdict {
	name := o.Strategy
	var out []inspect.Verdict
	for _, c := range o.Comparisons {
		for _, d := range judge.Dimensions() {
			v := inspect.Verdict{Pair: pair, A: o.A, B: o.B, Sample: c.Sample, Dimension: d, Outcome: name(c.Outcome[d]), Identical: c.Identical}
			for _, call := range c.Calls {
				dv := call.Verdicts[d]
				v.Calls = append(v.Calls, inspect.Call{First: name(call.First), Winner: name(dv.Outcome), Justification: dv.Justification})
			}
			out = append(out, v)
		}
	}
	return out
}
