package view

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/stages/classify"
)

type verdictRow struct {
	ConvID, Link  string
	Turn, Sample  int
	Variant       string
	A, B          string
	Winner        string // the strategy that won, or "tie"
	Order         string
	AFirst        string
	BFirst        string
	Consistent    bool
	Identical     bool
	Justification string
}

type verdictsData struct {
	Pair, Dim, Winner string
	Type, Turn, Vs    string
	Pairs             []string
	Rows              []verdictRow
	Next              string
	Looked            int64
}

// verdictsPage lists the verdicts of one pair on one dimension, one row per
// turn and sample, paged by conversation seq like /conversations.
func (h *Handler) verdictsPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	plans, err := h.l.Plans(ctx)
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	d := verdictsData{Pair: q.Get("pair"), Winner: q.Get("winner"), Type: q.Get("type"), Turn: q.Get("turn"), Vs: q.Get("vs")}
	seen := map[string]bool{}
	for _, v := range plans[judge.StageName] {
		p, _, _ := strings.Cut(v.Name, "/")
		if !seen[p] {
			seen[p] = true
			d.Pairs = append(d.Pairs, p)
		}
	}
	if d.Dim, err = dimension(q.Get("dim")); err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	var want stats.Outcome
	if d.Winner != "" {
		o, err := outcome(d.Winner)
		if err != nil {
			h.fail(w, r, http.StatusBadRequest, fmt.Errorf("winner: %w", err))
			return
		}
		want, _ = stats.ParseOutcome(o)
	}
	after, err := cursor(q.Get("after"))
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	if d.Pair == "" {
		h.render(w, r, "verdicts", page{Title: "verdicts", Nav: "verdicts", Data: d})
		return
	}
	vs := pairVariants(plans[judge.StageName], d.Pair)
	if len(vs) == 0 {
		h.fail(w, r, http.StatusNotFound, fmt.Errorf("pair: the run judged no pair %q", d.Pair))
		return
	}
	last, err := h.l.LastSeq(ctx)
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	nar, err := h.narrowing(r.URL.Query(), plans, d.Pair)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	win := newWindows(h.budget, 4096, 1<<18)
	pos := after
	full := false
	for pos < last && !full {
		upto := win.next(pos, last)
		keep, err := nar.window(ctx, h.l, pos, upto)
		if err != nil {
			h.fail(w, r, http.StatusInternalServerError, err)
			return
		}
		err = h.l.Units(ctx, judge.StageName, vs, pos, upto, func(u ledger.Unit) error {
			if full && u.ConvSeq > pos {
				return nil // the page ends with a whole conversation
			}
			obs, err := judge.Observations(u)
			if err != nil {
				return err
			}
			for _, o := range obs {
				if o.Dimension != d.Dim || (d.Winner != "" && o.Outcome != want) || !keep(o) {
					continue
				}
				d.Rows = append(d.Rows, verdictRow{
					ConvID: o.ConvID, Link: convLink(o.ConvID, o.Turn), Turn: o.Turn, Sample: o.Sample, Variant: o.Variant,
					A: o.A, B: o.B, Winner: winnerName(o.Outcome, o.A, o.B), Order: o.Order,
					AFirst: winnerName(o.AFirst, o.A, o.B), BFirst: winnerName(o.BFirst, o.A, o.B),
					Consistent: o.Consistent, Identical: o.Identical, Justification: o.Justification,
				})
			}
			pos = u.ConvSeq
			if len(d.Rows) >= h.pageSize {
				full = true
			}
			return nil
		})
		if err != nil {
			h.fail(w, r, http.StatusInternalServerError, err)
			return
		}
		if !full {
			pos = upto
		}
		if !full && !win.more() {
			break
		}
	}
	if pos < last {
		v := url.Values{"pair": {d.Pair}, "dim": {d.Dim}, "after": {strconv.FormatInt(pos, 10)}}
		if d.Winner != "" {
			v.Set("winner", d.Winner)
		}
		for _, k := range []string{"type", "turn", "vs"} {
			if x := q.Get(k); x != "" {
				v.Set(k, x)
			}
		}
		d.Next = "/verdicts?" + v.Encode()
		if !full {
			d.Looked = pos
		}
	}
	h.render(w, r, "verdicts", page{Title: "verdicts " + d.Pair, Nav: "verdicts", Data: d})
}

