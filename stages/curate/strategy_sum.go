package curate

import (
	"context"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/analyze"
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
	version string
}

func newSummarized(an *analyze.Analyzer) *Summarized {
	return &Summarized{an: an, version: "1;" + an.SummaryVersion()}
}

// Name returns "sum".
func (*Summarized) Name() string { return "sum" }

// Version includes the summary prompt's version.
func (s *Summarized) Version() string { return s.version }

type summaryResult struct {
	text string
	use  analyze.Usage
}

// Contexts builds the sum context for each turn t >= from.
func (s *Summarized) Contexts(ctx context.Context, c *conv.Conversation, from int, tc *TokenCache) ([]Context, error) {
	sel, _ := selectTurns(c, from)
	if len(sel) == 0 {
		return nil, nil
	}
	head, _ := systemHead(c, tc)
	last := sel[len(sel)-1].User
	view := make([]Part, 0, last+1)
	var out []Context
	next := 0
	lastUser := ""
	for _, tr := range sel {
		var info Info
		info.Operator, info.Action = "sum", "summarize"
		for ; next <= tr.User; next++ {
			m := c.Messages[next]
			if !isAssistantSide(m.Role) {
				if m.Role == conv.User {
					lastUser = m.Content
				}
				view = append(view, MessagePart(next))
				continue
			}
			k := memoKey{kind: "summary", version: s.version, n: next}
			v, ok := tc.recall(k)
			if !ok {
				text, use, err := s.an.Summarize(ctx, lastUser, m.Content, tc.Retry())
				info.OperatorUsage.Add(use)
				if err != nil {
					if raw, ok := analyze.Failure(err); ok {
						return out, &TurnError{Turn: tr.Index, Raw: raw, Err: err}
					}
					return out, err
				}
				v = summaryResult{text: text, use: use}
				tc.remember(k, v)
			}
			view = append(view, TextPart(m.Role, SummaryPrefix+v.(summaryResult).text))
		}
		parts := make([]Part, 0, len(head)+len(view))
		parts = append(append(parts, head...), view...)
		out = append(out, Context{Strategy: "sum", Turn: tr.Index, Parts: parts, Tokens: tc.Total(parts), Messages: messageCount(parts), Info: info})
	}
	return out, nil
}
