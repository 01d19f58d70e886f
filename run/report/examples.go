package report

import (
	"encoding/binary"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/stats"
)

// examplesShown is how many example verdicts the report shows per pair
// and dimension.
const examplesShown = 3

// Example is one verdict shown with the judge's reasoning, so a reader
// sees what the numbers are made of.
type Example struct {
	Conversation string `json:"conversation"`
	Turn         int    `json:"turn"` // user turn, 1-based
	Sample       int    `json:"sample"`
	TurnType     string `json:"turn_type"`
	// Winner is the strategy that won, or "tie".
	Winner  string `json:"winner"`
	Outcome string `json:"outcome"` // A, B or tie
	// Justification is the judge's reasoning; with order both, that of the
	// first order asked, and Orders has both.
	Justification string        `json:"justification"`
	Orders        []ExampleCall `json:"orders,omitempty"`
	Model         string        `json:"model,omitempty"`
}

// ExampleCall is one order of a verdict judged in both orders.
type ExampleCall struct {
	First         string `json:"first"`  // the strategy shown first
	Winner        string `json:"winner"` // the strategy this order preferred, or "tie"
	Justification string `json:"justification"`
}

// exampleCalls returns both orders of ob's comparison when it was judged in
// both, naming the strategies; nil otherwise.
func exampleCalls(o judge.Output, ob judge.Observation) []ExampleCall {
	name := o.Strategy
	for _, c := range o.Comparisons {
		if c.Sample != ob.Sample || len(c.Calls) < 2 {
			continue
		}
		out := make([]ExampleCall, 0, len(c.Calls))
		for _, call := range c.Calls {
			v := call.Verdicts[ob.Dimension]
			out = append(out, ExampleCall{First: name(call.First), Winner: name(v.Outcome), Justification: strings.TrimSpace(v.Justification)})
		}
		return out
	}
	return nil
}

// exampleFold picks a pair's example verdicts on one dimension. The choice
// is a function of the run alone: each verdict with reasoning gets a hash
// of the report seed and its ids, and the fold keeps the lowest hashes of
// each outcome, so neither the page size nor the order of reading changes
// it, and memory stays at a few verdicts.
type exampleFold struct {
	seed uint64
	// low holds, per outcome (A won, B won, tie), the lowest-hash
	// candidates, sorted by hash.
	low [3][]exampleCand
}

type exampleCand struct {
	h uint64
	x Example
}

func outcomeSlot(o stats.Outcome) int {
	switch o {
	case stats.AWins:
		return 0
	case stats.BWins:
		return 1
	case stats.Tie:
		return 2
	}
	return -1
}

// exampleHash mixes the seed with the verdict's ids; ids are separated by
// a zero byte, which no id contains.
func exampleHash(seed uint64, ob judge.Observation) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	for _, s := range []string{ob.Variant, ob.Dimension, ob.ConvID} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	binary.LittleEndian.PutUint64(b[:], uint64(ob.Turn)<<32|uint64(uint32(ob.Sample)))
	h.Write(b[:])
	return h.Sum64()
}

// add offers one observation with the orders it was judged in (nil for
// one order); verdicts without reasoning (ties without a call, answers
// without a justification) are not examples.
func (f *exampleFold) add(ob judge.Observation, turnType string, orders []ExampleCall) {
	slot := outcomeSlot(ob.Outcome)
	just := strings.TrimSpace(ob.Justification)
	for _, o := range orders {
		if just == "" {
			just = o.Justification
		}
	}
	if slot < 0 || just == "" {
		return
	}
	c := exampleCand{h: exampleHash(f.seed, ob), x: Example{
		Conversation: ob.ConvID, Turn: ob.Turn, Sample: ob.Sample, TurnType: turnType,
		Outcome: ob.Outcome.String(), Justification: just, Orders: orders, Model: ob.Model,
	}}
	switch ob.Outcome {
	case stats.AWins:
		c.x.Winner = ob.A
	case stats.BWins:
		c.x.Winner = ob.B
	default:
		c.x.Winner = "tie"
	}
	low := f.low[slot]
	i, _ := slices.BinarySearchFunc(low, c, cmpCand)
	if i >= examplesShown {
		return
	}
	low = slices.Insert(low, i, c)
	if len(low) > examplesShown {
		low = low[:examplesShown]
	}
	f.low[slot] = low
}

// cmpCand orders candidates by hash, then by ids, so equal hashes still
// give one order.
func cmpCand(a, b exampleCand) int {
	switch {
	case a.h != b.h:
		return cmpU(a.h, b.h)
	case a.x.Conversation != b.x.Conversation:
		return strings.Compare(a.x.Conversation, b.x.Conversation)
	case a.x.Turn != b.x.Turn:
		return a.x.Turn - b.x.Turn
	}
	return a.x.Sample - b.x.Sample
}

func cmpU(a, b uint64) int {
	if a < b {
		return -1
	}
	return 1
}

// examples returns up to examplesShown verdicts: the first pick of each
// outcome (A won, B won, tie) when there is one, so a reader sees both
// sides, then the lowest hashes left; in conversation order.
func (f *exampleFold) examples() []Example {
	var picked, rest []exampleCand
	for _, low := range f.low {
		if len(low) > 0 {
			picked = append(picked, low[0])
			rest = append(rest, low[1:]...)
		}
	}
	slices.SortFunc(rest, cmpCand)
	for _, c := range rest {
		if len(picked) >= examplesShown {
			break
		}
		picked = append(picked, c)
	}
	out := make([]Example, 0, len(picked))
	for _, c := range picked {
		out = append(out, c.x)
	}
	slices.SortFunc(out, func(a, b Example) int {
		if a.Conversation != b.Conversation {
			return strings.Compare(a.Conversation, b.Conversation)
		}
		if a.Turn != b.Turn {
			return a.Turn - b.Turn
		}
		return a.Sample - b.Sample
	})
	return out
}
