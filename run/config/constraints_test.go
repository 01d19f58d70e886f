package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/constraints"
)

// stages.constraints.registry reaches the stage as the prompt of its form,
// the one the run hands the constraints stage, and the stage built with it
// runs that form.
func TestConstraintsRegistry(t *testing.T) {
	dir := t.TempDir()
	seqFile, parFile := filepath.Join(dir, "seq.tmpl"), filepath.Join(dir, "par.tmpl")
	for p, body := range map[string]string{
		seqFile: "Registry:{{range .Registry}} {{.Text}}{{end}}\nMessage: {{.User}}",
		parFile: "Earlier:{{range .Earlier}} {{.Text}}{{end}}\nMessage: {{.User}}",
	} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, section string
		prompt        string // name of the template handed to the stage; "" none
		user          bool   // it is the user's file
		form          string // the stage's form online
		err           string
	}{
		{"unset", "{annotator: llm}", "", false, constraints.RegistrySequential, ""},
		{"parallel", "{annotator: llm, registry: parallel}", constraints.ParallelPromptName, false, constraints.RegistryParallel, ""},
		{"sequential", "{annotator: llm, registry: sequential}", "constraints", false, constraints.RegistrySequential, ""},
		{"a parallel template", "{annotator: llm, prompts: {constraints_parallel: " + parFile + "}}", constraints.ParallelPromptName, true, constraints.RegistryParallel, ""},
		{"a parallel template, parallel", "{annotator: llm, registry: parallel, prompts: {constraints_parallel: " + parFile + "}}", constraints.ParallelPromptName, true, constraints.RegistryParallel, ""},
		{"a sequential template", "{annotator: llm, prompts: {constraints: " + seqFile + "}}", "constraints", true, constraints.RegistrySequential, ""},
		{"unknown form", "{annotator: llm, registry: rolling}", "", false, "", `stages.constraints.registry: "rolling", want sequential or parallel`},
		{"the heuristic has no form", "{annotator: heuristic, registry: parallel}", "", false, "", "stages.constraints.registry: only the llm annotator"},
		{"the other form's template", "{annotator: llm, registry: parallel, prompts: {constraints: " + seqFile + "}}", "", false, "", "stages.constraints.prompts.constraints: that is the sequential form's prompt"},
		{"both templates", "{annotator: llm, prompts: {constraints: " + seqFile + ", constraints_parallel: " + parFile + "}}", "", false, "", "templates for both forms"},
		{"a sequential template for the parallel prompt", "{annotator: llm, prompts: {constraints_parallel: " + seqFile + "}}", "", false, "", "the constraints_parallel prompt does not get .Registry"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := annotateSection(writeConfig(t, "x.db", "  constraints: "+tc.section))
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			tm := a.Prompts["constraints"]
			switch {
			case tc.prompt == "" && tm != nil:
				t.Errorf("template %s handed to the stage, want none", tm.Name())
			case tc.prompt != "" && (tm == nil || tm.Name() != tc.prompt || (tm.File() != "") != tc.user):
				t.Errorf("template %v, want %s (user's: %v)", tm, tc.prompt, tc.user)
			}
			if _, ok := a.Prompts[constraints.ParallelPromptName]; ok {
				t.Error("the parallel template is also under its own name")
			}
			st, err := constraints.NewStage(constraints.Options{LLM: &constraints.LLM{Template: tm}})
			if err != nil || st.Registry() != tc.form {
				t.Errorf("stage form %q (%v), want %q", st.Registry(), err, tc.form)
			}
		})
	}
}

// annotateSection loads the config at path and reads its annotate stages.
func annotateSection(path string) (run.Annotate, error) {
	cfg, err := Load(path, func(string) string { return "" })
	if err != nil {
		return run.Annotate{}, err
	}
	a, _, err := cfg.Annotate()
	return a, err
}
