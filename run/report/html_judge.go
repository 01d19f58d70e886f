package report

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/ac3/ac3/judge"
)

// htmlJudgeExtras writes the ties without a call, the length-controlled
// win rates and the McNemar tests between arms.
func (r *Report) htmlJudgeExtras(b *strings.Builder) {
	e := html.EscapeString
	b.WriteString("<h3>Ties without a call</h3>\n<p class=\"meta\">Identical answers are a tie and the judge is not asked; this mostly happens when both strategies built the same context for the turn.</p>\n")
	b.WriteString("<table><tr><th>pair</th><th>comparisons</th><th>same context</th><th>ties without a call</th><th>of them same context</th></tr>\n")
	for _, p := range r.Pairs {
		fmt.Fprintf(b, "<tr><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td></tr>\n", anchor(r.view.verdicts(p.Pair, judge.Quality, "winner", "tie"), p.Pair), p.Comparisons, p.SameContext, p.Identical, p.SameContextNoCall)
	}
	b.WriteString("</table>\n")

	b.WriteString("<h2>Length-controlled win rates</h2>\n")
	fmt.Fprintf(b, "<p class=\"meta\">%s. Slope: per unit of normalised length difference (positive: the longer answer was favoured); scale: standard deviation of A's minus B's answer length in characters.</p>\n", e(capital(r.Settings.LengthControl)))
	var rows []forestRow
	for _, p := range r.Pairs {
		for _, d := range p.Dimensions {
			if l := d.LengthControlled; l != nil {
				rows = append(rows, forestRow{label: p.Pair + " · " + d.Dimension, href: r.view.verdicts(p.Pair, d.Dimension), rate: float64(l.LCWinRate), lo: float64(l.CI.Lo), hi: float64(l.CI.Hi), wlo: math.NaN(), whi: math.NaN(), n: l.N, small: l.SmallN})
			}
		}
	}
	b.WriteString(forest(rows))
	b.WriteString("<table><tr><th>pair</th><th>dimension</th><th>n</th><th>win rate A</th><th>LC win rate A</th><th>CI</th><th>slope</th><th>scale</th><th>convs</th><th>note</th></tr>\n")
	for _, p := range r.Pairs {
		for _, d := range p.Dimensions {
			l := d.LengthControlled
			if l == nil {
				continue
			}
			fmt.Fprintf(b, "<tr><td>%s</td><td class=l>%s</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td class=\"l warn\">%s</td></tr>\n",
				anchor(r.view.verdicts(p.Pair, d.Dimension), p.Pair), e(d.Dimension), l.N, pct(l.WinRate), pct(l.LCWinRate), ivl(l.CI), fix(l.Slope, 3), fix(l.Scale, 0), l.Conversations, e(lcNote(l)))
		}
	}
	b.WriteString("</table>\n")

	if len(r.Arms) == 0 {
		return
	}
	b.WriteString("<h2>Arms against a common reference</h2>\n")
	fmt.Fprintf(b, "<p class=\"meta\">%s. Turns of one conversation are treated as independent, so p is optimistic when conversations have many turns. The counts of turns where only one arm won open those turns in the view.</p>\n", e(capital(r.Settings.ArmTest)))
	fmt.Fprintf(b, "<details><summary>%s</summary>\n", e(armSummary(r.Arms)))
	b.WriteString("<table><tr><th>dimension</th><th>reference</th><th>X</th><th>Y</th><th>context</th><th>turns</th><th>X beat ref</th><th>Y beat ref</th><th>X − Y</th><th>X only</th><th>Y only</th><th>McNemar p</th><th>invalid</th></tr>\n")
	for _, a := range r.Arms {
		fmt.Fprintf(b, "<tr><td class=l>%s</td><td class=l>%s</td><td class=l>%s</td><td class=l>%s</td><td class=l>%s</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td></tr>\n",
			e(a.Dimension), e(a.Reference), e(a.X), e(a.Y), e(a.Context), a.Turns, pct(a.XRate), pct(a.YRate), pct(a.Diff),
			anchor(r.view.onlyArm(a.XPair, a.X, a.YPair, a.Dimension), itoa(a.XBetter)), anchor(r.view.onlyArm(a.YPair, a.Y, a.XPair, a.Dimension), itoa(a.YBetter)), pval(a.P), a.Invalid)
	}
	b.WriteString("</table>\n</details>\n")
}

// armSummary is the line the McNemar table is folded under: how many
// tests, and which differ at the 5% level.
func armSummary(arms []ArmRow) string {
	var sig []string
	for _, a := range arms {
		if a.P.Known() && a.P < 0.05 {
			better := a.X
			if a.Diff < 0 {
				better = a.Y
			}
			sig = append(sig, better+" over "+otherArm(a, better)+" vs "+a.Reference+" on "+a.Dimension+" (p "+pval(a.P)+")")
		}
	}
	s := plural(len(arms), "McNemar test", "McNemar tests") + " between arms"
	if len(sig) == 0 {
		return s + "; none at p < 0.05. Show the table"
	}
	return s + "; at p < 0.05: " + strings.Join(sig, "; ") + ". Show the table"
}

func otherArm(a ArmRow, arm string) string {
	if arm == a.X {
		return a.Y
	}
	return a.X
}
