package classify_test

import (
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/stages/annotator/annotatortest"
	"github.com/ac3/ac3/stages/classify"
)

// The prompts are laid out for providers' prompt caches (issue 33): the
// system message is the same for every turn and carries no nonce; the
// transcript's opening tag carries a nonce of the whole conversation, the
// same for every turn, so one turn's prompt begins with the transcript the
// turn before showed; the answer's form comes last.
func TestPromptLayoutForPromptCaches(t *testing.T) {
	for _, out := range []parse.Output{parse.Tags, parse.JSONSchema} {
		t.Run(string(out), func(t *testing.T) {
			a := &classify.LLM{Output: out}
			t2, err := a.Messages(annotatortest.Sample(), 2)
			if err != nil {
				t.Fatal(err)
			}
			t3, err := a.Messages(annotatortest.Sample(), 3)
			if err != nil {
				t.Fatal(err)
			}
			if t2[0].Content != t3[0].Content || strings.Contains(t2[0].Content, `id="`) {
				t.Errorf("the system message differs between turns or carries a nonce:\n%s", t2[0].Content)
			}
			open2, _, _ := strings.Cut(t2[1].Content, "\n")
			open3, _, _ := strings.Cut(t3[1].Content, "\n")
			if open2 != open3 || !strings.HasPrefix(open2, `<transcript id="`) {
				t.Errorf("the transcript opens with %q at turn 2 and %q at turn 3", open2, open3)
			}
			if before := t2[1].Content[:strings.Index(t2[1].Content, "[now]")]; !strings.HasPrefix(t3[1].Content, before) {
				t.Errorf("turn 3's transcript does not begin with turn 2's up to u_2:\n%s", before)
			}
			last := t3[1].Content
			end := strings.Index(last, "</transcript>")
			form := strings.Index(last, "Reply with exactly one")
			if end < 0 || form < end {
				t.Errorf("the answer's form is not after the transcript:\n%s", last)
			}
		})
	}
}
