package respond

import (
	"encoding/json"
	"fmt"
)

// Output is what one respond unit stores: the answers generated for one
// (conversation, turn, variant).
type Output struct {
	Strategy      string   `json:"strategy"`   // curate variant the context came from
	Respondent    string   `json:"respondent"` // role that answered
	Model         string   `json:"model"`      // model the server reported for the first sample
	Endpoint      string   `json:"endpoint"`   // endpoint name from the configuration (never its URL or key)
	ContextTokens int      `json:"context_tokens"`
	Samples       []Sample `json:"samples"`
}

// Sample is one generated answer.
type Sample struct {
	Index            int    `json:"index"`
	Text             string `json:"text"`                // the answer with reasoning removed
	Reasoning        string `json:"reasoning,omitempty"` // kept apart, never judged as the answer
	FinishReason     string `json:"finish_reason,omitempty"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
}

// Decode reads a stored respond unit output.
func Decode(b []byte) (Output, error) {
	var o Output
	if err := json.Unmarshal(b, &o); err != nil {
		return o, fmt.Errorf("decoding respond output: %w", err)
	}
	return o, nil
}

// Sample returns the sample with index i.
func (o Output) Sample(i int) (Sample, bool) {
	for _, s := range o.Samples {
		if s.Index == i {
			return s, true
		}
	}
	return Sample{}, false
}
