package config

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/constraints"
)

// constraintsSection is stages.constraints, e.g.
//
//	constraints: {annotator: llm}                      # the form follows the mode
//	constraints: {annotator: llm, registry: parallel}  # every turn at once, online too
//	constraints: {annotator: llm, registry: sequential, prompts: {constraints: mine.tmpl}}
//
// registry is the llm annotator's form (constraints.Options.Registry):
// sequential, the paper's, asks the turns of a conversation one after
// another with the registry so far; parallel asks them all at once and
// builds the registry without a model. Unset, a run in batch mode uses
// parallel (the sequential form would take one batch round per user turn)
// and an online run sequential.
type constraintsSection struct {
	Annotator string            `yaml:"annotator"`
	Registry  string            `yaml:"registry"`
	Prompts   map[string]string `yaml:"prompts"` // read by loadPrompts
}

// constraintsOf reads stages.constraints: the annotator (as annotatorOf
// does) and the llm annotator's form ("" when unset).
func constraintsOf(n yaml.Node) (ann, registry string, err error) {
	const path = "stages.constraints"
	s, ok, err := decodeSection[constraintsSection](n, path)
	if err != nil || !ok {
		return "", "", err
	}
	switch s.Annotator {
	case "":
		ann = run.Heuristic
	case run.Heuristic, run.LLM:
		ann = s.Annotator
	default:
		return "", "", fmt.Errorf("%s.annotator: %q, want llm or heuristic", path, s.Annotator)
	}
	switch {
	case s.Registry == "":
	case !slices.Contains(constraints.Registries(), s.Registry):
		return "", "", fmt.Errorf("%s.registry: %q, want %s", path, s.Registry, strings.Join(constraints.Registries(), " or "))
	case ann != run.LLM:
		return "", "", fmt.Errorf("%s.registry: only the llm annotator has forms; set %s.annotator: llm, or remove registry", path, path)
	}
	return ann, s.Registry, nil
}

// withConstraintsForm puts the prompt of the llm annotator's form under
// the "constraints" name, which is the one the run gives the stage: the
// prompt's name chooses the form there (constraints.Options.Registry ""
// reads it from LLM.Template). With registry unset and no template, nothing
// is set and the stage follows the annotator role's mode. prompts is not
// modified; the result may be nil.
func withConstraintsForm(prompts map[string]*prompt.Template, registry string) (map[string]*prompt.Template, error) {
	const path = "stages.constraints.prompts"
	seq, par := prompts["constraints"], prompts[constraints.ParallelPromptName]
	var t *prompt.Template
	switch registry {
	case constraints.RegistryParallel:
		if seq != nil {
			return nil, fmt.Errorf("%s.constraints: that is the sequential form's prompt, and registry is parallel; give the template as %s.%s", path, path, constraints.ParallelPromptName)
		}
		t = cmp.Or(par, constraints.ParallelPrompt())
	case constraints.RegistrySequential:
		if par != nil {
			return nil, fmt.Errorf("%s.%s: that is the parallel form's prompt, and registry is sequential; give the template as %s.constraints", path, constraints.ParallelPromptName, path)
		}
		t = cmp.Or(seq, constraints.Prompt())
	default:
		if seq != nil && par != nil {
			return nil, fmt.Errorf("%s: templates for both forms; keep one, or set stages.constraints.registry", path)
		}
		t = cmp.Or(par, seq)
	}
	if t == nil {
		return prompts, nil
	}
	out := maps.Clone(prompts)
	if out == nil {
		out = map[string]*prompt.Template{}
	}
	delete(out, constraints.ParallelPromptName)
	out["constraints"] = t
	return out, nil
}
