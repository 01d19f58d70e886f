package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
)

// judgeInfo collects what produced the verdicts, over every pair.
type judgeInfo struct {
	prompts, models, endpoints, orders, contexts set
	seeds                                        map[int64]bool
}

func newJudgeInfo() *judgeInfo {
	return &judgeInfo{prompts: set{}, models: set{}, endpoints: set{}, orders: set{}, contexts: set{}, seeds: map[int64]bool{}}
}

func (j *judgeInfo) fill(r *Report) {
	r.Judge.Prompts, r.Judge.Models, r.Judge.Endpoints = j.prompts.sorted(), j.models.sorted(), j.endpoints.sorted()
	r.Judge.Orders, r.Judge.Contexts = j.orders.sorted(), j.contexts.sorted()
	for s := range j.seeds {
		r.Judge.Seeds = append(r.Judge.Seeds, s)
	}
	slices.Sort(r.Judge.Seeds)
}

// pairFold folds the units of one judge variant.
type pairFold struct {
	v    ledger.Variant
	pr   PairReport
	dims []*dimFold // in judge.Dimensions() order
}

func newPairFold(v ledger.Variant, seed uint64) *pairFold {
	p := &pairFold{v: v, pr: PairReport{Pair: v.Name}}
	for _, d := range judge.Dimensions() {
		p.dims = append(p.dims, &dimFold{name: d, byType: map[string]*verdictTally{}, byRound: map[int]*verdictTally{}, examples: exampleFold{seed: seed}})
	}
	return p
}

// dimFold folds one pair's observations on one dimension.
type dimFold struct {
	name    string
	overall verdictTally
	byType  map[string]*verdictTally
	byRound map[int]*verdictTally
	// single counts single-order verdicts with a known position; split
	// the two single-order verdicts of each both-orders pair, which stand
	// in for single once any observation was judged in both orders.
	single, split stats.PositionTally
	cons          stats.ConsistencyTally
	both          bool
	lc            lcFold
	examples      exampleFold
}

// pageJoin is what a judge unit is read with: the page's turn types,
// contexts and answer lengths, and the arm comparisons its outcomes feed
// as pair number index.
type pageJoin struct {
	types   map[pageTurn]string
	answers *pageAnswers
	arms    *armFold
	index   int
}

// add folds one stored judge unit. types gives the turn types of the
// unit's page; convs keeps the ids of conversations with verdicts.
func (p *pairFold) add(u ledger.Unit, pj pageJoin, convs *convTable, info *judgeInfo) error {
	o, ok, err := doneOutput(u, &p.pr.UnitsDone, &p.pr.UnitsFailed, "judge", judge.Decode)
	if !ok {
		return err
	}
	p.pr.A, p.pr.B, p.pr.Context, p.pr.Order = o.A, o.B, o.Context, o.Order
	info.prompts.add(o.Prompt)
	info.orders.add(o.Order)
	info.contexts.add(o.Context)
	if o.Order == judge.OrderRandom {
		info.seeds[o.Seed] = true
	}
	for _, c := range o.Comparisons {
		p.pr.Comparisons++
		if c.Identical {
			p.pr.Identical++
		}
		if same, known := pj.answers.sameContext(u.ConvSeq, u.Turn, o.A, o.B); known && same {
			p.pr.SameContext++
			if c.Identical {
				p.pr.SameContextNoCall++
			}
		}
		for _, call := range c.Calls {
			info.models.add(call.Model)
			info.endpoints.add(call.Endpoint)
		}
	}
	obs, err := judge.Observations(u)
	if err != nil {
		return err
	}
	if len(obs) == 0 {
		return nil
	}
	tt := pj.types[pageTurn{u.ConvSeq, u.Turn}]
	if tt == "" {
		tt = Unclassified
	}
	convs.note(u.ConvSeq, u.ConvID)
	for _, ob := range obs {
		di, d := p.dim(ob.Dimension)
		if d == nil {
			continue
		}
		d.add(ob, tt, u.ConvSeq)
		d.examples.add(ob, tt, exampleCalls(o, ob))
		la, oka := pj.answers.length(u.ConvSeq, u.Turn, ob.A, ob.Sample)
		lb, okb := pj.answers.length(u.ConvSeq, u.Turn, ob.B, ob.Sample)
		if oka && okb {
			d.lc.add(u.ConvSeq, ob.Outcome, la, lb)
		} else {
			d.lc.noLength++
		}
		pj.arms.note(pj.index, di, ob)
	}
	return nil
}

