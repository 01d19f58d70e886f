package run

import (
	"fmt"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/prompt"
)

// prompter is a stage that renders prompts (the model-backed ones).
type prompter interface {
	Prompts() []*prompt.Template
}

// userPrompts describes the users' templates among the prompts st renders,
// one line each, so the run and the dry run say whose words are sent and
// under which version; none when st uses only the prompts ac3 ships.
func userPrompts(st pipeline.Stage) []string {
	p, ok := st.(prompter)
	if !ok {
		return nil
	}
	var out []string
	seen := map[*prompt.Template]bool{}
	for _, t := range p.Prompts() {
		if t == nil || t.File() == "" || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, fmt.Sprintf("prompt %s from %s (version %s; the answer's form is ac3's)", t.Name(), t.File(), t.Version()))
	}
	return out
}
