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
	Confidence    json.RawMessage `json:"confidence" parse:"type=number"`
}

// verdictAnswer is the judge's JSON object: inside the nonce-tagged verdict
// block with tags output, the whole answer with json_schema output. Its
// struct tags are the one declaration of the answer's fields (the prompt's
// example, the parser and the strict schema come from them; see
// verdictForm).
type verdictAnswer struct {
	Quality dimAnswer `json:"quality" parse:"required" hint:"{\"winner\": \"A\", \"justification\": \"one sentence\", \"confidence\": 0.7}"`
	OnTopic dimAnswer `json:"on_topic" parse:"required" hint:"{\"winner\": \"tie\", \"justification\": \"one sentence\", \"confidence\": 0.6}"`
}

// verdictForm is the form of the judge's answer for both outputs.
func verdictForm() parse.Object[verdictAnswer] {
	return parse.Object[verdictAnswer]{Name: verdictTag, Section: verdictTag}
}

func (v verdictAnswer) dim(d string) dimAnswer {
	if d == OnTopic {
		return v.OnTopic
	}
	return v.Quality
}

// parseVerdict reads the verdict as out lays it out. With tags only the
// block whose tag carries this prompt's nonce counts, so a verdict-looking
// text inside a candidate is never taken for the judge's answer; with
// json_schema the whole answer must be the object (parse.Strict), so one
// quoted next to it makes the answer invalid instead.
func parseVerdict(out parse.Output, tg parse.Tagger) func(llm.Response) (verdictAnswer, error) {
	return func(r llm.Response) (verdictAnswer, error) {
		return verdictForm().Parse(out, tg, r.Text)
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
