package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// htmlCuration writes the context-size, gate, reset and analysis-cost
// sections.
func (r *Report) htmlCuration(b *strings.Builder) {
	e := html.EscapeString
	if len(r.Tokens) > 0 {
		b.WriteString("<h2>Context tokens per strategy, by round</h2>\n")
		var ss []series
		for _, t := range r.Tokens {
			s := series{name: t.Strategy}
			for _, x := range t.ByRound {
				s.pts = append(s.pts, point{x: x.Round, y: float64(x.Mean)})
			}
			ss = append(ss, s)
		}
		b.WriteString(lineChart(ss, "round (user turn)", "mean context tokens"))
		b.WriteString("<p class=meta>Ratios to fc compare the turns both curated: total tokens over fc's total, and the mean of the per-turn ratios.</p>\n")
		b.WriteString("<table><tr><th>strategy</th><th>n</th><th>mean</th><th>total</th><th>turns vs fc</th><th>ratio to fc</th><th>mean per-turn ratio</th></tr>\n")
		for _, t := range r.Tokens {
			fmt.Fprintf(b, "<tr><td>%s</td><td>%d</td><td>%s</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td></tr>\n", anchor(r.view.strategy("curate", t.Strategy), t.Strategy), t.N, fix(t.Mean, 1), t.Total, t.TurnsVsFC, fix(t.VsFC, 3), fix(t.MeanVsFC, 3))
		}
		b.WriteString("</table>\n")
		rounds := tokenRounds(r.Tokens)
		fmt.Fprintf(b, "<details><summary>Ratio to fc by round, %s × %s: show the table</summary>\n", plural(len(r.Tokens), "strategy", "strategies"), plural(len(rounds), "round", "rounds"))
		b.WriteString("<table><tr><th>ratio to fc by round</th>")
		for _, k := range rounds {
			fmt.Fprintf(b, "<th>%d</th>", k)
		}
		b.WriteString("</tr>\n")
		for _, t := range r.Tokens {
			fmt.Fprintf(b, "<tr><td>%s</td>", anchor(r.view.strategy("curate", t.Strategy), t.Strategy))
			for _, k := range rounds {
				c := "—"
				for _, x := range t.ByRound {
					if x.Round == k {
						c = fix(x.VsFC, 3)
					}
				}
				fmt.Fprintf(b, "<td>%s</td>", c)
			}
			b.WriteString("</tr>\n")
		}
		b.WriteString("</table>\n</details>\n")
	}
	if len(r.Gates) > 0 {
		b.WriteString("<h2>Gate-open rates</h2>\n<p class=meta>How often a strategy with a gate (reset, gated-reset, rewrite, adaptive) changed the context, on the turns the analyzer ran on (bars: rate with Wilson interval). All turns also counts the turns below the floor and past the cap, as closed. A label opens the strategy's turns with the gate open in the view.</p>\n")
		var bars []bar
		minN := r.Settings.MinN
		for _, g := range r.Gates {
			open := r.view.strategy("curate", g.Strategy, "gate", "open")
			bars = append(bars, gateBar(g.Strategy+" · analyzed", g.Analyzed, minN, open))
			for _, x := range g.ByTurnType {
				bars = append(bars, gateBar(g.Strategy+" · "+x.Key, x.Rate, minN, r.view.strategy("curate", g.Strategy, "gate", "open", "type", typeParam(x.Key))))
			}
			bars = append(bars, gateBar(g.Strategy+" · all turns", g.All, minN, open))
		}
		b.WriteString(barChart(bars, 1))
		for _, g := range r.Gates {
			if m := r.missing("curate", g.Strategy); m != "none" {
				fmt.Fprintf(b, "<p class=warn>%s: %s; its rates cover the curated turns only.</p>\n", e(g.Strategy), e(m))
			}
		}
		n := 0
		for _, g := range r.Gates {
			n += len(g.ByRound)
		}
		fmt.Fprintf(b, "<details><summary>Gate-open rates by round, %s: show the table</summary>\n", plural(n, "row", "rows"))
		b.WriteString("<table><tr><th>strategy</th><th>round</th><th>analyzed turns</th><th>open</th><th>rate</th><th>Wilson</th></tr>\n")
		for _, g := range r.Gates {
			for _, x := range g.ByRound {
				fmt.Fprintf(b, "<tr><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td></tr>\n", anchor(r.view.strategy("curate", g.Strategy, "gate", "open", "turn", itoa(x.Round)), g.Strategy), x.Round, x.Turns, x.Open, pct(x.Rate.Rate), ivl(x.Wilson))
			}
		}
		b.WriteString("</table>\n</details>\n")
	}
	if len(r.Resets) > 0 {
		b.WriteString("<h2>Resets per conversation</h2>\n<table><tr><th>strategy</th><th>conversations</th><th>with a reset</th><th>resets</th><th>mean per conversation</th><th>conversations by resets (resets: conversations)</th></tr>\n")
		for _, x := range r.Resets {
			fmt.Fprintf(b, "<tr><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td class=l>%s</td></tr>\n", anchor(r.view.strategy("curate", x.Strategy, "gate", "open"), x.Strategy), x.Conversations, x.WithReset, x.Resets, fix(x.MeanPerConv, 2), e(histogram(x.Histogram)))
		}
		b.WriteString("</table>\n")
	}
	if len(r.AnalysisCost) > 0 {
		b.WriteString("<h2>Analysis cost</h2>\n<p class=meta>Every AC3 operator of a run reuses one analysis per turn and records it: compare rows, do not add them up. " + e(analysisCostPricing) + "</p>\n")
		b.WriteString("<table><tr><th>strategy</th><th>turns</th><th>analyzed</th><th>analysis calls</th><th>operator calls</th><th>prompt tokens</th><th>completion tokens</th><th>analysis (USD)</th><th>operator (USD)</th><th>per analyzed turn (USD)</th><th>calls per analyzed turn</th></tr>\n")
		for _, x := range r.AnalysisCost {
			fmt.Fprintf(b, "<tr><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
				anchor(r.view.strategy("curate", x.Strategy), x.Strategy), x.Turns, x.AnalyzedTurns, x.AnalysisCalls, x.OperatorCalls, x.PromptTokens, x.CompletionTokens,
				fix(x.AnalysisUSD, 4), fix(x.OperatorUSD, 4), fix(x.PerAnalyzedTurnUSD, 6), fix(x.PerAnalyzedTurnCalls, 2))
		}
		b.WriteString("</table>\n")
	}
}

