package config

import (
	"fmt"

	"gopkg.in/yaml.v3"

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
//	ao: huang                  # Huang et al.'s placeholder and note (curate.HuangAO)
//	ao: {placeholder: "[Response provided]", note: "..."}   # or any of one's own
//	reset_template: wildchat   # ac3 (default) | wildchat
//	rewrite_variant: paper     # ac3 (default) | paper
//	replay: prefix             # continue (default) | prefix
//	sum_variant: paper         # ac3 (default) | paper
//
// Each non-default value changes the versions of the strategies it
// affects, so their units are keyed apart from the defaults'.
type fidelityConfig struct {
	// AO is read in apply: the scalar huang, or {placeholder, note}.
	AO            yaml.Node
	ResetTemplate string
	Rewrite       string
	Replay        string
	SumVariant    string
}

// keys adds the fidelity keys to known, the map of stages.curate's keys.
func (f *fidelityConfig) keys(known map[string]any) {
	known["ao"] = &f.AO
	known["reset_template"] = &f.ResetTemplate
	known["rewrite_variant"] = &f.Rewrite
	known["replay"] = &f.Replay
	known["sum_variant"] = &f.SumVariant
}

// apply checks the settings and sets them on s.
func (f *fidelityConfig) apply(s *run.AC3) error {
	switch {
	case f.AO.Kind == yaml.ScalarNode && f.AO.Value == "huang":
		s.AO = curate.HuangAO()
	case f.AO.Kind == yaml.ScalarNode:
		return fmt.Errorf("line %d: stages.curate.ao: %q, want huang (Huang et al.'s placeholder and note) or {placeholder, note}", f.AO.Line, f.AO.Value)
	case f.AO.Kind != 0:
		var ao struct {
			Placeholder string `yaml:"placeholder"`
			Note        string `yaml:"note"`
		}
		if err := decode(&f.AO, &ao, "stages.curate.ao"); err != nil {
			return err
		}
		s.AO = curate.AOOptions{Placeholder: ao.Placeholder, Note: ao.Note}
	}
	if f.AO.Kind != 0 {
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
	if s.Sum, err = curate.ParseSumForm(f.SumVariant); err != nil {
		return fmt.Errorf("stages.curate.sum_variant: %w", err)
	}
	return nil
}
