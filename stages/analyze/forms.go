package analyze

import (
	"github.com/ac3/ac3/pipeline/llm/parse"
)

// The fields of each call's answer, declared once: the prompt's layout (tags
// or JSON), the parser and the strict schema all come from these (see
// parse.Sections). The hints are what the prompt shows where the text goes.

func specForm() parse.Sections {
	return parse.Sections{Name: "spec", Fields: []parse.Field{{Name: "spec", Hint: "...the specification..."}}}
}

func evaluateForm() parse.Sections {
	return parse.Sections{Name: "evaluation", Fields: []parse.Field{
		{Name: "aligned", Hint: "...what fits the specification..."},
		{Name: "issues", Hint: "...problems, or None..."},
	}}
}

func singlePassForm() parse.Sections {
	return parse.Sections{Name: "analysis", Fields: []parse.Field{
		{Name: "spec", Hint: "..."}, {Name: "aligned", Hint: "..."}, {Name: "issues", Hint: "..."},
	}}
}

func contextForm() parse.Sections {
	return parse.Sections{Name: "context", Fields: []parse.Field{{Name: "context", Hint: "..."}}}
}

// earlierForm is the earlier rewrite prompt's two sections.
func earlierForm() parse.Sections {
	return parse.Sections{Name: "rewrite", Fields: []parse.Field{{Name: "task_spec", Hint: "1) ..."}, {Name: "verified_work", Hint: "..."}}}
}

func summaryForm() parse.Sections {
	return parse.Sections{Name: "summary", Fields: []parse.Field{{Name: "summary", Hint: "..."}}}
}

func takeawaysForm() parse.Sections {
	return parse.Sections{Name: "takeaways", Fields: []parse.Field{{Name: "takeaways", Hint: "..."}}}
}

func cheatsheetForm() parse.Sections {
	return parse.Sections{Name: "cheatsheet", Fields: []parse.Field{{Name: "cheatsheet", Hint: "..."}}}
}

// answer binds form to the analyzer's output and to the prompt's tagger.
func (a *Analyzer) answer(form parse.Sections, tg parse.Tagger) parse.Answer {
	return parse.Answer{Form: form, Output: a.out, Tagger: tg}
}

// outputSuffix is what the output adds to a version: nothing for tags (so
// versions read as before), ";output=json_schema" otherwise.
func (a *Analyzer) outputSuffix() string {
	if a.out == parse.Tags || a.out == "" {
		return ""
	}
	return ";output=" + string(a.out)
}
