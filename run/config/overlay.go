package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ac3/ac3/run"
)

// WithCurate returns cfg (nil: an empty file) with settings laid over its
// stages.curate, each named by its key path as the file spells it
// ("gated_reset.floor", "memory.regime", "replay"). The command line gives
// its curate flags this way, so a flag and the file's key are read by the
// one mapping in AC3 and checked the same way. cfg itself is not changed.
func WithCurate(cfg *File, settings map[string]any) (*File, error) {
	out := &File{}
	if cfg != nil {
		c := *cfg
		out = &c
	}
	cu := &curateConfig{}
	if out.Stages.Curate != nil {
		c := *out.Stages.Curate
		cu = &c
	}
	cu.Extra = maps.Clone(cu.Extra)
	if cu.Extra == nil {
		cu.Extra = map[string]yaml.Node{}
	}
	for _, path := range slices.Sorted(maps.Keys(settings)) {
		var value yaml.Node
		if err := value.Encode(settings[path]); err != nil {
			return nil, fmt.Errorf("stages.curate.%s: %w", path, err)
		}
		top, rest, nested := strings.Cut(path, ".")
		if !nested {
			cu.Extra[top] = value
			continue
		}
		section := cu.Extra[top]
		if section.Kind == 0 {
			section = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		} else if section.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("stages.curate.%s: the file gives %s a single value, not settings", path, top)
		}
		section.Content = setKey(slices.Clone(section.Content), rest, &value)
		cu.Extra[top] = section
	}
	out.Stages.Curate = cu
	return out, nil
}

// AC3WithFlags is the AC3 settings of cfg (nil: none) with settings laid
// over its stages.curate (WithCurate). flags maps the command-line flags
// that gave settings to their key paths: a setting refused on its own is
// reported under its flag, since the user typed a flag, not a key.
func AC3WithFlags(cfg *File, settings map[string]any, flags map[string]string) (run.AC3, error) {
	ac3 := func(cfg *File, settings map[string]any) (run.AC3, error) {
		f, err := WithCurate(cfg, settings)
		if err != nil {
			return run.AC3{}, err
		}
		return f.AC3()
	}
	s, err := ac3(cfg, settings)
	if err == nil {
		return s, nil
	}
	for _, flag := range slices.Sorted(maps.Keys(flags)) {
		v := settings[flags[flag]]
		if _, ferr := ac3(nil, map[string]any{flags[flag]: v}); ferr != nil {
			return s, fmt.Errorf("--%s %v: %w", flag, v, ferr)
		}
	}
	return s, err
}

// setKey sets key to v in a mapping node's content (key, value, key, …).
func setKey(content []*yaml.Node, key string, v *yaml.Node) []*yaml.Node {
	for i := 0; i+1 < len(content); i += 2 {
		if content[i].Value == key {
			content[i+1] = v
			return content
		}
	}
	return append(content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// ModelOverlay is what a stage command's flags change of the model
// settings: each zero value keeps what the file (or the environment) says.
type ModelOverlay struct {
	NoCache   bool
	BudgetUSD float64 // 0: the file's run.budget_usd
	Batch     bool    // every role through the batch API (WithBatch)
	// Unreachable replaces every endpoint's limits.unreachable when > 0.
	Unreachable time.Duration
}

// WithModel is the run's model settings from cfg (nil: the environment's
// endpoint) with o laid over them, so a command line and the file are read
// by Model alone.
func WithModel(cfg *File, getenv func(string) string, o ModelOverlay) run.Model {
	if o.BudgetUSD == 0 && cfg != nil {
		o.BudgetUSD = cfg.Run.BudgetUSD
	}
	m := WithBatch(Model(cfg, getenv, o.NoCache, o.BudgetUSD), o.Batch)
	if o.Unreachable > 0 && m.Options != nil {
		// A copy: the endpoints may be shared with the config.
		opts := *m.Options
		opts.Endpoints = slices.Clone(opts.Endpoints)
		for i := range opts.Endpoints {
			opts.Endpoints[i].Limits.Unreachable = o.Unreachable
		}
		m.Options = &opts
	}
	return m
}
