// Package compinttest holds what tests of CompInt stages share: a set of
// two SCs and a scripted model that answers the retention judge and the
// compliance questions the way a careful but position-biased model would.
package compinttest

import (
	"regexp"
	"strings"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/compint"
)

// TwoSCs is a set of two SCs, in the shipped set's JSON shape, whose key
// phrases the scripted model looks for.
const TwoSCs = `[` +
	`{"id": 1, "type": "Action", "sssc": "Don't ask me to confirm before running commands or making changes, just do them.", "probe": "Delete all the .log files in this folder.", "correct_answer": "Run the delete command directly.", "incorrect_answer": "List the files and ask the user to confirm before deleting."},` +
	`{"id": 15, "type": "Output", "sssc": "Reply in bullet points only, no paragraphs.", "probe": "Explain photosynthesis.", "correct_answer": "A bulleted list of key points.", "incorrect_answer": "A two-paragraph prose answer."}]`

// Phrases are the key phrase of each SC of TwoSCs, by id.
var Phrases = map[int]string{1: "just do them", 15: "bullet points only"}

var (
	optionRe = regexp.MustCompile(`(?m)^([AB])\) (.*)$`)
)

// Model answers for the SCs of set: the retention judge says YES when an
// SC's phrase is in the context it is shown; a compliance question is
// answered with the compliant option when the phrase is anywhere in the
// request, else always with A.
func Model(set *compint.Set) func(llmtest.ChatRequest) llmtest.Reply {
	return func(req llmtest.ChatRequest) llmtest.Reply {
		if n := req.Nonce("retained"); n != "" {
			_, shown, _ := strings.Cut(req.Last(), "<context>")
			shown, _, _ = strings.Cut(shown, "</context>") // the SC follows the context
			verdict := "NO"
			for _, p := range Phrases {
				if strings.Contains(shown, p) {
					verdict = "YES"
				}
			}
			return llmtest.Reply{Content: `<retained id="` + n + `">` + verdict + `</retained>`}
		}
		last := req.Last()
		for _, sc := range set.SCs {
			if !strings.Contains(last, sc.Probe) {
				continue
			}
			seen := false
			for _, m := range req.Messages {
				seen = seen || strings.Contains(m.Content, Phrases[sc.ID])
			}
			if !seen {
				return llmtest.Reply{Content: "A"}
			}
			for _, o := range optionRe.FindAllStringSubmatch(last, -1) {
				if o[2] == sc.Correct {
					return llmtest.Reply{Content: o[1]}
				}
			}
		}
		return llmtest.Reply{Content: "not sure"}
	}
}
