package report

import (
	"context"
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/compint"
	"github.com/ac3/ac3/stages/compint/measure"
)

// CompInt is the report's CompInt section: does each strategy keep a
// session constraint stated early in a long context?
type CompInt struct {
	Variants  []string      `json:"variants"` // the stage's variants read: long, then strategies
	Instances int           `json:"instances"`
	Baselines int           `json:"baselines"`
	Contexts  int           `json:"contexts"`
	Failed    int           `json:"failed"`
	MinDenom  Num           `json:"min_denominator"`
	Rows      []CompIntRow  `json:"rows"`
	Pairs     []CompIntPair `json:"pairs"`
}

// CompIntRow is one strategy × location × framing × SC type cell ("all"
// pools a dimension).
type CompIntRow struct {
	Strategy   string     `json:"strategy"`
	Location   string     `json:"location"`
	Framing    string     `json:"framing"`
	SCType     string     `json:"sc_type"`
	N          int        `json:"n"`
	Retention  RateCI     `json:"retention"`
	Evidence   RateCI     `json:"evidence"`
	LongWithSC RateCI     `json:"long_with_sc"`
	LongNoSC   RateCI     `json:"long_no_sc"`
	Compacted  RateCI     `json:"compacted"`
	UpperBound RateCI     `json:"upper_bound"`
	Effect     EffectInfo `json:"effect_retention"`
}

// RateCI is a rate over N with its Wilson interval; X may be a half-count
// (compliance asked in both orders).
type RateCI struct {
	X      Num      `json:"x"`
	N      int      `json:"n"`
	Rate   Num      `json:"rate"`
	Wilson Interval `json:"wilson"`
}

// EffectInfo is effect retention with the denominator it rests on.
type EffectInfo struct {
	Value       Num  `json:"value"` // null when undefined
	Denominator Num  `json:"denominator"`
	Defined     bool `json:"defined"`
}

// CompIntPair is an exact McNemar test between two strategies on the same
// instances.
type CompIntPair struct {
	A       string `json:"a"`
	B       string `json:"b"`
	Measure string `json:"measure"`
	N       int    `json:"n"`
	AOnly   int    `json:"a_only"`
	BOnly   int    `json:"b_only"`
	P       Num    `json:"p"`
}

// compintFold folds the CompInt stage's units, page by page.
type compintFold struct {
	variants []ledger.Variant
	z        *measure.Summarizer
}

func newCompIntFold(plans map[string][]ledger.Variant, minDen float64) *compintFold {
	vs := plans[measure.StageName]
	if len(vs) == 0 {
		return nil
	}
	return &compintFold{variants: vs, z: measure.NewSummarizer(minDen)}
}

func (f *compintFold) page(ctx context.Context, src Source, after, upto int64, progress *progressLog) error {
	if f == nil {
		return nil
	}
	return src.Units(ctx, measure.StageName, f.variants, after, upto, func(u ledger.Unit) error {
		progress.add(measure.StageName, u)
		f.z.Add(u)
		return nil
	})
}

func (f *compintFold) watch(p *progressLog) {
	if f == nil {
		return
	}
	for _, v := range f.variants {
		p.watch(measure.StageName, v.Name)
	}
}

func (f *compintFold) fill(r *Report) {
	if f == nil {
		return
	}
	s := f.z.Summary()
	c := &CompInt{Instances: s.Instances, Baselines: s.Baselines, Contexts: s.Contexts, Failed: s.Failed,
		MinDenom: Num(s.MinDenominator), Rows: []CompIntRow{}, Pairs: []CompIntPair{}}
	for _, v := range f.variants {
		c.Variants = append(c.Variants, v.Name)
	}
	for _, x := range s.Rows {
		c.Rows = append(c.Rows, CompIntRow{Strategy: x.Strategy, Location: x.Location, Framing: x.Framing, SCType: x.SCType, N: x.N,
			Retention: rateCI(x.Retention), Evidence: rateCI(x.Evidence), LongWithSC: rateCI(x.LongWithSC), LongNoSC: rateCI(x.LongNoSC),
			Compacted: rateCI(x.Compacted), UpperBound: rateCI(x.UpperBound),
			Effect: EffectInfo{Value: Num(x.Effect.Value), Denominator: Num(x.Effect.Denominator), Defined: x.Effect.Defined}})
	}
	for _, p := range s.Pairs {
		c.Pairs = append(c.Pairs, CompIntPair{A: p.A, B: p.B, Measure: p.Measure, N: p.N, AOnly: p.AOnly, BOnly: p.BOnly, P: Num(p.P)})
	}
	r.CompInt = c
	if s.Contexts > 0 && s.Contexts < 10 {
		r.Notes = append(r.Notes, fmt.Sprintf("CompInt: the instances come from %d stitched contexts; instances of one context are not independent, so the Wilson intervals are too narrow", s.Contexts))
	}
}

func rateCI(r compint.Rate) RateCI {
	return RateCI{X: Num(r.X), N: r.N, Rate: Num(r.Value), Wilson: Interval{Num(r.Lo), Num(r.Hi)}}
}

