package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/curate"
)

// compactConfig is the part of stages.curate that configures the
// compactors (recent-n, llm-compact, extract-sc, plugin=NAME), e.g.
//
//	recent_n: {n: 5}                      # N of a bare recent-n (default 5)
//	llm_compact:
//	  prompt_file: prompts/anthropic.txt  # default: ours
//	  history: transcript                 # or messages; how H^t is sent when the prompt has no {{.Transcript}}
//	  role: compactor                     # default: the analyzer's role
//	  prompts: {pi-mono: prompts/pi-mono.txt}   # llm-compact=pi-mono
//	plugins:
//	  lingua: {command: [python3, lingua2.py], timeout: 2m, settings: {target_token: 500}, version: "1"}
//	  remote: {url: "http://localhost:8400/compact", retries: 3}
//
// Paths are relative to the config's folder, where commands also run.
type compactConfig struct {
	RecentN *struct {
		N int `yaml:"n"`
	}
	LLMCompact *struct {
		PromptFile string            `yaml:"prompt_file"`
		History    string            `yaml:"history"`
		Role       string            `yaml:"role"`
		Prompts    map[string]string `yaml:"prompts"`
	}
	Plugins map[string]*struct {
		Command  []string       `yaml:"command"`
		URL      string         `yaml:"url"`
		Timeout  time.Duration  `yaml:"timeout"`
		Retries  int            `yaml:"retries"`
		Settings map[string]any `yaml:"settings"`
		Version  string         `yaml:"version"`
	}
}

// keys adds the compactors' keys to known, the map of stages.curate's keys.
func (k *compactConfig) keys(known map[string]any) {
	known["recent_n"] = &k.RecentN
	known["llm_compact"] = &k.LLMCompact
	known["plugins"] = &k.Plugins
}

// apply checks the settings, loads the prompt files (relative to base) and
// sets them on s.
func (k *compactConfig) apply(s *run.AC3, base string) error {
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	if k.RecentN != nil {
		if k.RecentN.N < 1 {
			return fmt.Errorf("stages.curate.recent_n.n: %d, want 1 or more (messages kept)", k.RecentN.N)
		}
		s.Compact.RecentN = k.RecentN.N
	}
	if lc := k.LLMCompact; lc != nil {
		h, err := curate.ParseHistory(lc.History)
		if err != nil {
			return fmt.Errorf("stages.curate.llm_compact.%w", err)
		}
		s.Compact.History, s.Compact.Role = h, lc.Role
		if lc.PromptFile != "" {
			if s.Compact.Prompt, err = prompt.LoadFile(curate.CompactPromptSpec, rel(lc.PromptFile)); err != nil {
				return fmt.Errorf("stages.curate.llm_compact.prompt_file: %w", err)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(lc.Prompts)) {
			if err := checkArgName(name); err != nil {
				return fmt.Errorf("stages.curate.llm_compact.prompts.%s: %w", name, err)
			}
			t, err := prompt.LoadFile(curate.CompactPromptSpec, rel(lc.Prompts[name]))
			if err != nil {
				return fmt.Errorf("stages.curate.llm_compact.prompts.%s: %w", name, err)
			}
			if s.Compact.Prompts == nil {
				s.Compact.Prompts = map[string]*prompt.Template{}
			}
			s.Compact.Prompts[name] = t
		}
	}
	for _, name := range slices.Sorted(maps.Keys(k.Plugins)) {
		p := k.Plugins[name]
		path := "stages.curate.plugins." + name
		if err := checkArgName(name); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if p == nil || (len(p.Command) == 0) == (p.URL == "") {
			return fmt.Errorf("%s: give exactly one of command (a program and its arguments) and url", path)
		}
		if p.Timeout < 0 {
			return fmt.Errorf("%s.timeout: %s, want a positive duration such as 2m", path, p.Timeout)
		}
		cmd := slices.Clone(p.Command)
		if len(cmd) > 0 && strings.ContainsRune(cmd[0], filepath.Separator) {
			cmd[0] = rel(cmd[0])
		}
		if s.Compact.Plugins == nil {
			s.Compact.Plugins = map[string]curate.Plugin{}
		}
		s.Compact.Plugins[name] = curate.Plugin{Command: cmd, Dir: base, URL: p.URL, Timeout: p.Timeout, Retries: p.Retries,
			Settings: p.Settings, Version: p.Version}
	}
	return nil
}

// checkArgName checks a name that follows "=" in a strategy LIST item.
func checkArgName(name string) error {
	if name == "" || strings.ContainsAny(name, ",+:/= \t") {
		return fmt.Errorf("the name %q is written into strategy names (plugin=NAME, llm-compact=NAME): use letters, digits, '-', '_' or '.'", name)
	}
	return nil
}
