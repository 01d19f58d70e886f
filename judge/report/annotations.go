package report

import (
	"context"
	"encoding/json"

	"math"

	"github.com/ac3/ac3/judge/stats"
	"github.com/ac3/ac3/pipeline/ledger"
)

// Annotations summarizes the annotation stages that ran.
type Annotations struct {
	TurnTypes   *Distribution      `json:"turn_types,omitempty"`
	Pollution   *PollutionSummary  `json:"pollution,omitempty"`
	Constraints *ConstraintSummary `json:"constraints,omitempty"`
}

// Distribution is how n annotated turns split into categories.
type Distribution struct {
	Annotator string  `json:"annotator"` // the stage variant read ("llm" or "heuristic")
	N         int     `json:"n"`
	Failed    int     `json:"failed"`
	Shares    []Share `json:"shares"`
}

// Share is one category's count and rate with a Wilson interval.
type Share struct {
	Key    string   `json:"key"`
	Count  int      `json:"count"`
	Rate   Num      `json:"rate"`
	Wilson Interval `json:"wilson"`
}

// PollutionSummary is the context-pollution annotation of assistant turns.
type PollutionSummary struct {
	Annotator     string   `json:"annotator"`
	Turns         int      `json:"turns"`
	Present       int      `json:"present"`
	Rate          Num      `json:"rate"`
	Wilson        Interval `json:"wilson"`
	Conversations int      `json:"conversations"`
	Polluted      int      `json:"conversations_polluted"`
	ConvRate      Num      `json:"conversation_rate"`
	ByCategory    []Share  `json:"by_category"` // shares of the polluted turns
}

// ConstraintSummary is the session-constraint annotation.
type ConstraintSummary struct {
	Annotator     string  `json:"annotator"`
	Turns         int     `json:"turns"`
	TurnsWithNew  int     `json:"turns_with_new"`
	Rate          Num     `json:"rate"` // TurnsWithNew / Turns
	New           int     `json:"new"`
	ByType        []Share `json:"by_type"`
	Conversations int     `json:"conversations"`
	MeanRegistry  Num     `json:"mean_final_registry"` // constraints in force at each conversation's last annotated turn
}

// pickVariant prefers the model annotator, then the heuristic, then any.
func pickVariant(vs []ledger.Variant) (ledger.Variant, bool) {
	for _, want := range []string{"llm", "heuristic"} {
		for _, v := range vs {
			if v.Name == want {
				return v, true
			}
		}
	}
	if len(vs) > 0 {
		return vs[0], true
	}
	return ledger.Variant{}, false
}

// readAnnotations reads the annotation stages in the formats agreed across
// the project (one JSON object per turn) and returns their summaries and
// the turn type of every classified turn.
func readAnnotations(ctx context.Context, src Source, plans map[string][]ledger.Variant) (*Annotations, map[turnKey]string, error) {
	types := map[turnKey]string{}
	var a Annotations
	level := stats.DefaultLevel
	if v, ok := pickVariant(plans["classify"]); ok {
		d := &Distribution{Annotator: v.Name}
		counts := map[string]int{}
		err := src.Units(ctx, "classify", []ledger.Variant{v}, 0, maxSeq, func(u ledger.Unit) error {
			var out struct {
				Type string `json:"type"`
			}
			if u.Status != ledger.Done || json.Unmarshal(u.Output, &out) != nil || out.Type == "" {
				d.Failed++
				return nil
			}
			d.N++
			counts[out.Type]++
			types[turnKey{u.ConvID, u.Turn}] = out.Type
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		d.Shares = shares(counts, d.N, level)
		a.TurnTypes = d
	}
	if v, ok := pickVariant(plans["pollution"]); ok {
		p := &PollutionSummary{Annotator: v.Name}
		cats := map[string]int{}
		convs := map[string]bool{}
		err := src.Units(ctx, "pollution", []ledger.Variant{v}, 0, maxSeq, func(u ledger.Unit) error {
			var out struct {
				Present  bool   `json:"present"`
				Category string `json:"category"`
			}
			if u.Status != ledger.Done || json.Unmarshal(u.Output, &out) != nil {
				return nil
			}
			p.Turns++
			if _, seen := convs[u.ConvID]; !seen {
				convs[u.ConvID] = false
			}
			if out.Present {
				p.Present++
				convs[u.ConvID] = true
				cat := out.Category
				if cat == "" {
					cat = "unspecified"
				}
				cats[cat]++
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		p.Rate = ratio(int64(p.Present), p.Turns)
		p.Wilson = interval(stats.Wilson(float64(p.Present), p.Turns, level))
		p.Conversations = len(convs)
		for _, polluted := range convs {
			if polluted {
				p.Polluted++
			}
		}
		p.ConvRate = ratio(int64(p.Polluted), p.Conversations)
		p.ByCategory = shares(cats, p.Present, level)
		a.Pollution = p
	}
	if v, ok := pickVariant(plans["constraints"]); ok {
		c := &ConstraintSummary{Annotator: v.Name}
		byType := map[string]int{}
		last := map[string]struct{ turn, size int }{}
		err := src.Units(ctx, "constraints", []ledger.Variant{v}, 0, maxSeq, func(u ledger.Unit) error {
			var out struct {
				New []struct {
					Type string `json:"type"`
				} `json:"new"`
				Registry []json.RawMessage `json:"registry"`
			}
			if u.Status != ledger.Done || json.Unmarshal(u.Output, &out) != nil {
				return nil
			}
			c.Turns++
			if len(out.New) > 0 {
				c.TurnsWithNew++
			}
			c.New += len(out.New)
			for _, n := range out.New {
				byType[n.Type]++
			}
			if l, ok := last[u.ConvID]; !ok || u.Turn >= l.turn {
				last[u.ConvID] = struct{ turn, size int }{u.Turn, len(out.Registry)}
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		c.Rate = ratio(int64(c.TurnsWithNew), c.Turns)
		c.ByType = shares(byType, c.New, level)
		c.Conversations = len(last)
		var sum int64
		for _, l := range last {
			sum += int64(l.size)
		}
		c.MeanRegistry = ratio(sum, c.Conversations)
		a.Constraints = c
	}
	if a.TurnTypes == nil && a.Pollution == nil && a.Constraints == nil {
		return nil, types, nil
	}
	return &a, types, nil
}

func shares(counts map[string]int, n int, level float64) []Share {
	out := []Share{}
	for _, k := range sortedKeys(counts) {
		s := Share{Key: k, Count: counts[k], Rate: Num(math.NaN())}
		if n > 0 {
			s.Rate = Num(float64(counts[k]) / float64(n))
		}
		s.Wilson = interval(stats.Wilson(float64(counts[k]), n, level))
		out = append(out, s)
	}
	return out
}
