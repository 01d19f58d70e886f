package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/classify"
	"github.com/ac3/ac3/stages/compint"
	"github.com/ac3/ac3/stages/constraints"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/lic/simulate"
	"github.com/ac3/ac3/stages/pollution"
)

// promptSpecs is, per stage section, the prompts a "prompts:" map may
// replace, under the names the config uses for them, e.g.
//
//	stages:
//	  classify:
//	    annotator: llm
//	    prompts: {classify: prompts/my-classify.tmpl}
//	  curate:
//	    prompts: {spec: prompts/my-spec.tmpl, reset: prompts/my-reset.tmpl}
//
// Under curate are the analyzer's prompts (analyze.PromptSpecs) and the
// operators' texts (curate.TextSpecs).
// respond has no prompt of its own: it sends the curated context as it is.
// lic.prompts takes the simulation's prompts (simulate.PromptSpecs) and,
// for the replay, curate's.
func promptSpecs() map[string]map[string]prompt.Spec {
	cur := map[string]prompt.Spec{}
	for _, s := range append(analyze.PromptSpecs(), curate.TextSpecs()...) {
		cur[s.Name] = s
	}
	lic := maps.Clone(cur)
	for _, s := range simulate.PromptSpecs() {
		lic[s.Name] = s
	}
	return map[string]map[string]prompt.Spec{
		"lic":         lic,
		"classify":    {"classify": classify.PromptSpec()},
		"constraints": {"constraints": constraints.PromptSpec(), constraints.ParallelPromptName: constraints.ParallelPromptSpec()},
		"pollution":   {"pollution": pollution.PromptSpec()},
		"curate":      cur,
		"judge":       {"pairwise": judge.PromptSpec()},
		"compint":     {"probe": compint.ProbeSpec(), "retention": compint.RetentionSpec()},
	}
}

// loadPrompts reads every template file the stage sections' "prompts:"
// maps name (relative to the config's folder) and checks it against the
// prompt it replaces, so a template that does not parse, uses a field its
// stage does not give it, states the answer's form itself or leaves out
// what the stage needs is refused at load, naming the file and line,
// before any model is called.
func (c *File) loadPrompts() error {
	c.prompts = map[string]map[string]*prompt.Template{}
	if n := childNode(&c.Stages.Refs, "prompts"); n != nil {
		return fmt.Errorf("line %d: stages.refs.prompts: refs come from the classify call; replace its prompt under stages.classify.prompts", n.Line)
	}
	if n := childNode(&c.Stages.Respond, "prompts"); n != nil {
		return fmt.Errorf("line %d: stages.respond.prompts: respond has no prompt of its own: it sends each curated context as it is", n.Line)
	}
	if n := childNode(childNode(&c.LiCSection, "operators"), "prompts"); n != nil {
		return fmt.Errorf("line %d: lic.operators.prompts: put the replay's prompts under lic.prompts", n.Line)
	}
	sections := map[string]*yaml.Node{
		"classify": &c.Stages.Classify, "constraints": &c.Stages.Constraints, "pollution": &c.Stages.Pollution,
		"judge": &c.Stages.Judge, "compint": &c.Stages.CompInt, "lic": &c.LiCSection,
	}
	specs := promptSpecs()
	for _, section := range slices.Sorted(maps.Keys(specs)) {
		var n *yaml.Node
		if section == "curate" {
			if c.Stages.Curate != nil {
				if v, ok := c.Stages.Curate.Extra["prompts"]; ok {
					n = &v
				}
			}
		} else {
			n = childNode(sections[section], "prompts")
		}
		if n == nil {
			continue
		}
		path := "stages." + section + ".prompts"
		if section == "lic" {
			path = "lic.prompts"
		}
		var files map[string]string
		if err := decode(n, &files, path); err != nil {
			return err
		}
		if section == "classify" || section == "constraints" {
			if a := childNode(sections[section], "annotator"); a == nil || a.Value != run.LLM {
				return fmt.Errorf("line %d: %s: the heuristic annotator sends no prompt; set stages.%s.annotator: llm to use these", n.Line, path, section)
			}
		}
		got := map[string]*prompt.Template{}
		for _, name := range slices.Sorted(maps.Keys(files)) {
			spec, ok := specs[section][name]
			line := keyLine(n, name)
			if !ok {
				return fmt.Errorf("line %d: %s.%s: no prompt of that name (known: %s)", line, path, name, strings.Join(slices.Sorted(maps.Keys(specs[section])), ", "))
			}
			file := files[name]
			if file == "" {
				return fmt.Errorf("line %d: %s.%s: give the template file's path", line, path, name)
			}
			if !filepath.IsAbs(file) {
				file = filepath.Join(c.base, file)
			}
			t, err := prompt.LoadFile(spec, file)
			if err != nil {
				return fmt.Errorf("line %d: %s.%s: %w", line, path, name, err)
			}
			got[name] = t
		}
		c.prompts[section] = got
	}
	return nil
}

// childNode is the value of key in mapping n, or nil.
func childNode(n *yaml.Node, key string) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// keyLine is the line of key in mapping n (n's own line when absent).
func keyLine(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i].Line
		}
	}
	return n.Line
}

// analyzerPrompts is the analyzer's prompts of section's prompts (curate,
// or lic for the replay), keyed as analyze.Options wants them (nil when
// there are none).
func (c *File) analyzerPrompts(section string) map[string]*prompt.Template {
	var out map[string]*prompt.Template
	for _, s := range analyze.PromptSpecs() {
		if t := c.prompts[section][s.Name]; t != nil {
			if out == nil {
				out = map[string]*prompt.Template{}
			}
			out[s.Name] = t
		}
	}
	return out
}

// curateTexts is the operators' texts of section's prompts (curate, or lic
// for the replay).
func (c *File) curateTexts(section string) curate.Texts {
	p := c.prompts[section]
	return curate.Texts{Reset: p["reset"], Augment: p["augment"], RewriteFrame: p["rewrite_frame"]}
}

// annotatePrompts is the annotators' replaced prompts, by prompt name.
func (c *File) annotatePrompts() map[string]*prompt.Template {
	out := map[string]*prompt.Template{}
	for _, s := range []string{"classify", "constraints", "pollution"} {
		maps.Copy(out, c.prompts[s])
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// compintPrompts is stages.compint.prompts as the stage takes them.
func (c *File) compintPrompts() compint.Prompts {
	p := c.prompts["compint"]
	return compint.Prompts{Probe: p["probe"], Retention: p["retention"]}
}

// licPrompts is lic.prompts as the simulation takes them.
func (c *File) licPrompts() simulate.Prompts {
	p := c.prompts["lic"]
	return simulate.Prompts{UserSim: p["user_sim"], Respondent: p["respondent"], FNCheck: p["fn_check"]}
}
