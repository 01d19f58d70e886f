package report

import (
	"context"
	"math"
	"sort"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/classify"
	"github.com/ac3/ac3/stages/constraints"
	"github.com/ac3/ac3/stages/pollution"
)

// Annotations summarizes the annotation stages that ran. The numbers are
// the stages' own summaries (the Summarizers of classify, constraints and
// pollution); their intervals are 95% Wilson intervals that treat
// turns as independent, whatever the report's level.
type Annotations struct {
	TurnTypes   *TurnTypeSummary   `json:"turn_types,omitempty"`
	Pollution   *PollutionSummary  `json:"pollution,omitempty"`
	Constraints *ConstraintSummary `json:"constraints,omitempty"`
}

// Proportion is Count out of Of, with its rate and Wilson interval (null
// when Of is 0).
type Proportion struct {
	Count  int      `json:"count"`
	Of     int      `json:"of"`
	Rate   Num      `json:"rate"`
	Wilson Interval `json:"wilson"`
}

// Share is one category's proportion.
type Share struct {
	Key string `json:"key"`
	Proportion
}

// Count is how often something occurred.
type Count struct {
	Key   string `json:"key"`
	Count int    `json:"count"`
}

// TurnTypeSummary is the classify stage: how the labelled user turns split
// into turn types, who labelled them and which earlier turns they lean on.
type TurnTypeSummary struct {
	Variant       string  `json:"variant"` // the stage variant read ("llm" or "heuristic")
	Turns         int     `json:"turns"`
	Failed        int     `json:"failed"`
	Conversations int     `json:"conversations"`
	Types         []Share `json:"types"`      // of Turns, in classify.Types() order
	Annotators    []Count `json:"annotators"` // "llm:<model>" or "heuristic"
	SelfContained int     `json:"self_contained"`
	Refs          []Count `json:"refs"` // reference tags ("1a", "2u", …), nearest first
	// LabellerQuality is the rule-based labeller's measured quality, set
	// when the shares are the heuristic's (variant "heuristic").
	LabellerQuality *LabellerQuality `json:"labeller_quality,omitempty"`
}

// LabellerQuality is classify.Quality in report form: how often the
// heuristic labeller gives a type (coverage) and how often that type is
// right (accuracy), on a labelled set it was not tuned on.
type LabellerQuality struct {
	Annotator string `json:"annotator"` // the labeller version measured
	// Applies is false when the run's heuristic is another version than
	// the one measured: the figures then describe a different labeller.
	Applies              bool   `json:"applies"`
	Set                  string `json:"set"`
	N                    int    `json:"n"`
	Labelled             int    `json:"labelled"`
	Coverage             Num    `json:"coverage"`
	Accuracy             Num    `json:"accuracy"`
	MacroF1              Num    `json:"macro_f1"`
	MajorityRateLabelled Num    `json:"majority_rate_labelled"` // the accuracy of always answering the set's most common type
}

// heuristicQuality returns the measured quality of the heuristic labeller
// for a classify variant, nil when the variant is not the heuristic's.
func heuristicQuality(v ledger.Variant) *LabellerQuality {
	if v.Name != "heuristic" {
		return nil
	}
	q := classify.HeuristicQuality()
	return &LabellerQuality{Annotator: q.Annotator, Applies: q.Applies(v.Version), Set: q.Set, N: q.N, Labelled: q.Labelled,
		Coverage: Num(q.Coverage), Accuracy: Num(q.Accuracy), MacroF1: Num(q.MacroF1), MajorityRateLabelled: Num(q.MajorityRateLabelled)}
}

// PollutionSummary is the context-pollution review of assistant turns.
type PollutionSummary struct {
	Variant          string          `json:"variant"`
	Turns            int             `json:"turns"`
	Failed           int             `json:"failed"`
	Conversations    int             `json:"conversations"`
	AnyTurns         Proportion      `json:"any_turns"`         // polluted turns of the reviewed turns
	AnyConversations Proportion      `json:"any_conversations"` // conversations with a polluted turn
	ByCategory       []CategoryShare `json:"by_category"`       // in pollution.Categories() order
	Annotators       []Count         `json:"annotators"`
}

// CategoryShare is one pollution category's share of the reviewed turns and
// of the conversations.
type CategoryShare struct {
	Category      string     `json:"category"`
	Turns         Proportion `json:"turns"`
	Conversations Proportion `json:"conversations"`
}