func (p *pairFold) dim(name string) (int, *dimFold) {
	for i, d := range p.dims {
		if d.name == name {
			return i, d
		}
	}
	return -1, nil
}

func (d *dimFold) add(ob judge.Observation, tt string, seq int64) {
	v := ob.Verdict(tt)
	d.overall.add(seq, v.Outcome)
	t := d.byType[tt]
	if t == nil {
		t = &verdictTally{}
		d.byType[tt] = t
	}
	t.add(seq, v.Outcome)
	r := d.byRound[v.Turn]
	if r == nil {
		r = &verdictTally{}
		d.byRound[v.Turn] = r
	}
	r.add(seq, v.Outcome)
	if ob.Order == judge.OrderBoth {
		d.both = true
		if !ob.Identical {
			op := ob.OrderPair(tt)
			d.cons.Add(op)
			d.split.AddPair(op)
		}
	} else if ob.FirstShown != stats.SideUnknown {
		d.single.Add(v)
	}
}

// report finishes the pair once every page was read; ranks orders the
// conversations of convs by id for the bootstrap.
func (p *pairFold) report(convs *convTable, ranks []uint32, so stats.Options) (PairReport, error) {
	pr := p.pr
	if pr.A == "" {
		pr.A, pr.B, _ = strings.Cut(strings.SplitN(p.v.Name, "/", 2)[0], ":")
	}
	for _, d := range p.dims {
		dr, err := d.report(convs, ranks, so)
		if err != nil {
			return pr, fmt.Errorf("summarizing pair %s, %s: %w", p.v.Name, d.name, err)
		}
		pr.Dimensions = append(pr.Dimensions, dr)
	}
	return pr, nil
}

func (d *dimFold) report(convs *convTable, ranks []uint32, so stats.Options) (DimReport, error) {
	sum := func(t *verdictTally) (Summary, error) {
		s, err := t.summary(convs, ranks, so)
		// The records are not needed again: let the next summary reuse
		// their memory.
		t.enc = nil
		return summary(s), err
	}
	dr := DimReport{Dimension: d.name, ByTurnType: []Group{}, ByRound: []Group{}, Examples: d.examples.examples()}
	var err error
	if dr.Overall, err = sum(&d.overall); err != nil {
		return dr, err
	}
	for _, k := range sortedKeys(d.byType) {
		s, err := sum(d.byType[k])
		if err != nil {
			return dr, err
		}
		dr.ByTurnType = append(dr.ByTurnType, Group{Key: k, Summary: s})
	}
	for _, k := range sortedKeys(d.byRound) {
		s, err := sum(d.byRound[k])
		if err != nil {
			return dr, err
		}
		dr.ByRound = append(dr.ByRound, Group{Key: fmt.Sprint(k), Summary: s})
	}
	single := d.single
	if d.both {
		single = d.split
		c := d.cons.Consistency(so)
		dr.Position.Consistency = &Consistency{
			Pairs: c.Pairs, Invalid: c.Invalid, Consistent: c.Consistent, Rate: Num(c.Rate),
			Wilson: interval(c.Wilson), FirstBoth: c.FirstBoth, SecondBoth: c.SecondBoth,
		}
	}
	if dr.LengthControlled, err = d.lc.report(convs, ranks, so); err != nil {
		return dr, err
	}
	pb := single.Bias(so)
	dr.Position.FirstShown = &Bias{
		Known: pb.Known, Ties: pb.Ties, Decisive: pb.Decisive, FirstWins: pb.FirstWins,
		FirstShare: Num(pb.FirstShare), Wilson: interval(pb.Wilson),
		SignTest: Test{Name: "exact two-sided sign test vs 1/2", K: pb.FirstWins, N: pb.Decisive, P: Num(pb.P)},
		SmallN:   pb.SmallN, Warning: pb.Warning,
	}
	return dr, nil
}
