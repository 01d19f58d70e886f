package config

import (
	"fmt"

	"github.com/ac3/ac3/run"
)

// pollutionConfig is stages.pollution:
//
//	pollution:
//	  on: [dataset, generated]   # default [dataset]
//	  strategies: [fc, filler]   # generated: respond variants to review (default all)
//	  samples: 1                 # generated: samples per reply to review (default all)
//
// "dataset" reviews the conversations' own assistant replies in the
// annotate step; "generated" reviews the replies respond wrote, per
// strategy, after respond (Huang et al.'s Table 1); with filler among
// the strategies its replies are the paper's filler-history baseline,
// regenerated on the same turns.
type pollutionConfig struct {
	On         []string `yaml:"on"`
	Strategies []string `yaml:"strategies"`
	Samples    int      `yaml:"samples"`
	// Prompts is read by loadPrompts.
	Prompts map[string]string `yaml:"prompts"`

	dataset, generated bool
}

// pollutionSection reads and checks stages.pollution; ok is false when
// the section is absent.
func (c *File) pollutionSection() (p pollutionConfig, ok bool, err error) {
	p, ok, err = decodeSection[pollutionConfig](c.Stages.Pollution, "stages.pollution")
	if err != nil || !ok {
		return p, ok, err
	}
	if len(p.On) == 0 {
		p.On = []string{"dataset"}
	}
	var bad string
	if p.dataset, p.generated, bad = run.PollutionTargets(p.On); bad != "" {
		return p, ok, fmt.Errorf("stages.pollution.on: %q, want dataset or generated", bad)
	}
	if p.Samples < 0 {
		return p, ok, fmt.Errorf("stages.pollution.samples: %d, want 0 (all) or more", p.Samples)
	}
	if !p.generated && (len(p.Strategies) > 0 || p.Samples > 0) {
		return p, ok, fmt.Errorf("stages.pollution: strategies and samples choose generated replies to review; add generated to on")
	}
	return p, ok, nil
}

// Replies reads the review of generated replies from stages.pollution (nil
// when on does not list generated).
func (c *File) Replies() (*run.ReviewReplies, error) {
	p, ok, err := c.pollutionSection()
	if err != nil || !ok || !p.generated {
		return nil, err
	}
	return &run.ReviewReplies{Strategies: p.Strategies, Samples: p.Samples, Dataset: p.dataset, Workers: c.Run.Workers,
		Prompt: c.prompts["pollution"]["pollution"]}, nil
}
