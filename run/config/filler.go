package config

import (
	"fmt"
	"path/filepath"

	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/curate"
)

// fillerConfig is stages.curate.filler: the corpora the filler strategy
// draws from instead of ac3's neutral sentences (Huang et al. filled with
// Wikipedia passages, and with Python code on code-carryover turns):
//
//	filler:
//	  text_corpus: corpora/wikipedia.jsonl   # {"text": …} per line, or plain text with blank-line passages
//	  code_corpus: corpora/python.jsonl      # {"content": …} per line (the-stack's field) or {"text": …}
//	  code_when: code-messages               # never | code-messages (default with a code corpus) | always
//
// Paths are relative to the config's folder.
type fillerConfig struct {
	Filler *struct {
		TextCorpus string `yaml:"text_corpus"`
		CodeCorpus string `yaml:"code_corpus"`
		CodeWhen   string `yaml:"code_when"`
	}
}

func (f *fillerConfig) keys(known map[string]any) { known["filler"] = &f.Filler }

// apply loads the corpora (relative to base) and sets them on s.
func (f *fillerConfig) apply(s *run.AC3, base string) error {
	if f.Filler == nil {
		return nil
	}
	load := func(p string) (*curate.FillerCorpus, error) {
		if p == "" {
			return nil, nil
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		return curate.LoadFillerCorpus(p)
	}
	var o curate.FillerOptions
	var err error
	if o.Text, err = load(f.Filler.TextCorpus); err != nil {
		return fmt.Errorf("stages.curate.filler.text_corpus: %w", err)
	}
	if o.Code, err = load(f.Filler.CodeCorpus); err != nil {
		return fmt.Errorf("stages.curate.filler.code_corpus: %w", err)
	}
	o.CodeWhen = curate.CodeFiller(f.Filler.CodeWhen)
	if err := o.Validate(); err != nil {
		return fmt.Errorf("stages.curate.filler: %w", err)
	}
	s.Filler = o
	return nil
}
