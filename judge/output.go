package judge

import (
	"encoding/json"
	"fmt"
)

// The dimensions every verdict has.
const (
	Quality = "quality"
	OnTopic = "on_topic"
)

// Dimensions lists the judged dimensions in report order.
func Dimensions() []string { return []string{Quality, OnTopic} }

// Output is what one judge unit stores: every comparison of one pair on one
// turn of one conversation.
type Output struct {
	Pair        string       `json:"pair"` // the stage variant, e.g. "gated-reset:ao"
	A           string       `json:"a"`    // respond variant of strategy A
	B           string       `json:"b"`
	Context     string       `json:"context"` // full | user_only | final_answer_only
	Order       string       `json:"order"`   // random | both
	Seed        int64        `json:"seed"`    // the run seed the random order is drawn from
	Prompt      string       `json:"prompt"`  // prompt template version
	Comparisons []Comparison `json:"comparisons"`
}

// Strategy names the strategy on side ("A" or "B") of o; anything else is
// "tie".
func (o Output) Strategy(side string) string {
	switch side {
	case "A":
		return o.A
	case "B":
		return o.B
	}
	return "tie"
}

// Comparison is the judgement of sample Sample of A against sample Sample
// of B.
type Comparison struct {
	Sample    int  `json:"sample"`
	Identical bool `json:"identical,omitempty"` // equal answers: a tie, no call
	// Calls are the judge's answers: one with order random, two (A shown
	// first, then B shown first) with order both.
	Calls []Call `json:"calls,omitempty"`
	// Outcome per dimension, in terms of the strategies ("A", "B", "tie"),
	// after combining both orders.
	Outcome map[string]string `json:"outcome"`
	// Consistent per dimension, with order both: the two orders agreed.
	Consistent map[string]bool `json:"consistent,omitempty"`
}

// Call is one answer of the judge.
type Call struct {
	First    string                `json:"first"` // strategy shown first: "A" or "B"
	Model    string                `json:"model"`
	Endpoint string                `json:"endpoint"` // endpoint name from the configuration
	Verdicts map[string]DimVerdict `json:"verdicts"`
}

// DimVerdict is the judge's verdict on one dimension in one call.
type DimVerdict struct {
	Shown         string   `json:"shown"`   // as answered, by position: A = shown first
	Outcome       string   `json:"outcome"` // mapped to the strategies
	Justification string   `json:"justification,omitempty"`
	Confidence    *float64 `json:"confidence,omitempty"`
}

// Decode reads a stored judge unit output.
func Decode(b []byte) (Output, error) {
	var o Output
	if err := json.Unmarshal(b, &o); err != nil {
		return o, fmt.Errorf("decoding judge output: %w", err)
	}
	return o, nil
}