// gateBar is one gate-open rate; on fewer than minN turns it is drawn in
// the small-sample colour.
func gateBar(label string, g Rate, minN int, href string) bar {
	return bar{label: label, href: href, v: float64(g.Rate), lo: float64(g.Wilson.Lo), hi: float64(g.Wilson.Hi), text: fmt.Sprintf("%s (%d/%d)", pct(g.Rate), g.Open, g.Turns), colour: rateColour(g.Turns, minN)}
}

func rateColour(n, minN int) string {
	if n < minN {
		return colSmall
	}
	return colEstimate
}

// htmlAnnotations writes the annotation stages' summaries.
func (r *Report) htmlAnnotations(b *strings.Builder) {
	a := r.Annotations
	if a == nil {
		return
	}
	e := html.EscapeString
	b.WriteString("<h2>Annotations</h2>\n<p class=meta>Shares with 95% Wilson intervals (turns treated as independent).</p>\n")
	if d := a.TurnTypes; d != nil {
		fmt.Fprintf(b, "<h3>Turn types</h3><p class=meta>%d user turns labelled in %d conversations · stage variant %s · %d failed · annotated by %s</p>\n",
			d.Turns, d.Conversations, e(d.Variant), d.Failed, e(countList(d.Annotators)))
		bars := shareBars(d.Types, r.Settings.MinN, func(k string) string { return r.view.conversations("type", typeParam(k)) })
		if q := d.LabellerQuality; q != nil {
			// The labeller's coverage and accuracy are the same for every
			// bar, so they are said once, in the note, not beside each bar.
			fmt.Fprintf(b, "<p class=note>%s</p>\n", e(labellerNote(q)))
		}
		b.WriteString(barChart(bars, 1))
		fmt.Fprintf(b, "<p>%d turns stand on their own; references to earlier turns: %s.</p>\n", d.SelfContained, e(countList(d.Refs)))
	}
	if p := a.Pollution; p != nil {
		fmt.Fprintf(b, "<h3>Context pollution</h3><p class=meta>%d assistant turns reviewed in %d conversations · stage variant %s · %d failed · annotated by %s</p>\n",
			p.Turns, p.Conversations, e(p.Variant), p.Failed, e(countList(p.Annotators)))
		fmt.Fprintf(b, "<p>Polluted: %s of turns, %s of conversations.</p>\n", e(prop(p.AnyTurns)), e(prop(p.AnyConversations)))
		var bars []bar
		for _, c := range p.ByCategory {
			href := r.view.conversations("pollution", c.Category)
			bars = append(bars, propBar(c.Category+" · turns", c.Turns, r.Settings.MinN, href), propBar(c.Category+" · conversations", c.Conversations, r.Settings.MinN, href))
		}
		b.WriteString(barChart(bars, 1))
	}
	if c := a.Constraints; c != nil {
		fmt.Fprintf(b, "<h3>Session constraints</h3><p class=meta>%d constraints set on %d of %d user turns in %d conversations · stage variant %s · %d failed · %d conversations end with one in force · annotated by %s</p>\n",
			c.Constraints, c.TurnsWithNew, c.Turns, c.Conversations, e(c.Variant), c.Failed, c.ConversationsWithAny, e(countList(c.Annotators)))
		b.WriteString(barChart(shareBars(c.ByType, r.Settings.MinN, func(string) string { return r.view.conversations("constraints", "1") }), 1))
		if len(c.ByTurn) > 0 {
			var bars []bar
			top := 0.0
			for _, x := range c.ByTurn {
				top = math.Max(top, float64(x.Count))
				bars = append(bars, bar{label: "set at turn " + x.Key, v: float64(x.Count), lo: math.NaN(), hi: math.NaN(), text: fmt.Sprint(x.Count), colour: colCount})
			}
			b.WriteString(barChart(bars, top))
		}
	}
}

