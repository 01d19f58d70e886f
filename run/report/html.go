package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// WriteHTML writes a self-contained page: inline CSS and SVG charts, no
// scripts and nothing fetched, so it opens offline.
func (r *Report) WriteHTML(w io.Writer) error {
	var b strings.Builder
	e := html.EscapeString
	b.WriteString(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>ac3 report: ` + e(r.Run) + `</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#1d2330;padding:0 1rem;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{margin-top:2.2rem;border-bottom:1px solid #d8dde6;padding-bottom:.2rem}h3{margin-top:1.6rem}
table{border-collapse:collapse;margin:.6rem 0 1rem;font-size:.88rem}th,td{border:1px solid #d8dde6;padding:.25rem .5rem;text-align:right}
th{background:#f2f4f8}td:first-child,th:first-child,td.l{text-align:left}
.meta{color:#4a5263;font-size:.9rem}.warn{color:#a3460f;font-size:.85rem}.note{background:#fff6e5;border-left:4px solid #e0a030;padding:.4rem .8rem}
svg{display:block;margin:.4rem 0 1rem;max-width:100%;height:auto}svg text{font-family:inherit;font-size:12px;fill:#1d2330}
.legend span{display:inline-block;margin-right:1rem;font-size:.85rem}.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}
</style></head><body>
`)
	fmt.Fprintf(&b, "<h1>ac3 report: %s</h1>\n", e(r.Run))
	fmt.Fprintf(&b, `<p class="meta">%d conversations. Win rate = %s. Intervals: %s (%s level, %d resamples, seed %d); %s. Test: %s.</p>`+"\n",
		r.Conversations, e(r.Settings.WinRate), e(r.Settings.Interval), pct(r.Settings.Level), r.Settings.Resamples, r.Settings.Seed, e(r.Settings.Reference), e(r.Settings.Test))
	if len(r.Judge.Prompts) > 0 {
		fmt.Fprintf(&b, `<p class="meta">Judge prompt %s · models %s · endpoints %s · order %s · context %s</p>`+"\n",
			e(list(r.Judge.Prompts)), e(list(r.Judge.Models)), e(list(r.Judge.Endpoints)), e(list(r.Judge.Orders)), e(list(r.Judge.Contexts)))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "<p class=\"note\">%s</p>\n", e(n))
	}
	if len(r.Pairs) > 0 {
		b.WriteString("<h2>Win rates</h2>\n<p class=\"meta\">Each row: strategy A's win rate against B. Thick bar: bootstrap interval over conversations; thin bar: Wilson; dashed line: parity (50%).</p>\n")
		var rows []forestRow
		for _, p := range r.Pairs {
			for _, d := range p.Dimensions {
				rows = append(rows, forestOf(p.Pair+" · "+d.Dimension, d.Overall))
			}
		}
		b.WriteString(forest(rows))
		b.WriteString("<table><tr><th>pair</th><th>dimension</th><th>n</th><th>A</th><th>B</th><th>tie</th><th>win rate A</th><th>CI</th><th>Wilson</th><th>sign p</th><th>convs</th><th>note</th></tr>\n")
		for _, p := range r.Pairs {
			for _, d := range p.Dimensions {
				s := d.Overall
				fmt.Fprintf(&b, "<tr><td>%s</td><td class=l>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td class=\"l warn\">%s</td></tr>\n",
					e(p.Pair), e(d.Dimension), s.N, s.Wins, s.Losses, s.Ties, pct(s.WinRate), ivl(s.CI), ivl(s.Wilson), pval(s.SignTest.P), s.Conversations, e(s.Warning))
			}
		}
		b.WriteString("</table>\n")
		r.htmlJudgeExtras(&b)
		for _, p := range r.Pairs {
			fmt.Fprintf(&b, "<h3>%s</h3>\n<p class=\"meta\">A = %s, B = %s · context %s · order %s · %d turns judged, %d failed · %d comparisons, %d identical (ties without a call) · same context for both strategies in %d, %d of them settled without a call</p>\n",
				e(p.Pair), e(p.A), e(p.B), e(p.Context), e(p.Order), p.UnitsDone, p.UnitsFailed, p.Comparisons, p.Identical, p.SameContext, p.SameContextNoCall)
			for _, d := range p.Dimensions {
				fmt.Fprintf(&b, "<h4>%s by turn type</h4>\n", e(d.Dimension))
				rows = rows[:0]
				for _, g := range d.ByTurnType {
					rows = append(rows, forestOf(g.Key, g.Summary))
				}
				b.WriteString(forest(rows))
				fmt.Fprintf(&b, "<h4>%s by round</h4>\n", e(d.Dimension))
				rows = rows[:0]
				for _, g := range d.ByRound {
					rows = append(rows, forestOf("round "+g.Key, g.Summary))
				}
				b.WriteString(forest(rows))
				if fs := d.Position.FirstShown; fs != nil {
					fmt.Fprintf(&b, "<p>Position: the response shown first won %d of %d decisive verdicts (%s, Wilson %s, sign p %s).", fs.FirstWins, fs.Decisive, pct(fs.FirstShare), ivl(fs.Wilson), pval(fs.SignTest.P))
					if fs.Warning != "" {
						fmt.Fprintf(&b, " <span class=warn>%s</span>", e(fs.Warning))
					}
					b.WriteString("</p>\n")
				}
				if c := d.Position.Consistency; c != nil {
					fmt.Fprintf(&b, "<p>Both orders agreed on %d of %d pairs (%s, Wilson %s); flips won by the first position: %d, by the second: %d.</p>\n", c.Consistent, c.Pairs, pct(c.Rate), ivl(c.Wilson), c.FirstBoth, c.SecondBoth)
				}
			}
		}
	}
	if len(r.Respond) > 0 {
		b.WriteString("<h2>Generated answers</h2>\n<table><tr><th>variant</th><th>done</th><th>failed</th><th>samples</th><th>mean completion tokens</th><th>mean context tokens</th><th>with reasoning</th><th>models</th><th>endpoints</th></tr>\n")
		for _, x := range r.Respond {
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%d</td><td class=l>%s</td><td class=l>%s</td></tr>\n", e(x.Variant), x.UnitsDone, x.UnitsFailed, x.Samples, fix(x.MeanCompletion, 1), fix(x.MeanContextToks, 1), x.WithReasoning, e(list(x.Models)), e(list(x.Endpoints)))
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
		b.WriteString("<table><tr><th>role</th><th>calls</th><th>cache hits</th><th>failed</th><th>prompt tokens</th><th>completion tokens</th><th>cost (USD)</th><th>models</th><th>stages</th></tr>\n")
		for _, c := range r.Cost.ByRole {
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td class=l>%s</td><td class=l>%s</td></tr>\n", e(c.Role), c.Calls, c.CacheHits, c.Failed, c.PromptTokens, c.CompletionTokens, fix(c.CostUSD, 4), e(list(c.Models)), e(list(c.Stages)))
		}
		fmt.Fprintf(&b, "<tr><td>total</td><td></td><td></td><td></td><td></td><td></td><td>%s</td><td></td><td></td></tr></table>\n", fix(r.Cost.TotalUSD, 4))
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

var palette = []string{"#2f6db5", "#d9822b", "#3a9a5b", "#b23a48", "#7a5bb5", "#4a9db0", "#8c6d3f", "#c25a9f"}

type forestRow struct {
	label        string
	rate, lo, hi float64
	wlo, whi     float64
	n            int
	small        bool
}

func forestOf(label string, s Summary) forestRow {
	return forestRow{label: label, rate: float64(s.WinRate), lo: float64(s.CI.Lo), hi: float64(s.CI.Hi), wlo: float64(s.Wilson.Lo), whi: float64(s.Wilson.Hi), n: s.N, small: s.SmallN}
}

// forest draws win rates on a 0–100% axis with interval bars.
func forest(rows []forestRow) string {
	if len(rows) == 0 {
		return "<p class=meta>No comparisons.</p>\n"
	}
	const left, width, right, rowH, top = 230, 520, 170, 26, 24
	h := top + rowH*len(rows) + 24
	x := func(v float64) float64 { return left + v*width }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %d" width="%d" height="%d" role="img" xmlns="http://www.w3.org/2000/svg">`, left+width+right, h, left+width+right, h)
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
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" dominant-baseline="middle">%s</text>`, left-10, y, html.EscapeString(r.label))
		if !isNum(r.rate) {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" dominant-baseline="middle" fill="#888">no comparisons</text>`, x(0)+6, y)
			continue
		}
		if isNum(r.wlo) && isNum(r.whi) {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#9fb6d8" stroke-width="2"/>`, x(r.wlo), y+6, x(r.whi), y+6)
		}
		if isNum(r.lo) && isNum(r.hi) {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#2f6db5" stroke-width="6" stroke-linecap="round" opacity="0.55"/>`, x(r.lo), y, x(r.hi), y)
		}
		fill := "#2f6db5"
		if r.small {
			fill = "#d9822b"
		}
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%d" r="5" fill="%s"/>`, x(r.rate), y, fill)
		note := ""
		if r.small {
			note = " · small n"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" dominant-baseline="middle">%s (n=%d%s)</text>`, left+width+10, y, pct(Num(r.rate)), r.n, note)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

type bar struct {
	label     string
	v, lo, hi float64
	text      string
}

// barChart draws horizontal bars scaled to top, with whiskers when lo and hi
// are numbers.
func barChart(bars []bar, top float64) string {
	const left, width, right, rowH, pad = 200, 480, 220, 24, 10
	h := pad*2 + rowH*len(bars)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %d" width="%d" height="%d" role="img" xmlns="http://www.w3.org/2000/svg">`, left+width+right, h, left+width+right, h)
	for i, r := range bars {
		y := pad + i*rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" dominant-baseline="middle">%s</text>`, left-10, y+rowH/2, html.EscapeString(r.label))
		w := 0.0
		if isNum(r.v) && top > 0 {
			w = r.v / top * width
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`, left, y+4, w, rowH-8, palette[i%len(palette)])
		if isNum(r.lo) && isNum(r.hi) && top > 0 {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#1d2330" stroke-width="1.5"/>`, left+r.lo/top*width, y+rowH/2, left+r.hi/top*width, y+rowH/2)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" dominant-baseline="middle">%s</text>`, left+width+10, y+rowH/2, html.EscapeString(r.text))
	}
	b.WriteString("</svg>\n")
	return b.String()
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
	const left, width, top, height, bottom = 70, 640, 16, 260, 46
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
	span := float64(max(maxX-minX, 1))
	x := func(v int) float64 { return left + float64(v-minX)/span*width }
	y := func(v float64) float64 { return top + height - v/maxY*height }
	var b strings.Builder
	W, H := left+width+150, top+height+bottom
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %d" width="%d" height="%d" role="img" xmlns="http://www.w3.org/2000/svg">`, W, H, W, H)
	for i := 0; i <= 4; i++ {
		v := maxY * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e3e6ec"/><text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, left, y(v), left+width, y(v), left-6, y(v), trimFloat(v))
	}
	for v := minX; v <= maxX; v++ {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`, x(v), top+height+16, v)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`, left+width/2, top+height+36, html.EscapeString(xLabel))
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
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d" dominant-baseline="middle">%s</text>`, left+width+16, top+i*20, c, left+width+34, top+i*20+6, html.EscapeString(s.name))
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
