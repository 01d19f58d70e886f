package report

import (
	"fmt"
	"strings"
)

// mdCuration writes the context-size, gate, reset and analysis-cost tables.
func (r *Report) mdCuration(b *mdWriter) {
	if len(r.Tokens) > 0 {
		b.f("## Context tokens per strategy\n\n")
		b.f("Ratios to fc compare the turns both curated: total tokens over fc's total, and the mean of the per-turn ratios.\n\n")
		b.f("| strategy | n | mean | total | turns vs fc | ratio to fc | mean per-turn ratio |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, t := range r.Tokens {
			b.f("| %s | %d | %s | %d | %d | %s | %s |\n", t.Strategy, t.N, fix(t.Mean, 1), t.Total, t.TurnsVsFC, fix(t.VsFC, 3), fix(t.MeanVsFC, 3))
		}
		rounds := tokenRounds(r.Tokens)
		head := func(title string) {
			b.f("\n**%s**\n\n| strategy |", title)
			for _, k := range rounds {
				b.f(" %d |", k)
			}
			b.f("\n|---|%s\n", strings.Repeat("---:|", len(rounds)))
		}
		cells := func(cell func(RoundTok) string) {
			for _, t := range r.Tokens {
				b.f("| %s |", t.Strategy)
				for _, k := range rounds {
					c := "—"
					for _, x := range t.ByRound {
						if x.Round == k {
							c = cell(x)
						}
					}
					b.f(" %s |", c)
				}
				b.f("\n")
			}
		}
		head("Mean context tokens by round (n per cell in parentheses)")
		cells(func(x RoundTok) string { return fmt.Sprintf("%s (%d)", fix(x.Mean, 0), x.N) })
		head("Ratio to fc by round")
		cells(func(x RoundTok) string { return fix(x.VsFC, 3) })
		b.f("\n")
	}
	if len(r.Gates) > 0 {
		b.f("## Gate-open rates\n\n")
		b.f("How often a strategy changed the context. All turns counts every curated turn (below the floor and past the cap count as closed); analyzed turns only those the analyzer ran on. The breakdowns are over analyzed turns.\n\n")
		b.f("| strategy | all turns | rate | Wilson | analyzed turns | rate | Wilson | not curated |\n|---|---:|---:|---|---:|---:|---|---|\n")
		for _, g := range r.Gates {
			b.f("| %s | %d/%d | %s | %s | %d/%d | %s | %s | %s |\n", g.Strategy, g.All.Open, g.All.Turns, pct(g.All.Rate), ivl(g.All.Wilson), g.Analyzed.Open, g.Analyzed.Turns, pct(g.Analyzed.Rate), ivl(g.Analyzed.Wilson), r.missing("curate", g.Strategy))
		}
		b.f("\n**By turn type (analyzed turns)**\n\n| strategy | turn type | open | rate | Wilson |\n|---|---|---:|---:|---|\n")
		for _, g := range r.Gates {
			for _, x := range g.ByTurnType {
				b.f("| %s | %s | %d/%d | %s | %s |\n", g.Strategy, x.Key, x.Open, x.Turns, pct(x.Rate.Rate), ivl(x.Wilson))
			}
		}
		b.f("\n**By round (analyzed turns)**\n\n| strategy | round | open | rate | Wilson |\n|---|---:|---:|---:|---|\n")
		for _, g := range r.Gates {
			for _, x := range g.ByRound {
				b.f("| %s | %d | %d/%d | %s | %s |\n", g.Strategy, x.Round, x.Open, x.Turns, pct(x.Rate.Rate), ivl(x.Wilson))
			}
		}
		b.f("\n")
	}
	if len(r.Resets) > 0 {
		b.f("## Resets per conversation\n\n| strategy | conversations | with a reset | resets | mean per conversation | conversations by resets (resets: conversations) |\n|---|---:|---:|---:|---:|---|\n")
		for _, x := range r.Resets {
			b.f("| %s | %d | %d | %d | %s | %s |\n", x.Strategy, x.Conversations, x.WithReset, x.Resets, fix(x.MeanPerConv, 2), histogram(x.Histogram))
		}
		b.f("\n")
	}
	if len(r.AnalysisCost) > 0 {
		b.f("## Analysis cost\n\n")
		b.f("Every AC3 operator of a run reuses one analysis per turn and records it, so compare rows; do not add them up. %s\n\n", analysisCostPricing)
		b.f("| strategy | turns | analyzed | analysis calls | operator calls | prompt tokens | completion tokens | analysis (USD) | operator (USD) | per analyzed turn (USD) | calls per analyzed turn |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, x := range r.AnalysisCost {
			b.f("| %s | %d | %d | %d | %d | %d | %d | %s | %s | %s | %s |\n", x.Strategy, x.Turns, x.AnalyzedTurns, x.AnalysisCalls, x.OperatorCalls,
				x.PromptTokens, x.CompletionTokens, fix(x.AnalysisUSD, 4), fix(x.OperatorUSD, 4), fix(x.PerAnalyzedTurnUSD, 6), fix(x.PerAnalyzedTurnCalls, 2))
		}
		b.f("\n")
	}
}

func histogram(bins []ResetBin) string {
	parts := make([]string, 0, len(bins))
	for _, h := range bins {
		parts = append(parts, fmt.Sprintf("%d: %d", h.Resets, h.Conversations))
	}
	return list(parts)
}

