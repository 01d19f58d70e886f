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
	Stitch         string   `yaml:"stitch"`           // topic | sequential; default topic with an embedder role, else sequential
	EmbedMaxTokens int      `yaml:"embed_max_tokens"` // text embedded per conversation (default 8000)
	EmbedPool      int      `yaml:"embed_pool"`       // source conversations topic stitching draws from (default 50,000)
	UpperBound     string   `yaml:"upper_bound"`      // clean (the paper's C(H) ⊕ s, default) | injected (C(H_s) ⊕ s)
	Parallel       *int     `yaml:"parallel"`         // gone: refused
	// Prompts is read by loadPrompts.
	Prompts map[string]string `yaml:"prompts"`
}

// CompInt reads stages.compint (nil when absent, or c is nil). Unknown keys are errors:
// a misspelt setting would otherwise run the paper's default silently.
func (c *File) CompInt() (*run.CompInt, error) {
	if c == nil {
		return nil, nil
	}
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
	case x.EmbedPool < 0:
		return nil, fmt.Errorf("stages.compint.embed_pool: %d, want a positive number of conversations", x.EmbedPool)
	case x.EmbedMaxTokens < 0:
		return nil, fmt.Errorf("stages.compint.embed_max_tokens: %d, want a positive length", x.EmbedMaxTokens)
	case x.Stitch != "" && x.Stitch != "topic" && x.Stitch != "sequential":
		return nil, fmt.Errorf("stages.compint.stitch: %q, want topic (nearest neighbours over the embedder's embeddings, the paper's) or sequential (input order)", x.Stitch)
	case x.Stitch == "topic" && c.Roles["embedder"].Model == "":
		return nil, fmt.Errorf("stages.compint.stitch: topic needs the embedder role (roles.embedder: {model: …}); without one use sequential")
	case x.UpperBound != "" && x.UpperBound != "clean" && x.UpperBound != "injected":
		return nil, fmt.Errorf("stages.compint.upper_bound: %q, want clean (the paper's C(H) ⊕ s) or injected (C(H_s) ⊕ s)", x.UpperBound)
	}
	return &run.CompInt{SCs: x.SCs, TargetTokens: x.TargetTokens, MaxContexts: x.MaxContexts, Locations: x.Locations,
		Framings: x.Framings, Repeat: x.Repeat, Strategies: x.Strategies, Orders: x.Orders, JudgeRole: x.JudgeRole,
		ProbeRole: x.ProbeRole, MinDenominator: x.MinDenominator, Encoding: x.Encoding,
		Stitch: x.Stitch, EmbedMaxTokens: x.EmbedMaxTokens, EmbedPool: x.EmbedPool, UpperBound: x.UpperBound,
		Prompts: c.compintPrompts()}, nil
}
