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
			fmt.Fprintf(b, "<tr><td>%s</td><td>%d</td><td>%s</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td></tr>\n", e(t.Strategy), t.N, fix(t.Mean, 1), t.Total, t.TurnsVsFC, fix(t.VsFC, 3), fix(t.MeanVsFC, 3))
		}
		b.WriteString("</table>\n")
		rounds := tokenRounds(r.Tokens)
		b.WriteString("<table><tr><th>ratio to fc by round</th>")
		for _, k := range rounds {
			fmt.Fprintf(b, "<th>%d</th>", k)
		}
		b.WriteString("</tr>\n")
		for _, t := range r.Tokens {
			fmt.Fprintf(b, "<tr><td>%s</td>", e(t.Strategy))
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
		b.WriteString("</table>\n")
	}
	if len(r.Gates) > 0 {
		b.WriteString("<h2>Gate-open rates</h2>\n<p class=meta>How often a strategy changed the context, on the turns the analyzer ran on (bars: rate with Wilson interval). All turns also counts the turns below the floor and past the cap, as closed.</p>\n")
		var bars []bar
		for _, g := range r.Gates {
			bars = append(bars, gateBar(g.Strategy+" · analyzed", g.Analyzed))
			for _, x := range g.ByTurnType {
				bars = append(bars, gateBar(g.Strategy+" · "+x.Key, x.Rate))
			}
			bars = append(bars, gateBar(g.Strategy+" · all turns", g.All))
		}
		b.WriteString(barChart(bars, 1))
		for _, g := range r.Gates {
			if m := r.missing("curate", g.Strategy); m != "none" {
				fmt.Fprintf(b, "<p class=warn>%s: %s; its rates cover the curated turns only.</p>\n", e(g.Strategy), e(m))
			}
		}
		b.WriteString("<table><tr><th>strategy</th><th>round</th><th>analyzed turns</th><th>open</th><th>rate</th><th>Wilson</th></tr>\n")
		for _, g := range r.Gates {
			for _, x := range g.ByRound {
				fmt.Fprintf(b, "<tr><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td></tr>\n", e(g.Strategy), x.Round, x.Turns, x.Open, pct(x.Rate.Rate), ivl(x.Wilson))
			}
		}
		b.WriteString("</table>\n")
	}
	if len(r.Resets) > 0 {
		b.WriteString("<h2>Resets per conversation</h2>\n<table><tr><th>strategy</th><th>conversations</th><th>with a reset</th><th>resets</th><th>mean per conversation</th><th>conversations by resets (resets: conversations)</th></tr>\n")
		for _, x := range r.Resets {
			fmt.Fprintf(b, "<tr><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td class=l>%s</td></tr>\n", e(x.Strategy), x.Conversations, x.WithReset, x.Resets, fix(x.MeanPerConv, 2), e(histogram(x.Histogram)))
		}
		b.WriteString("</table>\n")
	}
	if len(r.AnalysisCost) > 0 {
		b.WriteString("<h2>Analysis cost</h2>\n<p class=meta>Every AC3 operator of a run reuses one analysis per turn and records it: compare rows, do not add them up. " + e(analysisCostPricing) + "</p>\n")
		b.WriteString("<table><tr><th>strategy</th><th>turns</th><th>analyzed</th><th>analysis calls</th><th>operator calls</th><th>prompt tokens</th><th>completion tokens</th><th>analysis (USD)</th><th>operator (USD)</th><th>per analyzed turn (USD)</th><th>calls per analyzed turn</th></tr>\n")
		for _, x := range r.AnalysisCost {
			fmt.Fprintf(b, "<tr><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
				e(x.Strategy), x.Turns, x.AnalyzedTurns, x.AnalysisCalls, x.OperatorCalls, x.PromptTokens, x.CompletionTokens,
				fix(x.AnalysisUSD, 4), fix(x.OperatorUSD, 4), fix(x.PerAnalyzedTurnUSD, 6), fix(x.PerAnalyzedTurnCalls, 2))
		}
		b.WriteString("</table>\n")
	}
}

func gateBar(label string, g Rate) bar {
	return bar{label: label, v: float64(g.Rate), lo: float64(g.Wilson.Lo), hi: float64(g.Wilson.Hi), text: fmt.Sprintf("%s (%d/%d)", pct(g.Rate), g.Open, g.Turns)}
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
		bars := shareBars(d.Types)
		if q := d.LabellerQuality; q != nil {
			fmt.Fprintf(b, "<p class=note>%s</p>\n", e(labellerNote(q)))
			for i := range bars {
				bars[i].text += fmt.Sprintf(" · labeller coverage %s, accuracy %s", pct(q.Coverage), pct(q.Accuracy))
			}
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
			bars = append(bars, propBar(c.Category+" · turns", c.Turns), propBar(c.Category+" · conversations", c.Conversations))
		}
		b.WriteString(barChart(bars, 1))
	}
	if c := a.Constraints; c != nil {
		fmt.Fprintf(b, "<h3>Session constraints</h3><p class=meta>%d constraints set on %d of %d user turns in %d conversations · stage variant %s · %d failed · %d conversations end with one in force · annotated by %s</p>\n",
			c.Constraints, c.TurnsWithNew, c.Turns, c.Conversations, e(c.Variant), c.Failed, c.ConversationsWithAny, e(countList(c.Annotators)))
		b.WriteString(barChart(shareBars(c.ByType), 1))
		if len(c.ByTurn) > 0 {
			var bars []bar
			top := 0.0
			for _, x := range c.ByTurn {
				top = math.Max(top, float64(x.Count))
				bars = append(bars, bar{label: "set at turn " + x.Key, v: float64(x.Count), lo: math.NaN(), hi: math.NaN(), text: fmt.Sprint(x.Count)})
			}
			b.WriteString(barChart(bars, top))
		}
	}
}

func propBar(label string, p Proportion) bar {
	return bar{label: label, v: float64(p.Rate), lo: float64(p.Wilson.Lo), hi: float64(p.Wilson.Hi), text: fmt.Sprintf("%s (%d/%d)", pct(p.Rate), p.Count, p.Of)}
}

func shareBars(ss []Share) []bar {
	var bars []bar
	for _, s := range ss {
		bars = append(bars, propBar(s.Key, s.Proportion))
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
			cls, e(p.Stage), e(p.Variant), p.ConversationsDone, p.ConversationsFailed, p.ConversationsNotTried, p.UnitsDone, p.UnitsFailed, e(failureList(p.Failures)))
	}
	b.WriteString("</table>\n")
}
