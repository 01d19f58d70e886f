package compint_test

import (
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/compint"
)

func TestShippedPromptsMeetTheirDeclarations(t *testing.T) {
	for _, tc := range []struct {
		tmpl *prompt.Template
		spec prompt.Spec
	}{{compint.ProbePrompt(), compint.ProbeSpec()}, {compint.RetentionPrompt(), compint.RetentionSpec()}} {
		if err := prompt.Check(tc.tmpl, tc.spec); err != nil {
			t.Errorf("%s: %v", tc.spec.Name, err)
		}
	}
}

func TestUserProbeTemplate(t *testing.T) {
	refused := []struct{ name, text, want string }{
		{"gives the answer away", "{{.Probe}} A) {{.A}} B) {{.B}} (hint: {{.Compliant}})", "gives it away"},
		{"an order hint", "{{.Probe}} {{.A}} {{.B}} {{.Order}}", "gives it away"},
		{"its own system message", `{{define "system"}}x{{end}}{{define "user"}}{{.Probe}} {{.A}} {{.B}}{{end}}`, "single user message"},
		{"no options", "{{.Probe}}", "must show .A and .B"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := prompt.ParseFile(compint.ProbeSpec(), "probe.tmpl", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	tm, err := prompt.ParseFile(compint.ProbeSpec(), "probe.tmpl", []byte("Request: {{.Probe}}\nOption A: {{.A}}\nOption B: {{.B}}\nWhich one is right?"))
	if err != nil {
		t.Fatal(err)
	}
	s := sc(t, 2)
	ctx := []conv.Message{{Role: conv.User, Content: "earlier"}, {Role: conv.Assistant, Content: "ok"}, {Role: conv.User, Content: s.Probe}}
	msgs, q, err := compint.Prompts{Probe: tm}.ProbeMessages(ctx, s, compint.Compacted, "", compint.CompliantSecond)
	if err != nil {
		t.Fatal(err)
	}
	want := "Request: " + s.Probe + "\nOption A: " + s.Incorrect + "\nOption B: " + s.Correct + "\nWhich one is right?\n\nAnswer with the single letter A or B and nothing else."
	if got := msgs[len(msgs)-1].Content; got != want || q.Compliant != "B" {
		t.Errorf("probe turn\n%q\nwant\n%q (compliant %s)", got, want, q.Compliant)
	}
}

func TestUserRetentionTemplate(t *testing.T) {
	tm, err := prompt.ParseFile(compint.RetentionSpec(), "ret.tmpl", []byte("Is this instruction still there: {{.Constraint}}\n{{range .Context}}{{.Role}}: {{.Content}}\n{{end}}"))
	if err != nil {
		t.Fatal(err)
	}
	msgs, tg, err := compint.Prompts{Retention: tm}.RetentionMessages(sc(t, 15), []conv.Message{{Role: conv.User, Content: "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	last := msgs[len(msgs)-1].Content
	if !strings.HasPrefix(last, "Is this instruction still there:") || !strings.HasSuffix(last, tg.Open("retained")+"NO"+tg.Close("retained")) {
		t.Errorf("rendered:\n%s", last)
	}
	if ok, err := compint.ParseRetention(tg, tg.Open("retained")+"YES"+tg.Close("retained")); err != nil || !ok {
		t.Errorf("parse: %v %v", ok, err)
	}
	if _, err := prompt.ParseFile(compint.RetentionSpec(), "ret.tmpl", []byte("{{.Constraint}} {{range .Context}}{{.Content}}{{end}} {{.Open}}YES{{.Close}}")); err == nil || !strings.Contains(err.Error(), "answer's form") {
		t.Errorf("a retention template stating the form itself: %v", err)
	}
}
