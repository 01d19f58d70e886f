package simulate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/lic/grade"
	"github.com/ac3/ac3/stages/lic/simulate"
)

func spec(t *testing.T, name string) prompt.Spec {
	t.Helper()
	for _, s := range simulate.PromptSpecs() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no prompt %q", name)
	return prompt.Spec{}
}

func parsed(t *testing.T, name, text string) *prompt.Template {
	t.Helper()
	tm, err := prompt.ParseFile(spec(t, name), name+".tmpl", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// Users' templates for the simulated user, the respondent and the check are
// what the endpoint receives, with ac3's answer formats after them; the
// respondent's keeps the grader's answer format of its task.
func TestUserPromptsAreWhatTheSimulationSends(t *testing.T) {
	ctx := context.Background()
	convs := loadSample(t, grade.TaskMath)[:2]
	l := openRun(t, convs)
	prompts := simulate.Prompts{
		UserSim:    parsed(t, "user_sim", "MY-USER. Say this next, casually: {{.Piece}}\n(after {{len .History}} messages)"),
		Respondent: parsed(t, "respondent", "MY-ASSISTANT for a {{.Task}} task.{{if .Schema}}\n{{.Schema}}{{end}}{{if .Functions}}\n{{.Functions}}{{end}}"),
		FNCheck:    parsed(t, "fn_check", "MY-CHECK. Task: {{.Task}}\n{{range .Messages}}- {{.}}\n{{end}}"),
	}
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{LastContains: "MY-USER", Func: func(r llmtest.ChatRequest) llmtest.Reply {
		_, piece, _ := strings.Cut(r.Last(), "casually: ")
		piece, _, _ = strings.Cut(piece, "\n(after")
		return llmtest.Reply{Content: "so, " + piece}
	}})
	srv.Add(llmtest.Rule{LastContains: "MY-CHECK", Reply: llmtest.Reply{Content: `{"sufficient": true, "reason": "all there"}`}})
	srv.Add(llmtest.Rule{SystemContains: "MY-ASSISTANT", Reply: llmtest.Reply{Content: "Hmm.\n" + grade.AnswerPrefix + " -1"}})
	srv.Add(llmtest.Rule{Fault: llmtest.Fault{Kind: llmtest.Status, Status: 400, Message: "a shipped prompt was sent"}})
	c := client(t, srv)
	sim, err := simulate.New(c, simulate.Options{Mode: simulate.ModeModel, Grader: grade.New(grade.Options{}), Prompts: prompts})
	if err != nil {
		t.Fatal(err)
	}
	ours, err := simulate.New(c, simulate.Options{Mode: simulate.ModeModel, Grader: grade.New(grade.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	if sim.Variants()[0].Version == ours.Variants()[0].Version {
		t.Error("users' prompts kept the simulation's version")
	}
	if sum, err := pipeline.Run(ctx, l, sim, pipeline.Options{}); err != nil || sum.Done != 2 || sum.Failed != 0 {
		t.Fatalf("simulate: %+v %v", sum, err)
	}
	check := simulate.NewFNCheck(c, l, sim, "", "")
	if check.Variants()[0].Version == simulate.NewFNCheck(c, l, ours, "", "").Variants()[0].Version {
		t.Error("the check's template kept its version")
	}
	if sum, err := pipeline.Run(ctx, l, check, pipeline.Options{}); err != nil || sum.Failed != 0 {
		t.Fatalf("check: %+v %v", sum, err)
	}
	var users, answers, checks int
	for _, call := range srv.Calls() {
		r := call.Request
		switch {
		case strings.Contains(r.Last(), "MY-USER"):
			users++
			if !strings.HasSuffix(r.Last(), "\n\nReply with the message only: it is sent to the assistant as it is.") {
				t.Errorf("user simulator request:\n%s", r.Last())
			}
		case strings.Contains(r.System(), "MY-ASSISTANT"):
			answers++
			if !strings.HasPrefix(r.System(), "MY-ASSISTANT for a math task.\n\nWhenever you give an answer, end your reply with one line of the form\n"+grade.AnswerPrefix) {
				t.Errorf("respondent system prompt:\n%s", r.System())
			}
		case strings.Contains(r.Last(), "MY-CHECK"):
			checks++
			if !strings.HasSuffix(r.Last(), `{"sufficient": true or false, "reason": "one sentence"}.`) || !strings.Contains(r.Last(), "- so, ") {
				t.Errorf("check request:\n%s", r.Last())
			}
		}
	}
	if users == 0 || answers == 0 || checks != 2 || users+answers+checks != srv.Count() {
		t.Errorf("%d user, %d answer, %d check calls of %d", users, answers, checks, srv.Count())
	}
}

func TestRespondentTemplateMustShowTheTaskMaterial(t *testing.T) {
	_, err := prompt.ParseFile(spec(t, "respondent"), "r.tmpl", []byte("Help the user with their {{.Task}} task."))
	if err == nil || !strings.Contains(err.Error(), "must show .Schema and .Functions") {
		t.Fatalf("err = %v", err)
	}
}