// compintHeader is the column header of the CompInt tables.
var compintHeader = []string{"strategy", "location", "framing", "SC type", "n", "retention", "evidence", "long+SC", "long, no SC", "compacted", "upper bound", "effect retention"}

func (x CompIntRow) cells() []string {
	return []string{x.Strategy, x.Location, x.Framing, x.SCType, fmt.Sprint(x.N),
		rateCell(x.Retention), rateCell(x.Evidence), rateCell(x.LongWithSC), rateCell(x.LongNoSC),
		rateCell(x.Compacted), rateCell(x.UpperBound), effectCell(x.Effect)}
}

func rateCell(r RateCI) string {
	if !r.Rate.Known() {
		return "—"
	}
	return fmt.Sprintf("%s [%s, %s]", pct(r.Rate), pct(r.Wilson.Lo), pct(r.Wilson.Hi))
}

func effectCell(e EffectInfo) string {
	if !e.Defined {
		return fmt.Sprintf("undefined (denominator %s)", fix(e.Denominator, 3))
	}
	return fmt.Sprintf("%s (denominator %s)", fix(e.Value, 3), fix(e.Denominator, 3))
}

// compintIntro says what the section measures, in the report's words.
const compintIntro = "Each instance is a long context stitched from the run's conversations with a session constraint (SC) injected into user turns and a probe appended. " +
	"Retention: a judge says whether the SC is still in the strategy's context before the probe; evidence: its wording is found exactly or nearly. " +
	"Compliance: the probe as a two-option question answered from the long context with the SC, from its no-SC baseline, from the strategy's context, and with the SC restated before the question (upper bound: by default the strategy's context of the no-SC baseline, the paper's C(H) ⊕ s; with upper_bound: injected, the strategy's context of the instance). " +
	"Effect retention = (compacted − no SC) / (upper bound − no SC)."

func (r *Report) mdCompInt(b *mdWriter) {
	c := r.CompInt
	if c == nil {
		return
	}
	b.f("## CompInt: session constraints under each strategy\n\n%s\n\n", compintIntro)
	b.f("%d instances with the SC and %d no-SC baselines from %d stitched contexts; %d units failed or unreadable. Effect retention is undefined when |upper bound − no SC| < %s.\n\n",
		c.Instances, c.Baselines, c.Contexts, c.Failed, fix(c.MinDenom, 2))
	b.f("| %s |\n|%s\n", strings.Join(compintHeader, " | "), strings.Repeat("---|", len(compintHeader)))
	for _, x := range c.Rows {
		cells := x.cells()
		for i := range cells {
			cells[i] = esc(cells[i])
		}
		b.f("| %s |\n", strings.Join(cells, " | "))
	}
	if len(c.Pairs) > 0 {
		b.f("\nPaired tests on the same instances (exact McNemar; compliance counts an instance when every order asked was answered compliantly):\n\n| A | B | measure | n | only A | only B | p |\n|---|---|---|---|---|---|---|\n")
		for _, p := range c.Pairs {
			b.f("| %s | %s | %s | %d | %d | %d | %s |\n", esc(p.A), esc(p.B), p.Measure, p.N, p.AOnly, p.BOnly, pval(p.P))
		}
	}
	b.f("\n")
}

func (r *Report) htmlCompInt(w io.Writer) error {
	c := r.CompInt
	if c == nil {
		return nil
	}
	e := html.EscapeString
	var b strings.Builder
	fmt.Fprintf(&b, "<section id=\"compint\"><h2>CompInt: session constraints under each strategy</h2>\n<p>%s</p>\n", e(compintIntro))
	fmt.Fprintf(&b, "<p>%d instances with the SC and %d no-SC baselines from %d stitched contexts; %d units failed or unreadable.</p>\n<table><thead><tr>",
		c.Instances, c.Baselines, c.Contexts, c.Failed)
	for _, h := range compintHeader {
		fmt.Fprintf(&b, "<th>%s</th>", e(h))
	}
	b.WriteString("</tr></thead><tbody>\n")
	for _, x := range c.Rows {
		b.WriteString("<tr>")
		for i, cell := range x.cells() {
			if i == 0 { // the strategy: its conversations that lost the SC
				fmt.Fprintf(&b, "<td>%s</td>", anchor(r.view.conversations("compint", "lost", "strategy", cell), cell))
				continue
			}
			fmt.Fprintf(&b, "<td>%s</td>", e(cell))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table>\n")
	if len(c.Pairs) > 0 {
		b.WriteString("<table><thead><tr><th>A</th><th>B</th><th>measure</th><th>n</th><th>only A</th><th>only B</th><th>p (exact McNemar)</th></tr></thead><tbody>\n")
		for _, p := range c.Pairs {
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td></tr>\n", e(p.A), e(p.B), e(p.Measure), p.N, p.AOnly, p.BOnly, pval(p.P))
		}
		b.WriteString("</tbody></table>\n")
	}
	b.WriteString("</section>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