// mdAnnotations writes the annotation stages' summaries.
func (r *Report) mdAnnotations(b *mdWriter) {
	a := r.Annotations
	if a == nil {
		return
	}
	b.f("## Annotations\n\nShares with 95%% Wilson intervals (turns treated as independent).\n\n")
	if d := a.TurnTypes; d != nil {
		b.f("### Turn types\n\n%d user turns labelled in %d conversations (stage variant %s), %d failed. Annotated by %s.\n\n", d.Turns, d.Conversations, d.Variant, d.Failed, countList(d.Annotators))
		if q := d.LabellerQuality; q != nil {
			b.f("%s\n\n", labellerNote(q))
			b.f("| turn type | count | share | Wilson | labeller coverage | labeller accuracy |\n|---|---:|---:|---|---:|---:|\n")
			for _, s := range d.Types {
				b.f("| %s | %d | %s | %s | %s | %s |\n", s.Key, s.Count, pct(s.Rate), ivl(s.Wilson), pct(q.Coverage), pct(q.Accuracy))
			}
			b.f("\n")
		} else {
			shareTable(b, "turn type", d.Types)
		}
		b.f("%d turns stand on their own; references to earlier turns: %s.\n\n", d.SelfContained, countList(d.Refs))
	}
	if p := a.Pollution; p != nil {
		b.f("### Context pollution\n\n%d assistant turns reviewed in %d conversations (stage variant %s), %d failed. Annotated by %s. Polluted: %s of turns, %s of conversations.\n\n",
			p.Turns, p.Conversations, p.Variant, p.Failed, countList(p.Annotators), prop(p.AnyTurns), prop(p.AnyConversations))
		b.f("| category | turns | share of turns | Wilson | conversations | share of conversations | Wilson |\n|---|---:|---:|---|---:|---:|---|\n")
		for _, c := range p.ByCategory {
			b.f("| %s | %d | %s | %s | %d | %s | %s |\n", c.Category, c.Turns.Count, pct(c.Turns.Rate), ivl(c.Turns.Wilson), c.Conversations.Count, pct(c.Conversations.Rate), ivl(c.Conversations.Wilson))
		}
		b.f("\n")
	}
	if c := a.Constraints; c != nil {
		b.f("### Session constraints\n\n%d constraints set on %d of %d user turns in %d conversations (stage variant %s), %d failed; %d conversations end with at least one in force. Annotated by %s.\n\n",
			c.Constraints, c.TurnsWithNew, c.Turns, c.Conversations, c.Variant, c.Failed, c.ConversationsWithAny, countList(c.Annotators))
		shareTable(b, "type", c.ByType)
		if len(c.ByTurn) > 0 {
			b.f("**Set at user turn**\n\n| turn |")
			for _, x := range c.ByTurn {
				b.f(" %s |", x.Key)
			}
			b.f("\n|---|%s\n| constraints |", strings.Repeat("---:|", len(c.ByTurn)))
			for _, x := range c.ByTurn {
				b.f(" %d |", x.Count)
			}
			b.f("\n\n")
		}
	}
}

func shareTable(b *mdWriter, key string, ss []Share) {
	b.f("| %s | count | share | Wilson |\n|---|---:|---:|---|\n", key)
	for _, s := range ss {
		b.f("| %s | %d | %s | %s |\n", s.Key, s.Count, pct(s.Rate), ivl(s.Wilson))
	}
	b.f("\n")
}

// prop formats a proportion as "k/n (rate, Wilson [lo, hi])".
func prop(p Proportion) string {
	return fmt.Sprintf("%d/%d (%s, Wilson %s)", p.Count, p.Of, pct(p.Rate), ivl(p.Wilson))
}

func countList(cs []Count) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s (%d)", c.Key, c.Count))
	}
	return list(parts)
}

// missing says what of a stage variant's work its numbers leave out:
// failed units and conversations never attempted, or "none".
func (r *Report) missing(stage, variant string) string {
	for _, p := range r.Progress {
		if p.Stage != stage || p.Variant != variant {
			continue
		}
		var parts []string
		if p.UnitsFailed > 0 {
			parts = append(parts, fmt.Sprintf("%d turns failed", p.UnitsFailed))
		}
		if p.ConversationsNotTried > 0 {
			parts = append(parts, fmt.Sprintf("%d conversations not attempted", p.ConversationsNotTried))
		}
		if len(parts) > 0 {
			return strings.Join(parts, ", ")
		}
	}
	return "none"
}

// mdProgress writes what every planned stage variant has done.
func (r *Report) mdProgress(b *mdWriter) {
	if len(r.Progress) == 0 {
		return
	}
	b.f("## Progress\n\nWhat each planned stage variant has done. Every number above covers the done units only; failed units can be queued again with 'ac3 retry'.\n\n")
	b.f("| stage | variant | conversations done | conversations failed | never attempted | units done | units failed | failures (units: reason; example) |\n|---|---|---:|---:|---:|---:|---:|---|\n")
	for _, p := range r.Progress {
		b.f("| %s | %s | %d | %d | %d | %d | %d | %s |\n", p.Stage, p.Variant, p.ConversationsDone, p.ConversationsFailed, p.ConversationsNotTried, p.UnitsDone, p.UnitsFailed, esc(failureList(p.Failures)))
	}
	b.f("\n")
}

// failureList formats failure groups for a table cell.
func failureList(fs []Failure) string {
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		parts = append(parts, fmt.Sprintf("%d: %s (e.g. %s turn %d: %s)", f.Units, f.Reason, f.Example.Conversation, f.Example.Turn, clip(f.Example.Error, 200)))
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, "; ")
}
