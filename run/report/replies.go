package report

import (
	"context"
	"fmt"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/pollution"
)

// ReplyPollution is how often replies are polluted under each history, the
// shape of Huang et al.'s Table 1: the dataset's own replies, and the
// replies respond generated per strategy (the filler strategy's being the
// filler-history baseline, regenerated on the same turns), every reply
// reviewed with the same prompt against the conversation's own history.
// Rates have 95% Wilson intervals that treat replies as independent.
type ReplyPollution struct {
	Variants []PollutionVariant `json:"variants"` // the dataset's first, then by name
	// Pairs compares every two variants on the replies both reviewed (same
	// conversation, turn and sample), on any category and then per
	// category.
	Pairs []PollutionPair `json:"pairs"`
}

// PollutionVariant is one variant's reviewed replies.
type PollutionVariant struct {
	Variant string `json:"variant"` // the pollution variant: "llm", "responses:fc", …
	Source  string `json:"source"`  // "dataset", or the respond variant
	Units   int    `json:"units"`
	Replies int    `json:"replies"` // reviewed: the denominator of every rate
	// Failed replies could not be reviewed; Unavailable units had no reply
	// to review (respond's unit missing or failed). Neither is in a rate.
	Failed           int                 `json:"failed"`
	Unavailable      int                 `json:"unavailable"`
	Any              Proportion          `json:"any"`
	Conversations    int                 `json:"conversations"`
	AnyConversations Proportion          `json:"any_conversations"` // sample 0 only
	AbsentConfidence Num                 `json:"absent_confidence"` // mean confidence of the clean labels
	Categories       []PollutionCategory `json:"categories"`        // in pollution.Categories() order
}

// PollutionCategory is one category's share of a variant's replies.
type PollutionCategory struct {
	Category       string     `json:"category"`
	Replies        Proportion `json:"replies"`
	Conversations  Proportion `json:"conversations"`
	MeanConfidence Num        `json:"mean_confidence"` // over the replies with the category
}

// PollutionPair is pollution.PairedTest in report form.
type PollutionPair struct {
	A         string `json:"a"`
	B         string `json:"b"`
	Category  string `json:"category"` // "" for any category
	Pairs     int    `json:"pairs"`
	PollutedA int    `json:"polluted_a"`
	PollutedB int    `json:"polluted_b"`
	OnlyA     int    `json:"only_a"` // polluted under A, clean under B
	OnlyB     int    `json:"only_b"`
	P         Num    `json:"p"` // exact two-sided McNemar
}

// replyFold folds every pollution variant with pollution.Rates when the
// run reviewed generated replies.
type replyFold struct {
	variants []ledger.Variant
	gen      map[string]bool // the "responses:" variants, whose progress this fold logs
	rates    *pollution.Rates
}

func newReplyFold(plans map[string][]ledger.Variant) *replyFold {
	f := &replyFold{gen: map[string]bool{}}
	for _, v := range plans[pollution.StageName] {
		if _, ok := pollution.RespondVariant(v.Name); ok {
			f.gen[v.Name] = true
		}
	}
	if len(f.gen) == 0 {
		return f
	}
	f.variants = plans[pollution.StageName]
	f.rates = pollution.NewRates()
	return f
}

func (f *replyFold) watch(p *progressLog) {
	for _, v := range f.variants {
		if f.gen[v.Name] {
			p.watch(pollution.StageName, v.Name)
		}
	}
}

// page reads every pollution variant's units of a page together, ordered
// by conversation, turn and variant, as the paired tests need.
func (f *replyFold) page(ctx context.Context, src Source, after, upto int64, progress *progressLog) error {
	if f.rates == nil {
		return nil
	}
	return src.Units(ctx, pollution.StageName, f.variants, after, upto, func(u ledger.Unit) error {
		if f.gen[u.Variant] {
			progress.add(pollution.StageName, u)
		}
		if err := f.rates.Add(u); err != nil {
			return fmt.Errorf("reading pollution units: %w", err)
		}
		return nil
	})
}

func rateProp(r pollution.Rate) Proportion { return proportion(r.Count, r.Of, r.Rate, r.Lo, r.Hi) }

func (f *replyFold) report() *ReplyPollution {
	if f.rates == nil {
		return nil
	}
	s := f.rates.Result()
	out := &ReplyPollution{Variants: []PollutionVariant{}, Pairs: []PollutionPair{}}
	for _, v := range s.Variants {
		pv := PollutionVariant{Variant: v.Variant, Source: v.Source, Units: v.Units, Replies: v.Replies, Failed: v.Failed, Unavailable: v.Unavailable,
			Any: rateProp(v.Any), Conversations: v.Conversations, AnyConversations: rateProp(v.AnyConversations),
			AbsentConfidence: Num(v.AbsentConfidence), Categories: []PollutionCategory{}}
		for _, c := range v.Categories {
			pv.Categories = append(pv.Categories, PollutionCategory{Category: c.Category, Replies: rateProp(c.Replies),
				Conversations: rateProp(c.Conversations), MeanConfidence: Num(c.MeanConfidence)})
		}
		out.Variants = append(out.Variants, pv)
	}
	for _, p := range s.Pairs {
		out.Pairs = append(out.Pairs, PollutionPair{A: p.A, B: p.B, Category: p.Category, Pairs: p.Pairs,
			PollutedA: p.PollutedA, PollutedB: p.PollutedB, OnlyA: p.OnlyA, OnlyB: p.OnlyB, P: Num(p.P)})
	}
	return out
}