// winnerName names the strategy an outcome favours; "" when there was no
// such outcome (the order was not asked).
func winnerName(o stats.Outcome, a, b string) string {
	switch o {
	case stats.AWins:
		return a
	case stats.BWins:
		return b
	case stats.Tie:
		return "tie"
	}
	return ""
}

// narrowing is what /verdicts keeps beyond pair, dimension and winner: the
// turn's type (type=T), one round (turn=N), and for a McNemar cell
// (vs=PAIR) the turns where the other arm, judged against the same
// reference in PAIR, did not win.
type narrowing struct {
	typ       string
	turn      int
	classify  []ledger.Variant
	vs        []ledger.Variant
	ref, pair string
}

func (h *Handler) narrowing(q url.Values, plans map[string][]ledger.Variant, pair string) (narrowing, error) {
	n := narrowing{typ: q.Get("type"), pair: pair}
	if t := q.Get("turn"); t != "" {
		var err error
		if n.turn, err = strconv.Atoi(t); err != nil || n.turn < 1 {
			return n, fmt.Errorf("turn: %q is not a user turn", t)
		}
	}
	if n.typ != "" {
		n.classify = preferLLM(plans[classify.StageName])
		if len(n.classify) == 0 {
			return n, fmt.Errorf("type: the run has no turn types (classify did not run)")
		}
	}
	if vs := q.Get("vs"); vs != "" {
		n.vs = pairVariants(plans[judge.StageName], vs)
		if len(n.vs) == 0 {
			return n, fmt.Errorf("vs: the run judged no pair %q", vs)
		}
	}
	return n, nil
}

// preferLLM picks the turn types to go by as the exports do: the model's
// labels when the run has them, else the first labeller planned.
func preferLLM(vs []ledger.Variant) []ledger.Variant {
	for _, v := range vs {
		if v.Name == "llm" {
			return []ledger.Variant{v}
		}
	}
	return vs[:min(1, len(vs))]
}

type turnKey struct {
	seq  int64
	turn int
}

type cmpKey struct {
	turnKey
	sample int
	dim    string
}

// window reads what the narrowing needs about conversations after < seq
// <= upto and returns the test each observation must pass.
func (n narrowing) window(ctx context.Context, l *ledger.Ledger, after, upto int64) (func(judge.Observation) bool, error) {
	types := map[turnKey]string{}
	if n.typ != "" {
		err := l.Units(ctx, classify.StageName, n.classify, after, upto, func(u ledger.Unit) error {
			if u.Status != ledger.Done {
				return nil
			}
			lb, err := classify.Decode(u.Output)
			if err != nil {
				return err
			}
			types[turnKey{u.ConvSeq, u.Turn}] = lb.Type
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	other := map[cmpKey]judge.Observation{}
	if len(n.vs) > 0 {
		err := l.Units(ctx, judge.StageName, n.vs, after, upto, func(u ledger.Unit) error {
			obs, err := judge.Observations(u)
			for _, o := range obs {
				other[cmpKey{turnKey{o.ConvSeq, o.Turn}, o.Sample, o.Dimension}] = o
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return func(o judge.Observation) bool {
		k := turnKey{o.ConvSeq, o.Turn}
		if n.turn > 0 && o.Turn != n.turn {
			return false
		}
		if n.typ != "" && types[k] != n.typ {
			return false
		}
		if len(n.vs) > 0 {
			q, ok := other[cmpKey{k, o.Sample, o.Dimension}]
			if !ok {
				return false // not judged in the other pair: not in the paired test
			}
			// The reference is the side of this pair that lost; the other
			// arm is the strategy of q that is not it.
			ref := o.A
			if o.Outcome == stats.AWins {
				ref = o.B
			}
			arm := q.A
			if arm == ref {
				arm = q.B
			}
			return winnerName(q.Outcome, q.A, q.B) != arm
		}
		return true
	}, nil
}
