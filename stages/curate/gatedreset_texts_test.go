package curate_test

import (
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/curate"
)

func textSpec(t *testing.T, name string) prompt.Spec {
	t.Helper()
	for _, s := range curate.TextSpecs() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no text %q", name)
	return prompt.Spec{}
}

func text(t *testing.T, name, body string) *prompt.Template {
	t.Helper()
	tm, err := prompt.ParseFile(textSpec(t, name), name+".tmpl", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// The operators put a user's texts where ours would go, and their versions
// change with the texts' bytes.
func TestUserTextsReplaceTheOperatorsTexts(t *testing.T) {
	f := newFixture(t, analyzetest.Script{
		Spec:    func(int) string { return "a Go Sum returning int64" },
		Aligned: func(int) string { return "the loop" },
		Issues:  issuesAt(3),
		Rewrite: func(int) string { return "the briefing" },
	})
	c := sevenTurns()
	texts := curate.Texts{
		Reset:        text(t, "reset", "Start over. Wanted: {{.Spec}}. Keep: {{.Aligned}}."),
		Augment:      text(t, "augment", "Reviewer: {{.Spec}} / {{.Issues}}"),
		RewriteFrame: text(t, "rewrite_frame", "Briefing follows.\n{{.Briefing}}"),
	}
	tests := []struct{ op, want string }{
		{"reset", "Start over. Wanted: a Go Sum returning int64. Keep: the loop."},
		{"augment", "Reviewer: a Go Sum returning int64 / problem at turn 3"},
		{"rewrite", "Briefing follows.\nthe briefing"},
	}
	for _, tc := range tests {
		t.Run(tc.op, func(t *testing.T) {
			ours := strategy(t, tc.op, curate.Options{Analyzer: f.an})
			mine := strategy(t, tc.op, curate.Options{Analyzer: f.an, Texts: texts})
			if ours.Version() == mine.Version() || !strings.Contains(mine.Version(), ";text="+tc.op) || !strings.Contains(mine.Version(), "@user+") {
				t.Errorf("version %q (ours %q)", mine.Version(), ours.Version())
			}
			xs := curateAll(t, mine, c, 3)
			all := string(formatMessages(xs[0].Materialize(c)))
			if !strings.Contains(all, tc.want) || strings.Contains(all, "[Context reset]") || strings.Contains(all, "[Review of the conversation") || strings.Contains(all, "[Context rewritten]") {
				t.Errorf("turn 3 context:\n%s", all)
			}
		})
	}
	edited := curate.Texts{Reset: text(t, "reset", "Start over! Wanted: {{.Spec}}.")}
	a := strategy(t, "gated-reset", curate.Options{Analyzer: f.an, Texts: texts}).Version()
	b := strategy(t, "gated-reset", curate.Options{Analyzer: f.an, Texts: edited}).Version()
	if a == b {
		t.Error("another reset text kept the version")
	}
}

func TestUserTextsAreRefusedWhereTheyDoNotApply(t *testing.T) {
	f := newFixture(t, analyzetest.Script{})
	tests := []struct {
		name string
		opts curate.Options
		op   string
	}{
		{"reset text with the wildchat form", curate.Options{ResetTemplate: curate.ResetWildChat, Texts: curate.Texts{Reset: text(t, "reset", "{{.Spec}}")}}, "reset"},
		{"rewrite frame with the paper's rewrite", curate.Options{Rewrite: analyze.RewritePaper, Texts: curate.Texts{RewriteFrame: text(t, "rewrite_frame", "{{.Briefing}}")}}, "rewrite"},
		{"a text in the wrong slot", curate.Options{Texts: curate.Texts{Augment: text(t, "reset", "{{.Spec}}")}}, "augment"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Analyzer = f.an
			if _, err := curate.ByName(tc.op, tc.opts); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if _, err := prompt.ParseFile(textSpec(t, "reset"), "r.tmpl", []byte("{{.Issues}} {{.Spec}}")); err == nil || !strings.Contains(err.Error(), "no field .Issues") {
		t.Errorf("a reset text reading the issues, which the reset drops: %v", err)
	}
}
