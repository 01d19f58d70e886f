package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"github.com/ac3/ac3/pipeline/cells"
)

// WriteHTML writes a self-contained page: inline CSS and SVG charts, no
// scripts and nothing fetched, so it opens offline. A table of contents
// leads to every section; names in tables and charts link into 'ac3 view'
// (Options.ViewBase), which the page says has to be running for them.
func (r *Report) WriteHTML(w io.Writer) error {
	var b strings.Builder
	e := html.EscapeString
	b.WriteString(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>ac3 report: ` + e(r.Run) + `</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#1d2330;padding:0 1rem;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{margin-top:2.2rem;border-bottom:1px solid #d8dde6;padding-bottom:.2rem}h3{margin-top:1.6rem}
h2,h3,h4{scroll-margin-top:.6rem}
table{border-collapse:collapse;margin:.6rem 0 1rem;font-size:.88rem;max-width:100%}th,td{border:1px solid #d8dde6;padding:.25rem .5rem;text-align:right;overflow-wrap:break-word}
th{background:#f2f4f8}td:first-child,th:first-child,td.l{text-align:left}
a{color:#1f5aa6}a:visited{color:#5b3f99}
.meta{color:#4a5263;font-size:.9rem}.warn{color:#a3460f;font-size:.85rem}.note{background:#fff6e5;border-left:4px solid #e0a030;padding:.4rem .8rem}
svg{display:block;margin:.4rem 0 1rem;max-width:100%;height:auto}svg text{font-family:inherit;font-size:12px;fill:#1d2330}svg a text{fill:#1f5aa6}
.legend{font-size:.85rem;margin:.3rem 0 .8rem}.legend span{display:inline-block;margin-right:1.2rem}.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px;border-radius:2px}
nav.toc{background:#f7f8fb;border:1px solid #d8dde6;padding:.5rem 1rem;font-size:.9rem}nav.toc ol{margin:.2rem 0;padding-left:1.4rem}nav.toc ol ol{font-size:.85rem}
details{margin:.4rem 0 1rem}summary{cursor:pointer;color:#1f5aa6}
.ex{border-left:4px solid #8a94a6;background:#fafbfc;margin:.4rem 0;padding:.3rem .8rem}.ex p{margin:.2rem 0}.ex .why{font-style:italic}
.ex.A{border-color:` + colA + `}.ex.B{border-color:` + colB + `}.ex.tie{border-color:` + colTie + `}
.out{display:inline-block;padding:0 .4rem;border-radius:3px;color:#fff;font-size:.8rem}.out.A{background:` + colA + `}.out.B{background:` + colB + `}.out.tie{background:` + colTie + `}
</style></head><body>
`)
	fmt.Fprintf(&b, "<h1>ac3 report: %s</h1>\n", e(r.Run))
	fmt.Fprintf(&b, `<p class="meta">%d conversations. Win rate = %s. Intervals: %s (%s level, %d resamples, seed %d); %s. Test: %s.</p>`+"\n",
		r.Conversations, e(r.Settings.WinRate), e(r.Settings.Interval), pct(r.Settings.Level), r.Settings.Resamples, r.Settings.Seed, e(r.Settings.Reference), e(r.Settings.Test))
	if len(r.Judge.Prompts) > 0 {
		fmt.Fprintf(&b, `<p class="meta">Judge prompt %s · models %s · endpoints %s · order %s · context %s</p>`+"\n",
			e(list(r.Judge.Prompts)), e(list(r.Judge.Models)), e(list(r.Judge.Endpoints)), e(list(r.Judge.Orders)), e(list(r.Judge.Contexts)))
	}
	fmt.Fprintf(&b, `<p class="meta">Links in tables and charts open the turns behind a number in <a href="%s">ac3 view</a>, which has to be running for them: <code>ac3 view --db %s</code> (they point at %s). Without it this page reads on its own.</p>`+"\n",
		e(r.view.run()), e(r.Run), e(r.view.link("")))
	b.WriteString(tocMark)
	b.WriteString(r.legendHTML())
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "<p class=\"note\">%s</p>\n", e(n))
	}
	if len(r.Pairs) > 0 {
		b.WriteString("<h2>Win rates</h2>\n<p class=\"meta\">Each row: strategy A's win rate against B. Thick bar: bootstrap interval over conversations; thin bar: Wilson; dashed line: parity (50%). A pair's name opens its verdicts in the view.</p>\n")
		var rows []forestRow
		for _, p := range r.Pairs {
			for _, d := range p.Dimensions {
				rows = append(rows, forestOf(p.Pair+" · "+d.Dimension, d.Overall, r.view.verdicts(p.Pair, d.Dimension)))
			}
		}
		b.WriteString(forest(rows))
		b.WriteString("<table><tr><th>pair</th><th>dimension</th><th>n</th><th>A</th><th>B</th><th>tie</th><th>win rate A</th><th>CI</th><th>Wilson</th><th>sign p</th><th>convs</th><th>note</th></tr>\n")
		for _, p := range r.Pairs {
			for _, d := range p.Dimensions {
				s := d.Overall
				fmt.Fprintf(&b, "<tr><td>%s</td><td class=l>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td class=\"l warn\">%s</td></tr>\n",
					anchor(r.view.verdicts(p.Pair, d.Dimension), p.Pair), e(d.Dimension), s.N, s.Wins, s.Losses, s.Ties, pct(s.WinRate), ivl(s.CI), ivl(s.Wilson), pval(s.SignTest.P), s.Conversations, e(s.Warning))
			}
		}
		b.WriteString("</table>\n")
		r.htmlJudgeExtras(&b)
		b.WriteString("<h2>Each pair in detail</h2>\n")
		for _, p := range r.Pairs {
			r.htmlPair(&b, p)
		}
	}
	if len(r.Respond) > 0 {
		b.WriteString("<h2>Generated answers</h2>\n<table><tr><th>variant</th><th>done</th><th>failed</th><th>samples</th><th>mean completion tokens</th><th>mean context tokens</th><th>with reasoning</th><th>models</th><th>endpoints</th></tr>\n")
		for _, x := range r.Respond {
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%d</td><td class=l>%s</td><td class=l>%s</td></tr>\n", anchor(r.view.strategy("respond", x.Variant), x.Variant), x.UnitsDone, x.UnitsFailed, x.Samples, fix(x.MeanCompletion, 1), fix(x.MeanContextToks, 1), x.WithReasoning, e(list(x.Models)), e(list(x.Endpoints)))
		}
		b.WriteString("</table>\n")
	}
	r.htmlCuration(&b)
	r.htmlAnnotations(&b)
	r.htmlReplyPollution(&b)
	if err := r.htmlCompInt(&b); err != nil {
		return fmt.Errorf("rendering the CompInt section: %w", err)
	}
	r.htmlProgress(&b)
	r.htmlLearned(&b)
	b.WriteString("<h2>Cost by role</h2>\n")
	if len(r.Cost.ByRole) == 0 {
		b.WriteString("<p>No model calls recorded.</p>\n")
	} else {
		b.WriteString("<p class=meta>" + e(spendNote) + "</p>\n")
		var bars []bar
		top := 0.0
		for _, c := range r.Cost.ByRole {
			top = math.Max(top, float64(c.CostUSD))
			bars = append(bars, bar{label: c.Role, v: float64(c.CostUSD), lo: math.NaN(), hi: math.NaN(), text: fmt.Sprintf("$%s · %d calls", fix(c.CostUSD, 4), c.Calls)})
		}
		if top == 0 {
			top = 1
		}
		b.WriteString(barChart(bars, top))
		b.WriteString("<table><tr><th>role</th><th>calls</th><th>cache hits</th><th>failed</th><th>prompt tokens</th><th>endpoint-cached tokens</th><th>completion tokens</th><th>cost (USD)</th><th>models</th><th>stages</th></tr>\n")
		for _, c := range r.Cost.ByRole {
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%d</td><td>%s</td><td class=l>%s</td><td class=l>%s</td></tr>\n", e(c.Role), c.Calls, c.CacheHits, c.Failed, c.PromptTokens, c.cachedCell(), c.CompletionTokens, fix(c.CostUSD, 4), e(list(c.Models)), e(list(c.Stages)))
		}
		fmt.Fprintf(&b, "<tr><td>total</td><td></td><td></td><td></td><td></td><td></td><td></td><td>%s</td><td></td><td></td></tr></table>\n", fix(r.Cost.TotalUSD, 4))
		b.WriteString("<p class=meta>" + e(cachedNote) + "</p>\n")
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, withTOC(b.String()))
	return err
}

// htmlPair writes one pair's breakdowns, position checks and example
// verdicts.
func (r *Report) htmlPair(b *strings.Builder, p PairReport) {
	e := html.EscapeString
	fmt.Fprintf(b, "<h3>%s</h3>\n<p class=\"meta\">A = %s, B = %s · context %s · order %s · %d turns judged, %d failed · %d comparisons, %d identical (ties without a call) · same context for both strategies in %d, %d of them settled without a call</p>\n",
		e(p.Pair), e(p.A), e(p.B), e(p.Context), e(p.Order), p.UnitsDone, p.UnitsFailed, p.Comparisons, p.Identical, p.SameContext, p.SameContextNoCall)
	var rows []forestRow
	for _, d := range p.Dimensions {
		fmt.Fprintf(b, "<h4>%s by turn type</h4>\n", e(d.Dimension))
		rows = rows[:0]
		for _, g := range d.ByTurnType {
			rows = append(rows, forestOf(g.Key, g.Summary, r.view.verdicts(p.Pair, d.Dimension, "type", g.Key)))
		}
		b.WriteString(forest(rows))
		fmt.Fprintf(b, "<h4>%s by round</h4>\n", e(d.Dimension))
		rows = rows[:0]
		for _, g := range d.ByRound {
			rows = append(rows, forestOf("round "+g.Key, g.Summary, r.view.verdicts(p.Pair, d.Dimension, "turn", g.Key)))
		}
		b.WriteString(forest(rows))
		if fs := d.Position.FirstShown; fs != nil {
			fmt.Fprintf(b, "<p>Position: the response shown first won %d of %d decisive verdicts (%s, Wilson %s, sign p %s).", fs.FirstWins, fs.Decisive, pct(fs.FirstShare), ivl(fs.Wilson), pval(fs.SignTest.P))
			if fs.Warning != "" {
				fmt.Fprintf(b, " <span class=warn>%s</span>", e(fs.Warning))
			}
			b.WriteString("</p>\n")
		}
		if c := d.Position.Consistency; c != nil {
			fmt.Fprintf(b, "<p>Both orders agreed on %d of %d pairs (%s, Wilson %s); flips won by the first position: %d, by the second: %d.</p>\n", c.Consistent, c.Pairs, pct(c.Rate), ivl(c.Wilson), c.FirstBoth, c.SecondBoth)
		}
		r.htmlExamples(b, p, d)
	}
}

// htmlExamples writes a pair's example verdicts on one dimension and a
// link to all of them.
func (r *Report) htmlExamples(b *strings.Builder, p PairReport, d DimReport) {
	e := html.EscapeString
	all := r.view.verdicts(p.Pair, d.Dimension)
	fmt.Fprintf(b, "<h4>%s: example verdicts</h4>\n", e(d.Dimension))
	if len(d.Examples) == 0 {
		fmt.Fprintf(b, "<p class=meta>No verdict with the judge's reasoning to show; %s.</p>\n", anchor(all, "all verdicts in the view"))
		return
	}
	fmt.Fprintf(b, "<p class=meta>%s, chosen by a hash of the report seed and the verdicts' ids (one per outcome where there is one); %s.</p>\n", exampleCount(len(d.Examples)), anchor(all, "all "+plural(d.Overall.N, "verdict", "verdicts")+" in the view"))
	for _, x := range d.Examples {
		fmt.Fprintf(b, "<div class=\"ex %s\"><p><span class=\"out %s\">%s</span> %s, turn %d (%s)%s · %s</p>",
			e(x.Outcome), e(x.Outcome), e(winnerText(x)), e(x.Conversation), x.Turn, e(x.TurnType), sampleText(x.Sample), anchor(r.view.turn(x.Conversation, x.Turn, "verdicts"), "open in the view"))
		if len(x.Orders) == 0 {
			fmt.Fprintf(b, "<p class=why>%s</p>", e(x.Justification))
		}
		for _, o := range x.Orders {
			fmt.Fprintf(b, "<p>%s: <span class=why>%s</span></p>", e(orderText(o)), e(orNone(o.Justification)))
		}
		b.WriteString("</div>\n")
	}
}

func exampleCount(n int) string {
	if n == 1 {
		return "One verdict"
	}
	return plural(n, "verdict", "verdicts")
}

func winnerText(x Example) string {
	if x.Outcome == "tie" {
		return "tie"
	}
	return x.Winner + " won"
}

// orderText says what one order of a both-orders verdict preferred.
func orderText(o ExampleCall) string {
	w := o.Winner + " won"
	if o.Winner == "tie" {
		w = "tie"
	}
	return o.First + " shown first → " + w
}

// orNone is a justification, or says there was none.
func orNone(s string) string {
	if s == "" {
		return "(no reasoning given)"
	}
	return s
}

func sampleText(s int) string {
	if s == 0 {
		return ""
	}
	return ", sample " + itoa(s)
}

// anchor is a link with text, both escaped.
func anchor(href, text string) string {
	return `<a href="` + html.EscapeString(href) + `">` + html.EscapeString(text) + `</a>`
}

// The report's colours, each with one meaning, named in legendHTML: an
// estimate, the same estimate on too few comparisons, a plain count, and
// the outcome of an example verdict.
const (
	colEstimate = "#2f6db5"
	colSmall    = "#d9822b"
	colCount    = "#6b7280"
	colA        = "#2a9d8f"
	colB        = "#b5472f"
	colTie      = "#b8bec8"
)

// legendHTML names the colours the page uses: the outcome colours only
// when there are example verdicts, the strategies' line colours only when
// the token chart is drawn.
func (r *Report) legendHTML() string {
	item := func(colour, text string) string {
		return `<span><i style="background:` + colour + `"></i>` + text + `</span>`
	}
	s := `<div class="legend"><b>Colours:</b> ` + item(colEstimate, "a rate or win rate") +
		item(colSmall, "the same on a small sample (rough)") + item(colCount, "a count or spend")
	if len(r.Pairs) > 0 {
		s += item(colA, "strategy A won (examples)") + item(colB, "strategy B won") + item(colTie, "tie")
	}
	s += " Whiskers and thin bars: intervals."
	if len(r.Tokens) > 0 {
		s += " The token chart gives each strategy a colour of its own, named beside it."
	}
	return s + "</div>\n"
}

// palette colours the token chart's strategies. It leaves out the colours
// that mean something elsewhere on the page (see legendHTML).
var palette = []string{"#7570b3", "#e7298a", "#66a61e", "#a6761d", "#17becf", "#393b79", "#bcbd22", "#8c564b"}

type forestRow struct {
	label        string
	href         string // where the label links (the view), or ""
	rate, lo, hi float64
	wlo, whi     float64
	n            int
	small        bool
}

func forestOf(label string, s Summary, href string) forestRow {
	return forestRow{label: label, href: href, rate: float64(s.WinRate), lo: float64(s.CI.Lo), hi: float64(s.CI.Hi), wlo: float64(s.Wilson.Lo), whi: float64(s.Wilson.Hi), n: s.N, small: s.SmallN}
}

// forest draws win rates on a 0–100% axis with interval bars. The margins
// are as wide as the longest label and value text, so none is cut off.
func forest(rows []forestRow) string {
	if len(rows) == 0 {
		return "<p class=meta>No comparisons.</p>\n"
	}
	const width, rowH, top = 520, 26, 24
	// At least minLabel, so charts of short labels line up with each other.
	left, right := minLabel, 60.0
	notes := make([]string, len(rows))
	for i, r := range rows {
		left = math.Max(left, textWidth(r.label)+gap*2)
		if isNum(r.rate) {
			note := ""
			if r.small {
				note = " · small n"
			}
			notes[i] = fmt.Sprintf("%s (n=%d%s)", pct(Num(r.rate)), r.n, note)
		} else {
			notes[i] = "no comparisons"
		}
		right = math.Max(right, textWidth(notes[i])+gap*2)
	}
	left, right = math.Ceil(left), math.Ceil(right)
	W := int(left + width + right)
	h := top + rowH*len(rows) + 24
	x := func(v float64) float64 { return left + v*width }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %d" width="%d" height="%d" role="img" xmlns="http://www.w3.org/2000/svg">`, W, h, W, h)
	for _, t := range []float64{0, .25, .5, .75, 1} {
		dash := ""
		if t == .5 {
			dash = ` stroke-dasharray="4 3" stroke="#888"`
		} else {
			dash = ` stroke="#e3e6ec"`
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d"%s/>`, x(t), top-6, x(t), h-20, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d%%</text>`, x(t), h-6, int(t*100))
	}
	for i, r := range rows {
		y := top + i*rowH + rowH/2
		b.WriteString(svgText(fmt.Sprintf(`x="%.0f" y="%d" text-anchor="end" dominant-baseline="middle"`, left-gap, y), r.label, r.href))
		if !isNum(r.rate) {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" dominant-baseline="middle" fill="#888">%s</text>`, x(1)+gap, y, notes[i])
			continue
		}
		if isNum(r.wlo) && isNum(r.whi) {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#9fb6d8" stroke-width="2"/>`, x(r.wlo), y+6, x(r.whi), y+6)
		}
		fill := colEstimate
		if r.small {
			fill = colSmall
		}
		if isNum(r.lo) && isNum(r.hi) {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="6" stroke-linecap="round" opacity="0.55"/>`, x(r.lo), y, x(r.hi), y, fill)
		}
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%d" r="5" fill="%s"/>`, x(r.rate), y, fill)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" dominant-baseline="middle">%s</text>`, x(1)+gap, y, html.EscapeString(notes[i]))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// gap is the space between a chart's text and what it labels; minLabel
// the narrowest room for labels.
const gap, minLabel = 10, 180.0

// svgText is a text element with attrs, linked to href when it is set.
func svgText(attrs, text, href string) string {
	t := `<text ` + attrs + `>` + html.EscapeString(text) + `</text>`
	if href == "" {
		return t
	}
	return `<a href="` + html.EscapeString(href) + `">` + t + `</a>`
}

// textWidth is a generous estimate of the width of s in pixels at the
// charts' 12px sans-serif font: the margins are sized by it, and the
// browser test checks the estimate against what Chromium draws. Wide
// (East Asian) runes take a full em.
func textWidth(s string) float64 {
	w := 0.0
	for _, r := range s {
		switch {
		case cellWidth(r) == 2:
			w += 12.5
		case strings.ContainsRune("il.,:;'|!ɪ ", r):
			w += 4
		case strings.ContainsRune("mwMW%@", r):
			w += 11
		case r >= 'A' && r <= 'Z':
			w += 8.5
		case r < 0x80:
			w += 7
		default:
			w += 8 // other scripts and symbols (—, ·, ≥)
		}
	}
	return w
}

// cellWidth is how many terminal cells r takes, the East Asian Wide and
// Fullwidth runes two. Runes of ambiguous width count one whatever the
// locale, so the report's bytes do not depend on the machine.
func cellWidth(r rune) int { return cells.Rune(r) }

type bar struct {
	label     string
	href      string // where the label links (the view), or ""
	v, lo, hi float64
	text      string
	colour    string // colEstimate when empty
}

// barChart draws horizontal bars scaled to top, with whiskers when lo and hi
// are numbers. Like forest, its margins fit its longest texts.
func barChart(bars []bar, top float64) string {
	const width, rowH, pad = 480, 24, 10
	left, right := minLabel, 40.0
	for _, r := range bars {
		left = math.Max(left, textWidth(r.label)+gap*2)
		right = math.Max(right, textWidth(r.text)+gap*2)
	}
	left, right = math.Ceil(left), math.Ceil(right)
	W := int(left + width + right)
	h := pad*2 + rowH*len(bars)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %d" width="%d" height="%d" role="img" xmlns="http://www.w3.org/2000/svg">`, W, h, W, h)
	for i, r := range bars {
		y := pad + i*rowH
		b.WriteString(svgText(fmt.Sprintf(`x="%.0f" y="%d" text-anchor="end" dominant-baseline="middle"`, left-gap, y+rowH/2), r.label, r.href))
		w := 0.0
		if isNum(r.v) && top > 0 {
			w = r.v / top * width
		}
		fmt.Fprintf(&b, `<rect x="%.0f" y="%d" width="%.1f" height="%d" fill="%s"/>`, left, y+4, w, rowH-8, barColour(r))
		if isNum(r.lo) && isNum(r.hi) && top > 0 {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#1d2330" stroke-width="1.5"/>`, left+r.lo/top*width, y+rowH/2, left+r.hi/top*width, y+rowH/2)
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%d" dominant-baseline="middle">%s</text>`, left+width+gap, y+rowH/2, html.EscapeString(r.text))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// barColour is the bar's own colour, else that of an estimate when it has
// an interval and of a count or spend when it has none.
func barColour(r bar) string {
	switch {
	case r.colour != "":
		return r.colour
	case isNum(r.lo) && isNum(r.hi):
		return colEstimate
	}
	return colCount
}

type point struct {
	x int
	y float64
}

type series struct {
	name string
	pts  []point
}

// lineChart draws one line per series over integer x values.
func lineChart(ss []series, xLabel, yLabel string) string {
	const width, top, height, bottom = 640, 16, 260, 46
	minX, maxX, maxY := math.MaxInt, math.MinInt, 0.0
	for _, s := range ss {
		for _, p := range s.pts {
			minX, maxX = min(minX, p.x), max(maxX, p.x)
			if isNum(p.y) {
				maxY = math.Max(maxY, p.y)
			}
		}
	}
	if minX > maxX {
		return "<p class=meta>No data.</p>\n"
	}
	if maxY == 0 {
		maxY = 1
	}
	maxY = niceCeil(maxY)
	// The left margin holds the rotated axis title and the widest tick
	// label; the right one the series names.
	left, legend := 0.0, 0.0
	for i := 0; i <= 4; i++ {
		left = math.Max(left, 30+textWidth(trimFloat(maxY*float64(i)/4))+gap)
	}
	for _, s := range ss {
		legend = math.Max(legend, textWidth(s.name))
	}
	left = math.Ceil(left)
	span := float64(max(maxX-minX, 1))
	x := func(v int) float64 { return left + float64(v-minX)/span*width }
	y := func(v float64) float64 { return top + height - v/maxY*height }
	var b strings.Builder
	W, H := int(left+width+34+legend+gap), top+height+bottom
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %d" width="%d" height="%d" role="img" xmlns="http://www.w3.org/2000/svg">`, W, H, W, H)
	for i := 0; i <= 4; i++ {
		v := maxY * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#e3e6ec"/><text x="%.0f" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, left, y(v), left+width, y(v), left-6, y(v), trimFloat(v))
	}
	for v := minX; v <= maxX; v++ {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`, x(v), top+height+16, v)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">%s</text>`, left+width/2, top+height+36, html.EscapeString(xLabel))
	fmt.Fprintf(&b, `<text x="14" y="%d" text-anchor="middle" transform="rotate(-90 14 %d)">%s</text>`, top+height/2, top+height/2, html.EscapeString(yLabel))
	for i, s := range ss {
		c := palette[i%len(palette)]
		var pts []string
		for _, p := range s.pts {
			if isNum(p.y) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.x), y(p.y)))
			}
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, c, strings.Join(pts, " "))
		for _, p := range pts {
			xy := strings.Split(p, ",")
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`, xy[0], xy[1], c)
		}
		fmt.Fprintf(&b, `<rect x="%.0f" y="%d" width="12" height="12" fill="%s"/><text x="%.0f" y="%d" dominant-baseline="middle">%s</text>`, left+width+16, top+i*20, c, left+width+34, top+i*20+6, html.EscapeString(s.name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func isNum(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
