package analyze_test

import (
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
)

func specOf(t *testing.T, name string) prompt.Spec {
	t.Helper()
	for _, s := range analyze.PromptSpecs() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no spec %q", name)
	return prompt.Spec{}
}

// The declarations a user's templates are checked against match the data
// the shipped prompts are rendered with: each shipped prompt passes its own
// declaration's check.
func TestShippedPromptsMeetTheirDeclarations(t *testing.T) {
	a, err := analyze.New(nil, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ps := a.Prompts()
	if len(ps) != len(analyze.PromptSpecs()) {
		t.Fatalf("%d prompts, %d declarations", len(ps), len(analyze.PromptSpecs()))
	}
	for _, p := range ps {
		if err := prompt.Check(p, specOf(t, p.Name())); err != nil {
			t.Errorf("%s: %v", p.Name(), err)
		}
	}
}

// A template for step 1 cannot ask for assistant text: nothing in its data
// holds any, and a field that would is refused with the reason.
func TestSpecTemplateAskingForAssistantTextIsRefused(t *testing.T) {
	const users = "{{range .Users}}{{.}}\n{{end}}"
	tests := []struct{ name, text, want string }{
		{"the transcript", users + "{{.Transcript}}", "reads only the system message and the user's messages"},
		{"the messages", users + "{{range .Messages}}{{.Content}}{{end}}", "reads only the system message and the user's messages"},
		{"an assistant reply", "{{.Reply}}" + users, "reads only the system message and the user's messages"},
		{"the evaluation's findings", users + "{{.Aligned}}", "reads only the system message and the user's messages"},
		{"the transcript by index", users + `{{index . "Transcript"}}`, "reads only the system message and the user's messages"},
		{"the transcript from a helper", `{{define "h"}}{{.Transcript}}{{end}}` + users + `{{template "h" .}}`, "reads only the system message and the user's messages"},
		{"the answer's form", users + "{{.T.Layout}}", "answer's form"},
		{"a field of no step", users + "{{.Everything}}", "has no field .Everything; it has .System, .Users"},
		{"no user messages at all", "{{.System}}", "must show .Users"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := prompt.ParseFile(specOf(t, "spec"), "my-spec.tmpl", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "my-spec.tmpl") {
				t.Fatalf("err = %v, want %q naming the file", err, tc.want)
			}
		})
	}
}

// A user's step-1 template that prints everything it is given still gets no
// assistant text: the request for step 1 holds none of the conversation's
// assistant or tool messages, while step 2's, which must read them, does.
func TestSpecTemplateCannotSeeAssistantText(t *testing.T) {
	const own = "MY-SPEC-PROMPT"
	text := own + `: everything I am given is {{printf "%#v" .}}` + "\n{{if .System}}Setup: {{.System}}\n{{end}}{{range $i, $u := .Users}}Message {{add $i 1}}: {{$u}}\n{{end}}"
	for _, out := range []parse.Output{parse.Tags, parse.JSONSchema} {
		t.Run(string(out), func(t *testing.T) {
			tm, err := prompt.ParseFile(specOf(t, "spec"), "my-spec.tmpl", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			srv := llmtest.New(t, llmtest.Options{})
			srv.Add(llmtest.Rule{Name: "my spec", LastContains: own, Func: func(r llmtest.ChatRequest) llmtest.Reply {
				if _, ok := r.Schema(); ok {
					return llmtest.Reply{Content: `{"spec": "the user wants a Go sum returning int64, with a test"}`}
				}
				return llmtest.Reply{Content: `<spec id="` + analyzetest.Nonce(r) + `">the user wants a Go sum returning int64, with a test</spec>`}
			}})
			analyzetest.Install(srv, analyzetest.Script{})
			a, err := analyze.New(analyzetest.OutputClient(t, srv, nil, out), analyze.Options{Prompts: map[string]*prompt.Template{"spec": tm}})
			if err != nil {
				t.Fatal(err)
			}
			an, _, err := a.Analyze(timeout(t), markedConversation(), 3, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			if an.Spec != "the user wants a Go sum returning int64, with a test" {
				t.Errorf("spec %q", an.Spec)
			}
			var step1, step2 int
			for _, call := range srv.Calls() {
				var all strings.Builder
				for _, m := range call.Request.Messages {
					all.WriteString(m.Content)
				}
				switch {
				case strings.Contains(all.String(), own):
					step1++
					if strings.Contains(all.String(), marker) {
						t.Errorf("step 1 received assistant text:\n%s", all.String())
					}
					for _, want := range []string{"Message 3: Still int, not int64. Add a test too.", "Setup: You are a coding assistant."} {
						if !strings.Contains(all.String(), want) {
							t.Errorf("step 1 lacks %q:\n%s", want, all.String())
						}
					}
					if len(call.Request.Messages) != 1 || call.Request.Messages[0].Role != "user" {
						t.Errorf("step 1 sent %d messages; the template has no system section", len(call.Request.Messages))
					}
				case analyzetest.Kind(call.Request) == analyzetest.KindEvaluate:
					step2++
					if !strings.Contains(all.String(), marker) {
						t.Error("step 2 did not see the assistant turns; the test proves nothing")
					}
				}
			}
			if step1 != 1 || step2 != 1 {
				t.Errorf("%d step-1 and %d step-2 calls, want 1 each", step1, step2)
			}
		})
	}
}

// A replaced prompt changes the analyzer's version (and so its units' keys)
// with every byte of the template, and only the versions that use it.
func TestReplacedPromptChangesTheVersion(t *testing.T) {
	base, err := analyze.New(nil, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const text = "Summarise this reply in one sentence: {{.Reply}}"
	versions := map[string]bool{}
	for _, body := range []string{text, text + ".", "In one sentence: {{.Reply}}"} {
		tm, err := prompt.ParseFile(specOf(t, "summary"), "sum.tmpl", []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		a, err := analyze.New(nil, analyze.Options{Prompts: map[string]*prompt.Template{"summary": tm}})
		if err != nil {
			t.Fatal(err)
		}
		if a.Version() != base.Version() {
			t.Error("replacing the summary prompt changed the analysis version")
		}
		v := a.SummaryVersion()
		if v == base.SummaryVersion() || !strings.Contains(v, "summary@user+") || versions[v] {
			t.Errorf("summary version %q (shipped %q, seen %v)", v, base.SummaryVersion(), versions)
		}
		versions[v] = true
	}
	other, err := prompt.ParseFile(specOf(t, "evaluate"), "ev.tmpl", []byte("{{.Spec}} {{.Transcript}}"))
	if err != nil {
		t.Fatal(err)
	}
	for name, tm := range map[string]*prompt.Template{"summary": other, "nonsense": other} {
		if _, err := analyze.New(nil, analyze.Options{Prompts: map[string]*prompt.Template{name: tm}}); err == nil {
			t.Errorf("a template for evaluate was taken as %q", name)
		}
	}
}
