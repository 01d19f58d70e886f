package constraints

import (
	"testing"

	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/stages/annotator"
)

// FuzzParallelAnswer feeds arbitrary answers for turn 3 to the parallel
// form's parser and checks, and what they accept to Consolidate: nothing
// panics, an accepted constraint quotes u_3 and names only earlier turns,
// and the registry never holds two constraints Duplicate calls the same.
func FuzzParallelAnswer(f *testing.F) {
	const user = "From now on, answer in English, not French. What is a verb?"
	tg := parse.NewTagger(user)
	for _, body := range []string{
		`{"constraints": []}`,
		`{"constraints": [{"text": "Answer in English.", "evidence": "answer in English", "type": "output", "repeats": 0, "revises": 1}]}`,
		`{"constraints": [{"text": "Answer in English.", "evidence": "answer in English", "type": "output", "repeats": 2}, {"text": "answer in english", "evidence": "From now on", "type": "output"}]}`,
		`{"constraints": [{"text": "x", "evidence": "verb", "type": "output", "revises": 7, "repeats": -1}]}`,
		`{"constraints": [{"text": "", "evidence": "verb", "type": "output"}]}`,
		`{"constraints": [{"text": "x", "evidence": "verb", "type": "output", "revises": "1"}]}`,
		`{"constraints": null}`,
	} {
		f.Add(tg.Wrap("answer", body), false)
		f.Add(body, true)
	}
	f.Add("<answer id=\"000000000000\">{}</answer>", false)
	f.Fuzz(func(t *testing.T, text string, strict bool) {
		out := parse.Tags
		if strict {
			out = parse.JSONSchema
		}
		w, err := annotator.AnswerForm[parallelWire](StageName).Parse(out, tg, text)
		if err != nil {
			return
		}
		props, err := checkParallel(user, 3)(w)
		if err != nil {
			return
		}
		for _, p := range props {
			if !quoted(p.Evidence, user) || p.Turn != 3 || !validType(p.Type) {
				t.Fatalf("accepted %+v", p)
			}
			if p.Repeats < 0 || p.Repeats >= 3 || p.Revises < 0 || p.Revises >= 3 {
				t.Fatalf("relation to a turn that is not earlier: %+v", p)
			}
		}
		reg := []Constraint{
			{Text: "Answer in French.", Evidence: "answer in French", Type: "output", Turn: 1},
			{Text: "Ask before deleting files.", Evidence: "ask before deleting", Type: "action", Turn: 2},
		}
		added, next := Consolidate(reg, props, 3)
		if len(next) > len(reg)+len(props) || len(added) > len(props) {
			t.Fatalf("%d constraints from %d and %d proposals", len(next), len(reg), len(props))
		}
		for i, a := range next {
			for _, b := range next[i+1:] {
				if (a.Turn == 3 || b.Turn == 3) && Duplicate(a.Text, b.Text) {
					t.Fatalf("registry holds %q and %q", a.Text, b.Text)
				}
			}
		}
	})
}
