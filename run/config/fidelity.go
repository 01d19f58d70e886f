package config

import (
	"fmt"

	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate"
)

// fidelityConfig is the part of stages.curate that says which form the
// strategies give what they write — the strings of ao, the reset
// template, the rewrite prompt, the replay of later turns — so a config
// can follow a paper's setting exactly (fixtures/configs/ has one config
// per paper setting):
//
//	ao: {placeholder: "[Response provided]", note: "In this conversation, ..."}
//	reset_template: wildchat   # ac3 (default) | wildchat
//	rewrite_variant: paper     # ac3 (default) | paper
//	replay: prefix             # continue (default) | prefix
//
// Each non-default value changes the versions of the strategies it
// affects, so their units are keyed apart from the defaults'.
type fidelityConfig struct {
	AO *struct {
		Placeholder string `yaml:"placeholder"`
		Note        string `yaml:"note"`
	}
	ResetTemplate string
	Rewrite       string
	Replay        string
}

// keys adds the fidelity keys to known, the map of stages.curate's keys.
func (f *fidelityConfig) keys(known map[string]any) {
	known["ao"] = &f.AO
	known["reset_template"] = &f.ResetTemplate
	known["rewrite_variant"] = &f.Rewrite
	known["replay"] = &f.Replay
}

// apply checks the settings and sets them on s.
func (f *fidelityConfig) apply(s *run.AC3) error {
	if f.AO != nil {
		s.AO = curate.AOOptions{Placeholder: f.AO.Placeholder, Note: f.AO.Note}
		if err := s.AO.Validate(); err != nil {
			return fmt.Errorf("stages.curate.ao: %w", err)
		}
	}
	var err error
	if s.ResetTemplate, err = curate.ParseResetTemplate(f.ResetTemplate); err != nil {
		return fmt.Errorf("stages.curate.reset_template: %w", err)
	}
	if s.Rewrite, err = analyze.ParseRewriteVariant(f.Rewrite); err != nil {
		return fmt.Errorf("stages.curate.rewrite_variant: %w", err)
	}
	if s.Replay, err = curate.ParseReplay(f.Replay); err != nil {
		return fmt.Errorf("stages.curate.replay: %w", err)
	}
	return nil
}