// ConstraintSummary is the session-constraint annotation.
type ConstraintSummary struct {
	Variant              string  `json:"variant"`
	Turns                int     `json:"turns"` // user turns read
	Failed               int     `json:"failed"`
	Conversations        int     `json:"conversations"`
	TurnsWithNew         int     `json:"turns_with_new"`         // turns that set at least one constraint
	ConversationsWithAny int     `json:"conversations_with_any"` // registry not empty at the last read turn
	Constraints          int     `json:"constraints"`            // constraints set, all turns
	ByType               []Share `json:"by_type"`                // of Constraints, in constraints.Types() order
	ByTurn               []Count `json:"by_turn"`                // constraints set at user turn 1, 2, …, "10+"
	Annotators           []Count `json:"annotators"`
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

// annotationFold folds the units of the annotation stages, one variant of
// each (see pickVariant), with the stages' own Summarizers, and gives each
// page's turn types for the breakdowns.
type annotationFold struct {
	clsV, polV, conV    ledger.Variant
	clsOK, polOK, conOK bool
	cls                 *classify.Summarizer
	pol                 *pollution.Summarizer
	con                 *constraints.Summarizer
}

func newAnnotationFold(plans map[string][]ledger.Variant) *annotationFold {
	a := &annotationFold{cls: classify.NewSummarizer(), pol: pollution.NewSummarizer(), con: constraints.NewSummarizer()}
	a.clsV, a.clsOK = pickVariant(plans[classify.StageName])
	// The dataset's replies only: the generated ones have their own
	// section (ReplyPollution).
	var dataset []ledger.Variant
	for _, v := range plans[pollution.StageName] {
		if _, gen := pollution.RespondVariant(v.Name); !gen {
			dataset = append(dataset, v)
		}
	}
	a.polV, a.polOK = pickVariant(dataset)
	a.conV, a.conOK = pickVariant(plans[constraints.StageName])
	return a
}

// watch registers the variants the fold reads with the progress log.
func (a *annotationFold) watch(p *progressLog) {
	if a.clsOK {
		p.watch(classify.StageName, a.clsV.Name)
	}
	if a.polOK {
		p.watch(pollution.StageName, a.polV.Name)
	}
	if a.conOK {
		p.watch(constraints.StageName, a.conV.Name)
	}
}

// page reads the annotation units of one page and records the turn type of
// every classified turn of it in types.
func (a *annotationFold) page(ctx context.Context, src Source, after, upto int64, types map[pageTurn]string, progress *progressLog) error {
	// read hands the page's units of one stage's variant to the progress
	// log and to add; each annotation stage is read alike.
	read := func(ok bool, stage string, v ledger.Variant, add func(ledger.Unit)) error {
		if !ok {
			return nil
		}
		return src.Units(ctx, stage, []ledger.Variant{v}, after, upto, func(u ledger.Unit) error {
			progress.add(stage, u)
			add(u)
			return nil
		})
	}
	err := read(a.clsOK, classify.StageName, a.clsV, func(u ledger.Unit) {
		a.cls.Add(u)
		if u.Status == ledger.Done {
			if l, err := classify.Decode(u.Output); err == nil {
				types[pageTurn{u.ConvSeq, u.Turn}] = l.Type
			}
		}
	})
	if err != nil {
		return err
	}
	if err := read(a.polOK, pollution.StageName, a.polV, a.pol.Add); err != nil {
		return err
	}
	return read(a.conOK, constraints.StageName, a.conV, a.con.Add)
}

// annotations summarizes the stages that ran; nil when none did.
func (a *annotationFold) annotations() *Annotations {
	var out Annotations
	if a.clsOK {
		s := a.cls.Summary()
		d := &TurnTypeSummary{Variant: a.clsV.Name, Turns: s.Turns, Failed: s.Failed, Conversations: s.Conversations,
			Types: []Share{}, Annotators: counts(s.Annotators, nil), SelfContained: s.SelfContained, Refs: counts(s.Refs, s.RefTags()),
			LabellerQuality: heuristicQuality(a.clsV)}
		for _, ts := range s.Types {
			d.Types = append(d.Types, Share{Key: ts.Type, Proportion: proportion(ts.Count, s.Turns, ts.Share, ts.Lo, ts.Hi)})
		}
		out.TurnTypes = d
	}
	if a.polOK {
		s := a.pol.Summary()
		p := &PollutionSummary{Variant: a.polV.Name, Turns: s.Turns, Failed: s.Failed, Conversations: s.Conversations,
			AnyTurns: pshare(s.AnyTurns), AnyConversations: pshare(s.AnyConversations),
			ByCategory: []CategoryShare{}, Annotators: counts(s.Annotators, nil)}
		for _, c := range s.Categories {
			p.ByCategory = append(p.ByCategory, CategoryShare{Category: c.Category, Turns: pshare(c.Turns), Conversations: pshare(c.Conversations)})
		}
		out.Pollution = p
	}
	if a.conOK {
		s := a.con.Summary()
		c := &ConstraintSummary{Variant: a.conV.Name, Turns: s.Turns, Failed: s.Failed, Conversations: s.Conversations,
			TurnsWithNew: s.TurnsWithNew, ConversationsWithAny: s.ConversationsWithAny, Constraints: s.Constraints,
			ByType: []Share{}, ByTurn: []Count{}, Annotators: counts(s.Annotators, nil)}
		for _, tc := range s.ByType {
			c.ByType = append(c.ByType, Share{Key: tc.Type, Proportion: proportion(tc.Count, s.Constraints, tc.Share, tc.Lo, tc.Hi)})
		}
		for _, tc := range s.ByTurn {
			c.ByTurn = append(c.ByTurn, Count{Key: tc.Turns, Count: tc.Count})
		}
		out.Constraints = c
	}
	if out.TurnTypes == nil && out.Pollution == nil && out.Constraints == nil {
		return nil
	}
	return &out
}

// proportion turns a summary's share into report form: unknown (null)
// rather than 0 when there is nothing to divide by.
func proportion(k, n int, share, lo, hi float64) Proportion {
	if n == 0 {
		nan := Num(math.NaN())
		return Proportion{Count: k, Of: n, Rate: nan, Wilson: Interval{nan, nan}}
	}
	return Proportion{Count: k, Of: n, Rate: Num(share), Wilson: Interval{Num(lo), Num(hi)}}
}

func pshare(s pollution.Share) Proportion { return proportion(s.Count, s.Total, s.Share, s.Lo, s.Hi) }

// counts lists m in the given key order, or by key when order is nil.
func counts(m map[string]int, order []string) []Count {
	if order == nil {
		order = make([]string, 0, len(m))
		for k := range m {
			order = append(order, k)
		}
		sort.Strings(order)
	}
	out := make([]Count, 0, len(order))
	for _, k := range order {
		out = append(out, Count{Key: k, Count: m[k]})
	}
	return out
}