func propBar(label string, p Proportion, minN int, href string) bar {
	return bar{label: label, href: href, v: float64(p.Rate), lo: float64(p.Wilson.Lo), hi: float64(p.Wilson.Hi), text: fmt.Sprintf("%s (%d/%d)", pct(p.Rate), p.Count, p.Of), colour: rateColour(p.Of, minN)}
}

// shareBars draws shares; link gives each key's place in the view.
func shareBars(ss []Share, minN int, link func(key string) string) []bar {
	var bars []bar
	for _, s := range ss {
		bars = append(bars, propBar(s.Key, s.Proportion, minN, link(s.Key)))
	}
	return bars
}

// htmlProgress writes what every planned stage variant has done.
func (r *Report) htmlProgress(b *strings.Builder) {
	if len(r.Progress) == 0 {
		return
	}
	e := html.EscapeString
	b.WriteString("<h2>Progress</h2>\n<p class=meta>What each planned stage variant has done. Every number above covers the done units only; failed units can be queued again with 'ac3 retry'.</p>\n")
	b.WriteString("<table><tr><th>stage</th><th>variant</th><th>conversations done</th><th>conversations failed</th><th>never attempted</th><th>units done</th><th>units failed</th><th>failures (units: reason; example)</th></tr>\n")
	for _, p := range r.Progress {
		cls := ""
		if p.UnitsFailed > 0 || p.ConversationsNotTried > 0 {
			cls = " class=warn"
		}
		fmt.Fprintf(b, "<tr%s><td>%s</td><td class=l>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td class=l>%s</td></tr>\n",
			cls, progressStage(r.view, p), e(p.Variant), p.ConversationsDone, p.ConversationsFailed, p.ConversationsNotTried, p.UnitsDone, p.UnitsFailed, e(failureList(p.Failures)))
	}
	b.WriteString("</table>\n")
}

// progressStage is a progress row's stage, linked to the conversations
// with failed units of its variant when it has any.
func progressStage(v viewLinks, p Progress) string {
	if p.UnitsFailed == 0 {
		return html.EscapeString(p.Stage)
	}
	return anchor(v.conversations("failed", p.Stage, "variant", p.Variant), p.Stage)
}

// typeParam is a turn type as the view's filter takes it: turns without
// one have no type to filter on.
func typeParam(key string) string {
	if key == Unclassified {
		return ""
	}
	return key
}

// plural is n with the noun in the form n takes.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return itoa(n) + " " + many
}
