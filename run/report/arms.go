package report

import (
	"strings"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
)

// armTies is how a tie enters the comparison of two arms: as "did not
// win", the convention of both papers (see stats.TiePolicy).
const armTies = stats.TiesAsLosses

// ArmRow is the exact McNemar test between two arms judged against the same
// reference on the same turns (and samples), on one dimension: for example
// gated-reset and fc, from the pairs gated-reset:ao and fc:ao. Each turn
// gives each arm a success when it beat the reference (a tie is not a
// success); the test counts the turns where exactly one arm succeeded
// (stats.ArmTable). Turns of one conversation are treated as independent,
// so with many turns per conversation P is optimistic.
type ArmRow struct {
	Dimension  string `json:"dimension"`
	Context    string `json:"context"`
	Reference  string `json:"reference"`
	X          string `json:"x"`
	Y          string `json:"y"`
	XPair      string `json:"x_pair"` // the judge variants the outcomes come from
	YPair      string `json:"y_pair"`
	Ties       string `json:"ties"`       // tie policy: "losses"
	Turns      int    `json:"turns"`      // comparisons both arms have, counted
	Invalid    int    `json:"invalid"`    // left out: an outcome was invalid
	Concordant int    `json:"concordant"` // both arms succeeded or both did not
	XBetter    int    `json:"x_better"`   // X beat the reference, Y did not
	YBetter    int    `json:"y_better"`
	XRate      Num    `json:"x_rate"` // share of the turns X beat the reference
	YRate      Num    `json:"y_rate"`
	Diff       Num    `json:"diff"` // XRate − YRate
	P          Num    `json:"p"`    // exact two-sided McNemar
}

// armCombo is two judge variants that share one strategy, the reference,
// under the same judge context.
type armCombo struct {
	i, j               int // indices of the pair folds
	ref, x, y, context string
	xName, yName       string
	swapX, swapY       bool // the arm is strategy B of its pair
	tables             []stats.ArmTable
}

// armObs names one outcome of a page: a pair, a dimension and a comparison.
type armObs struct {
	pair, dim    int
	seq          int64
	turn, sample int
}

// armFold joins, page by page, the outcomes of pairs that share a
// reference. It keeps one page's outcomes and a 3×3 table per combination
// and dimension.
type armFold struct {
	combos []*armCombo
	page   map[armObs]stats.Outcome
}

// splitVariant reads a judge variant name "A:B" or "A:B/context".
func splitVariant(name string) (judge.Pair, string, bool) {
	pairPart, cx, _ := strings.Cut(name, "/")
	p, err := judge.ParsePair(pairPart)
	if cx == "" {
		cx = judge.ContextFull
	}
	return p, cx, err == nil
}

func newArmFold(vs []ledger.Variant) *armFold {
	a := &armFold{page: map[armObs]stats.Outcome{}}
	for i := range vs {
		pi, ci, ok := splitVariant(vs[i].Name)
		if !ok {
			continue
		}
		for j := i + 1; j < len(vs); j++ {
			pj, cj, ok := splitVariant(vs[j].Name)
			if !ok || ci != cj {
				continue
			}
			c := &armCombo{i: i, j: j, context: ci, xName: vs[i].Name, yName: vs[j].Name}
			switch {
			case pi.A == pj.A && pi.B != pj.B:
				c.ref, c.x, c.y = pi.A, pi.B, pj.B
				c.swapX, c.swapY = true, true
			case pi.A == pj.B && pi.B != pj.A:
				c.ref, c.x, c.y = pi.A, pi.B, pj.A
				c.swapX = true
			case pi.B == pj.A && pi.A != pj.B:
				c.ref, c.x, c.y = pi.B, pi.A, pj.B
				c.swapY = true
			case pi.B == pj.B && pi.A != pj.A:
				c.ref, c.x, c.y = pi.B, pi.A, pj.A
			default:
				continue
			}
			c.tables = make([]stats.ArmTable, len(judge.Dimensions()))
			a.combos = append(a.combos, c)
		}
	}
	return a
}

// note records one outcome of the page being read.
func (a *armFold) note(pair, dim int, ob judge.Observation) {
	if len(a.combos) == 0 {
		return
	}
	a.page[armObs{pair, dim, ob.ConvSeq, ob.Turn, ob.Sample}] = ob.Outcome
}

// endPage joins the page's outcomes.
func (a *armFold) endPage() {
	for _, c := range a.combos {
		for k, ox := range a.page {
			if k.pair != c.i {
				continue
			}
			k2 := k
			k2.pair = c.j
			oy, ok := a.page[k2]
			if !ok {
				continue
			}
			if c.swapX {
				ox = ox.Swapped()
			}
			if c.swapY {
				oy = oy.Swapped()
			}
			c.tables[k.dim].Add(ox, oy)
		}
	}
	clear(a.page)
}

func (a *armFold) rows() ([]ArmRow, error) {
	out := []ArmRow{}
	for di, d := range judge.Dimensions() {
		for _, c := range a.combos {
			t, err := c.tables[di].Test(armTies)
			if err != nil {
				return nil, err
			}
			out = append(out, ArmRow{
				Dimension: d, Context: c.context, Reference: c.ref, X: c.x, Y: c.y, XPair: c.xName, YPair: c.yName,
				Ties: armTies.String(), Turns: t.Pairs, Invalid: t.Invalid, Concordant: t.Concordant,
				XBetter: t.XBetter, YBetter: t.YBetter, XRate: Num(t.XRate), YRate: Num(t.YRate), Diff: Num(t.Diff), P: Num(t.P),
			})
		}
	}
	return out, nil
}
