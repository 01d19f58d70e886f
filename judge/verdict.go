package judge

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/parse"
)

const verdictTag = "verdict"

// dimAnswer is the judge's answer on one dimension, by position.
type dimAnswer struct {
	Winner        string          `json:"winner" parse:"required,enum=A|B|tie|a|b|Tie|TIE"`
	Justification string          `json:"justification"`
	Confidence    json.RawMessage `json:"confidence"`
}

// verdictAnswer is the JSON object inside the nonce-tagged verdict block.
type verdictAnswer struct {
	Quality dimAnswer `json:"quality" parse:"required"`
	OnTopic dimAnswer `json:"on_topic" parse:"required"`
}

func (v verdictAnswer) dim(d string) dimAnswer {
	if d == OnTopic {
		return v.OnTopic
	}
	return v.Quality
}

// parseVerdict reads only the block whose tag carries this prompt's nonce,
// so a verdict-looking text inside a candidate is never taken for the
// judge's answer.
func parseVerdict(tg parse.Tagger) func(llm.Response) (verdictAnswer, error) {
	return func(r llm.Response) (verdictAnswer, error) {
		var v verdictAnswer
		sec, err := tg.Parse(r.Text, []string{verdictTag})
		if err != nil {
			return v, err
		}
		if err := parse.JSON(sec[verdictTag], &v); err != nil {
			return v, err
		}
		return v, nil
	}
}

// confidence reads a confidence given as a number in [0, 1], a percentage,
// or a numeric string; anything else counts as not given.
func confidence(raw json.RawMessage) *float64 {
	s := strings.Trim(strings.TrimSpace(string(raw)), `"`)
	s = strings.TrimSuffix(s, "%")
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f > 100 {
		return nil
	}
	if f > 1 {
		f /= 100
	}
	return &f
}
