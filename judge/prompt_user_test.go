package judge_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/prompt"
)

func TestShippedPromptMeetsItsDeclaration(t *testing.T) {
	if err := prompt.Check(judge.Template(), judge.PromptSpec()); err != nil {
		t.Fatal(err)
	}
}

// The judge's prompt in a user's words is what the endpoint receives, with
// ac3's verdict form after it; the verdicts are read as with ours and record
// the template's version.
func TestUserPromptIsWhatTheJudgeReceives(t *testing.T) {
	const own = "Two assistants answered the last message of this chat."
	tm, err := prompt.ParseFile(judge.PromptSpec(), "my-judge.tmpl", []byte(own+"\n{{range .History}}{{.Role}}: {{.Content}}\n{{end}}\nFirst answer (A):\n{{.First}}\n\nSecond answer (B):\n{{.Second}}"))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{Func: func(r llmtest.ChatRequest) llmtest.Reply {
		m := nonceRe.FindStringSubmatch(r.Last())
		if m == nil {
			return llmtest.Reply{Content: "no verdict form"}
		}
		return llmtest.Reply{Content: fmt.Sprintf(`<verdict id="%s">{"quality":{"winner":"A","justification":"j."},"on_topic":{"winner":"tie","justification":"k."}}</verdict>`, m[1])}
	}})
	units := answers{"respond/c1": {unit("x", 2, "answer X2"), unit("y", 2, "answer Y2")}}
	st := newStage(t, srv, units, judge.Options{Prompt: tm})
	shipped := newStage(t, llmtest.New(t, llmtest.Options{}), units, judge.Options{})
	if st.Variants()[0].Version == shipped.Variants()[0].Version {
		t.Error("the user's prompt kept the shipped prompt's version")
	}
	us := run(t, st, testConv())
	if len(us) != 1 || us[0].Failed {
		t.Fatalf("units %+v", us)
	}
	o, err := judge.Decode(us[0].Output)
	if err != nil || !strings.HasPrefix(o.Prompt, "pairwise@user+") {
		t.Errorf("recorded prompt %q (%v)", o.Prompt, err)
	}
	calls := srv.Calls()
	if len(calls) != 1 || len(calls[0].Request.Messages) != 1 {
		t.Fatalf("%d calls; the template has no system section", len(calls))
	}
	sent := calls[0].Request.Messages[0].Content
	for _, want := range []string{own, "user: Now one about snow.", "Second answer (B):\n", "\n\nAnswer with a single block that starts with <verdict id="} {
		if !strings.Contains(sent, want) {
			t.Errorf("sent prompt lacks %q:\n%s", want, sent)
		}
	}
	if !strings.HasPrefix(sent, own) {
		t.Errorf("sent prompt does not start with the user's words:\n%s", sent)
	}
}

func TestJudgeRefusesAnotherPromptsTemplate(t *testing.T) {
	tm, err := prompt.ParseFile(prompt.Spec{Name: "other", Data: judge.PromptSpec().Data}, "o.tmpl", []byte("{{.First}}"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = judge.New(nil, answers{}, judge.Options{Pairs: []judge.Pair{{A: "x", B: "y"}}, RespondVersions: map[string]string{"x": "v", "y": "v"}, Prompt: tm})
	if err == nil || !strings.Contains(err.Error(), "not pairwise") {
		t.Fatalf("err = %v", err)
	}
}
