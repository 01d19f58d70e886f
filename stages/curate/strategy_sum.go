package curate

import (
	"context"
	"fmt"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate/curated"
)

// SummaryPrefix marks a summary standing in for an assistant reply or tool
// result, so the respondent reads it as a digest and not as the reply.
const SummaryPrefix = "[Summary of an earlier reply] "

// Summarized is sum: the user side of C_t, with every earlier assistant or
// tool message replaced by a one-sentence summary of it (keeping its role).
//
// Each message is summarized by one call whose request holds only that
// message and the user message before it, never the turn being curated: all
// later turns need the same summary and get it from the conversation's memo
// (and, across runs and strategies, from the run's answer cache). Each
// context records the calls of the summaries it was the first to need.
type Summarized struct {
	an      *analyze.Analyzer
	form    SumForm
	version string
}

// SumForm is how sum asks for and shows a summary.
type SumForm string

const (
	// SumAC3 (the default; "" too) asks with the reply and the user message
	// it answers, for one sentence with the reply's specifics, and shows it
	// behind SummaryPrefix.
	SumAC3 SumForm = "ac3"
	// SumPaper is Huang et al.'s (A.3): one user message asking for exactly
	// one sentence about the reply alone; the answer takes the reply's place
	// as it is, with no label.
	SumPaper SumForm = "paper"
)

// ParseSumForm reads a sum_variant setting ("" is SumAC3).
func ParseSumForm(s string) (SumForm, error) {
	switch SumForm(s) {
	case "", SumAC3:
		return SumAC3, nil
	case SumPaper:
		return SumPaper, nil
	}
	return "", fmt.Errorf("%q: want ac3 (our summary, labelled) or paper (Huang et al.'s one sentence, unlabelled)", s)
}

func newSummarized(an *analyze.Analyzer, form SumForm) *Summarized {
	if form == SumPaper {
		return &Summarized{an: an, form: form, version: "paper-1;" + an.SummaryPaperVersion()}
	}
	return &Summarized{an: an, form: SumAC3, version: "1;" + an.SummaryVersion()}
}

// summarize asks the summary of one reply in s's form.
func (s *Summarized) summarize(ctx context.Context, user, reply string, reroll int) (string, analyze.Usage, error) {
	if s.form == SumPaper {
		return s.an.SummarizePaper(ctx, reply, reroll)
	}
	return s.an.Summarize(ctx, user, reply, reroll)
}

// shown is a summary as the context shows it.
func (s *Summarized) shown(text string) string {
	if s.form == SumPaper {
		return text
	}
	return SummaryPrefix + text
}

// Name returns "sum".
func (*Summarized) Name() string { return "sum" }

// Version includes the summary prompt's version.
func (s *Summarized) Version() string { return s.version }

type summaryResult struct {
	text string
	use  analyze.Usage
}

// prefetchedSummary is a summary prefetch asked for and no context has
// used yet: the first context that needs it records its calls, as online.
type prefetchedSummary struct{ summaryResult }

func (s *Summarized) summaryKey(i int) memoKey {
	return memoKey{kind: "summary", version: s.version, n: i}
}

// prefetch asks, in batch mode, the summary of every reply a context of
// sel needs: no summary reads another, so they share one batch instead of
// a round trip each. It returns the first deferral, or an error that stops
// the run; a unit failure is left to the pass in turn order, which meets
// it where the online run would.
func (s *Summarized) prefetch(ctx context.Context, c *conv.Conversation, sel []conv.Turn, ws *Workspace) error {
	var d deferrals
	lastUser := ""
	for i := 0; i < sel[len(sel)-1].User; i++ {
		m := c.Messages[i]
		if m.Role == conv.User {
			lastUser = m.Content
		}
		if !isAssistantSide(m.Role) {
			continue
		}
		if _, ok := ws.recall(s.summaryKey(i)); ok {
			continue
		}
		text, use, err := s.summarize(ctx, lastUser, m.Content, ws.Retry())
		if err == nil {
			ws.remember(s.summaryKey(i), prefetchedSummary{summaryResult{text: text, use: use}})
		}
		if err := d.note(err); err != nil {
			return err
		}
	}
	return d.err
}

// Contexts builds the sum context for each turn t >= from. In batch mode
// it first asks every summary it needs (prefetch) and returns the
// deferral, with no contexts, while any waits for a batch.
func (s *Summarized) Contexts(ctx context.Context, c *conv.Conversation, from int, ws *Workspace) ([]curated.Context, error) {
	sel, _ := selectTurns(c, from)
	if len(sel) == 0 {
		return nil, nil
	}
	if batched(s.an) {
		if err := s.prefetch(ctx, c, sel, ws); err != nil {
			return nil, err
		}
	}
	head, _ := systemHead(c, ws)
	last := sel[len(sel)-1].User
	view := make([]curated.Part, 0, last+1)
	var out []curated.Context
	next := 0
	lastUser := ""
	for _, tr := range sel {
		var info curated.Info
		info.Operator, info.Action = "sum", "summarize"
		for ; next <= tr.User; next++ {
			m := c.Messages[next]
			if !isAssistantSide(m.Role) {
				if m.Role == conv.User {
					lastUser = m.Content
				}
				view = append(view, curated.MessagePart(next))
				continue
			}
			k := s.summaryKey(next)
			v, ok := ws.recall(k)
			if p, first := v.(prefetchedSummary); first {
				info.OperatorUsage.Add(p.use)
				v = p.summaryResult
				ws.remember(k, v)
			} else if !ok {
				text, use, err := s.summarize(ctx, lastUser, m.Content, ws.Retry())
				info.OperatorUsage.Add(use)
				if err != nil {
					if raw, ok := analyze.Failure(err); ok {
						return out, &TurnError{Turn: tr.Index, Raw: raw, Err: err}
					}
					return out, err
				}
				v = summaryResult{text: text, use: use}
				ws.remember(k, v)
			}
			view = append(view, curated.TextPart(m.Role, s.shown(v.(summaryResult).text)))
		}
		parts := make([]curated.Part, 0, len(head)+len(view))
		parts = append(append(parts, head...), view...)
		out = append(out, curated.Context{Strategy: "sum", Turn: tr.Index, Parts: parts, Tokens: ws.Total(parts), Messages: curated.MessageCount(parts), Info: info})
	}
	return out, nil
}
