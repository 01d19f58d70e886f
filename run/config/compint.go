package config

import (
	"fmt"

	"github.com/ac3/ac3/run"
)

// compintConfig is stages.compint: the CompInt experiment.
type compintConfig struct {
	SCs            string   `yaml:"scs"`
	TargetTokens   int      `yaml:"target_tokens"`
	MaxContexts    int      `yaml:"max_contexts"`
	Locations      []string `yaml:"locations"`
	Framings       []string `yaml:"framings"`
	Repeat         int      `yaml:"repeat"`
	Strategies     []string `yaml:"strategies"`
	Orders         string   `yaml:"orders"`
	JudgeRole      string   `yaml:"judge_role"`
	ProbeRole      string   `yaml:"probe_role"`
	MinDenominator float64  `yaml:"min_denominator"`
	Encoding       string   `yaml:"encoding"`
	Parallel       *int     `yaml:"parallel"` // gone: refused
	// Prompts is read by loadPrompts.
	Prompts map[string]string `yaml:"prompts"`
}

// CompInt reads stages.compint (nil when absent). Unknown keys are errors:
// a misspelt setting would otherwise run the paper's default silently.
func (c *File) CompInt() (*run.CompInt, error) {
	n := c.Stages.CompInt
	if n.Kind == 0 {
		return nil, nil
	}
	var x compintConfig
	if err := decode(&n, &x, "stages.compint"); err != nil {
		return nil, err
	}
	switch {
	case x.TargetTokens < 0:
		return nil, fmt.Errorf("stages.compint.target_tokens: %d, want a positive length (the paper uses 100000)", x.TargetTokens)
	case x.MaxContexts < 0:
		return nil, fmt.Errorf("stages.compint.max_contexts: %d, want 0 (no cap) or more", x.MaxContexts)
	case x.MinDenominator < 0 || x.MinDenominator >= 1:
		return nil, fmt.Errorf("stages.compint.min_denominator: %v, want a share in [0, 1)", x.MinDenominator)
	case x.Parallel != nil:
		return nil, gone("stages.compint.parallel")
	}
	return &run.CompInt{SCs: x.SCs, TargetTokens: x.TargetTokens, MaxContexts: x.MaxContexts, Locations: x.Locations,
		Framings: x.Framings, Repeat: x.Repeat, Strategies: x.Strategies, Orders: x.Orders, JudgeRole: x.JudgeRole,
		ProbeRole: x.ProbeRole, MinDenominator: x.MinDenominator, Encoding: x.Encoding,
		Prompts: c.compintPrompts()}, nil
}
