package judge

import (
	"fmt"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
)

// Observation is one comparison on one dimension, read back from a stored
// judge unit: the input of the statistics, the report and the preference
// export.
type Observation struct {
	Variant   string // the stage variant, e.g. "gated-reset:ao/user_only"
	A, B      string // respond variants
	Context   string
	Order     string
	ConvID    string
	ConvSeq   int64
	Turn      int
	Sample    int
	Dimension string
	Outcome   stats.Outcome // for the strategies, both orders combined
	Identical bool          // equal answers, a tie without a call
	// FirstShown is the strategy shown first (order random only).
	FirstShown stats.Side
	// AFirst and BFirst are the single-order outcomes (order both only).
	AFirst, BFirst stats.Outcome
	Consistent     bool // order both: the two orders agreed
	Justification  string
	Confidence     *float64
	Model          string
	Endpoint       string
}

// Verdict returns the observation as a stats verdict with turnType.
func (o Observation) Verdict(turnType string) stats.Verdict {
	return stats.Verdict{Conversation: o.ConvID, Turn: o.Turn, TurnType: turnType, Outcome: o.Outcome, FirstShown: o.FirstShown}
}

// OrderPair returns the observation as a stats order pair (order both).
func (o Observation) OrderPair(turnType string) stats.OrderPair {
	return stats.OrderPair{Conversation: o.ConvID, Turn: o.Turn, TurnType: turnType, AFirst: o.AFirst, BFirst: o.BFirst}
}

// Observations decodes a done judge unit into one Observation per
// comparison and dimension. A failed unit gives none.
func Observations(u ledger.Unit) ([]Observation, error) {
	if u.Status != ledger.Done {
		return nil, nil
	}
	o, err := Decode(u.Output)
	if err != nil {
		return nil, fmt.Errorf("reading judge unit %s: %w", u.Key, err)
	}
	var out []Observation
	for _, c := range o.Comparisons {
		for _, d := range Dimensions() {
			ob := Observation{
				Variant: u.Variant, A: o.A, B: o.B, Context: o.Context, Order: o.Order,
				ConvID: u.ConvID, ConvSeq: u.ConvSeq, Turn: u.Turn, Sample: c.Sample, Dimension: d,
				Identical: c.Identical,
			}
			ob.Outcome, _ = stats.ParseOutcome(c.Outcome[d]) // invalid stays zero and is counted so
			if len(c.Calls) > 0 {
				v := c.Calls[0].Verdicts[d]
				ob.Justification, ob.Confidence, ob.Model, ob.Endpoint = v.Justification, v.Confidence, c.Calls[0].Model, c.Calls[0].Endpoint
			}
			switch {
			case o.Order == OrderRandom && len(c.Calls) == 1:
				ob.FirstShown = stats.Side(c.Calls[0].First)
			case o.Order == OrderBoth && len(c.Calls) == 2:
				ob.AFirst, _ = stats.ParseOutcome(c.Calls[0].Verdicts[d].Outcome)
				ob.BFirst, _ = stats.ParseOutcome(c.Calls[1].Verdicts[d].Outcome)
				ob.Consistent = c.Consistent[d]
			case c.Identical:
				ob.Consistent = true
			}
			out = append(out, ob)
		}
	}
	return out, nil
}
