package config

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/run"
)

// promptConfig writes a config whose endpoint is srv and whose stages
// section is stages; %s in stages is the absolute testdata/prompts folder.
func promptConfig(t *testing.T, srv *llmtest.Server, input, stages string) string {
	t.Helper()
	dir := t.TempDir()
	prompts, err := filepath.Abs("testdata/prompts")
	if err != nil {
		t.Fatal(err)
	}
	in := ""
	if input != "" {
		in = fmt.Sprintf("input: {files: [%q], filter: {user_turns: {min: 2}}}\n", input)
	}
	body := fmt.Sprintf(`run: {db: %q}
%sendpoints:
  e: {base_url: %q}
models:
  m: {endpoint: e}
roles:
  annotator: {model: m}
  analyzer: {model: m}
stages:
%s
`, filepath.Join(dir, "run.db"), in, srv.URL, strings.ReplaceAll(stages, "%s", prompts))
	p := filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPromptTemplatesAreCheckedAtLoad(t *testing.T) {
	tests := []struct {
		name, stages string
		want         []string
	}{
		{"does not parse", "  classify: {annotator: llm, prompts: {classify: %s/bad-syntax.tmpl}}",
			[]string{"line 10: stages.classify.prompts.classify", "bad-syntax.tmpl:3:"}},
		{"a field the stage does not give", "  classify: {annotator: llm, prompts: {classify: %s/bad-field.tmpl}}",
			[]string{"bad-field.tmpl:5:", "the classify prompt has no field .Reply; it has .Nonce, .Turn, .Messages"}},
		{"states the answer's form itself", "  classify: {annotator: llm, prompts: {classify: %s/bad-contract.tmpl}}",
			[]string{"bad-contract.tmpl:5:", ".Answer is the answer's form, which ac3 adds"}},
		{"leaves out the conversation", "  classify: {annotator: llm, prompts: {classify: %s/bad-missing.tmpl}}",
			[]string{"bad-missing.tmpl: the classify prompt must show .Messages"}},
		{"step 1 asks for the transcript", "  curate: {strategies: [gated-reset], prompts: {spec: %s/bad-spec.tmpl}}",
			[]string{"stages.curate.prompts.spec", "bad-spec.tmpl:5:", "reads only the system message and the user's messages"}},
		{"a template of the wrong stage's shape", "  pollution: {prompts: {pollution: %s/good-spec.tmpl}}",
			[]string{"good-spec.tmpl:2:", "the pollution prompt has no field .Users"}},
		{"no such prompt", "  judge: {pairs: [ao:fc], prompts: {verdict: %s/good-spec.tmpl}}",
			[]string{"stages.judge.prompts.verdict: no prompt of that name (known: pairwise)"}},
		{"no such file", "  classify: {annotator: llm, prompts: {classify: %s/nowhere.tmpl}}",
			[]string{"stages.classify.prompts.classify", "nowhere.tmpl"}},
		{"the heuristic sends no prompt", "  constraints: {prompts: {constraints: %s/bad-missing.tmpl}}",
			[]string{"stages.constraints.prompts: the heuristic annotator sends no prompt"}},
		{"refs share the classify call", "  refs: {annotator: llm, prompts: {classify: %s/bad-missing.tmpl}}",
			[]string{"stages.refs.prompts: refs come from the classify call"}},
		{"lic respondent without the task's material", "  classify: {annotator: heuristic}\nlic: {strategies: [fc], prompts: {respondent: %s/bad-missing.tmpl}}",
			[]string{"lic.prompts.respondent", "bad-missing.tmpl:2:", "the respondent prompt has no field .Turn"}},
		{"lic operators' prompts", "  classify: {annotator: heuristic}\nlic: {strategies: [fc], operators: {prompts: {spec: %s/good-spec.tmpl}}}",
			[]string{"lic.operators.prompts: put the replay's prompts under lic.prompts"}},
		{"respond has no prompt", "  respond: {strategies: [fc], prompts: {respond: %s/good-spec.tmpl}}",
			[]string{"stages.respond.prompts: respond has no prompt of its own"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Options{})
			_, err := Load(promptConfig(t, srv, "", tc.stages), func(string) string { return "" })
			if err == nil {
				t.Fatal("the config was accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if n := srv.Count(); n != 0 {
				t.Errorf("%d requests before the config was refused", n)
			}
		})
	}
}

func TestGoodPromptTemplateGoesToItsStage(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{})
	cfg, err := Load(promptConfig(t, srv, "", "  curate: {strategies: [gated-reset], prompts: {spec: %s/good-spec.tmpl, reset: %s/good-spec.tmpl}}"), func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "stages.curate.prompts.reset") || !strings.Contains(err.Error(), "the reset prompt has no field .Users") {
		t.Fatalf("a spec template given as the reset text: %v", err)
	}
	cfg, err = Load(promptConfig(t, srv, "", "  curate: {strategies: [gated-reset], prompts: {spec: %s/good-spec.tmpl}}"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ac, err := cfg.AC3()
	if err != nil {
		t.Fatal(err)
	}
	if tm := ac.Prompts["spec"]; tm == nil || tm.Name() != "spec" || !strings.HasSuffix(tm.File(), "good-spec.tmpl") {
		t.Fatalf("prompts %v", ac.Prompts)
	}

	cfg, err = Load(promptConfig(t, srv, "", "  classify: {annotator: heuristic}\nlic: {strategies: [fc, gated-reset], prompts: {user_sim: %s/good-user-sim.tmpl, spec: %s/good-spec.tmpl}}"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	lc, err := cfg.LiC(cfg.base)
	if err != nil {
		t.Fatal(err)
	}
	if lc.Prompts.UserSim == nil || lc.Prompts.UserSim.Name() != "user_sim" || lc.AC3.Prompts["spec"] == nil || lc.Prompts.Respondent != nil {
		t.Fatalf("lic prompts %+v, replay's %v", lc.Prompts, lc.AC3.Prompts)
	}
}

var answerNonce = regexp.MustCompile(`<answer id="([0-9a-f]+)">`)

// A run with a replaced prompt sends it; the same run again does nothing;
// after the template's bytes change, every unit is done again under the
// new version (the old answers are not reused: the requests differ).
func TestRunWithAnotherTemplateRedoesTheUnits(t *testing.T) {
	const mark = "You sort the messages people send"
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{Func: func(r llmtest.ChatRequest) llmtest.Reply {
		m := answerNonce.FindStringSubmatch(r.Last())
		if m == nil {
			return llmtest.Reply{Content: "no answer form"}
		}
		return llmtest.Reply{Content: fmt.Sprintf("<answer id=%q>{\"type\":\"new_ask\",\"confidence\":0.5,\"reason\":\"x\",\"refs\":[]}</answer>", m[1])}
	}})
	own, err := os.ReadFile("../../fixtures/prompts/classify-own-words.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	input, err := filepath.Abs("../../fixtures/wildchat/wildchat-1m-sample10.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tmpl := filepath.Join(t.TempDir(), "my-classify.tmpl")
	path := promptConfig(t, srv, input, "  classify: {annotator: llm, prompts: {classify: "+tmpl+"}}")
	execute := func(text []byte) (run.StageResult, string) {
		t.Helper()
		if err := os.WriteFile(tmpl, text, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(path, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		plan, _, err := cfg.Plan(func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var log bytes.Buffer
		res, err := run.Execute(ctx, plan, run.Options{Log: &log})
		if err != nil {
			t.Fatalf("%v\n%s", err, log.String())
		}
		for _, s := range res.Stages {
			if s.Stage == "classify" {
				return s, log.String()
			}
		}
		t.Fatalf("no classify stage ran:\n%s", log.String())
		return run.StageResult{}, ""
	}

	first, log := execute(own)
	sent := srv.Count()
	if first.Done == 0 || first.Failed != 0 || sent == 0 {
		t.Fatalf("first run: %+v, %d requests\n%s", first, sent, log)
	}
	for _, c := range srv.Calls() {
		if !strings.HasPrefix(c.Request.System(), mark) {
			t.Fatalf("a request without the user's prompt:\n%s", c.Request.System())
		}
	}
	if !strings.Contains(log, "prompt classify from "+tmpl+" (version classify@user+") {
		t.Errorf("the run does not say which prompt it sends:\n%s", log)
	}

	again, log := execute(own)
	if again.Done != 0 || srv.Count() != sent {
		t.Fatalf("the same template again: %+v, %d more requests\n%s", again, srv.Count()-sent, log)
	}

	other := bytes.Replace(own, []byte(mark), []byte("You classify the messages people send"), 1)
	redo, log := execute(other)
	if redo.Done != first.Done || srv.Count() != 2*sent {
		t.Fatalf("another template: %+v (first run %+v), %d more requests (first run %d)\n%s", redo, first, srv.Count()-sent, sent, log)
	}
	for _, c := range srv.Calls()[sent:] {
		if !strings.HasPrefix(c.Request.System(), "You classify the messages") {
			t.Fatalf("a request of the second template without it:\n%s", c.Request.System())
		}
	}
}
