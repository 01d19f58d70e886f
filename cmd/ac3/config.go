package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// config is a whole run in one file. See fixtures/configs/ for examples and
// ac3.example.yaml in the design notes for the full shape.
type config struct {
	Run struct {
		DB        string  `yaml:"db"`
		Out       string  `yaml:"out"`
		Seed      int64   `yaml:"seed"`
		BudgetUSD float64 `yaml:"budget_usd"`
		Workers   int     `yaml:"workers"`
	} `yaml:"run"`
	Input struct {
		Files        []string `yaml:"files"`
		Format       string   `yaml:"format"`
		MaxLineBytes int      `yaml:"max_line_bytes"`
		Filter       struct {
			Language        []string `yaml:"language"`
			UnknownLanguage string   `yaml:"unknown_language"`
			UserTurns       struct {
				Min int `yaml:"min"`
				Max int `yaml:"max"`
			} `yaml:"user_turns"`
			Domains         []string `yaml:"domains"`
			DropToxic       bool     `yaml:"drop_toxic"`
			DropRedacted    bool     `yaml:"drop_redacted"`
			Dedupe          bool     `yaml:"dedupe"`
			MaxMessageBytes int      `yaml:"max_message_bytes"`
		} `yaml:"filter"`
	} `yaml:"input"`
	Stages struct {
		Curate *struct {
			FromTurn   int      `yaml:"from_turn"`
			Strategies []string `yaml:"strategies"`
			Encoding   string   `yaml:"encoding"`
		} `yaml:"curate"`
	} `yaml:"stages"`
	Export []exportSpec `yaml:"export"`
}

type exportSpec struct {
	What   string `yaml:"what"`
	Format string `yaml:"format"`
	Out    string `yaml:"out"`
}

// loadConfig reads a config file: defaults, then the file, then ${VAR} and
// ${VAR:-default} expansion from the environment (for secrets and paths),
// then validation. Relative paths are taken from the config file's folder.
func loadConfig(path string, getenv func(string) string) (*config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	var cfg config
	cfg.Input.Format = "auto"
	cfg.Input.MaxLineBytes = 64 << 20
	dec := yaml.NewDecoder(bytes.NewReader([]byte(expandEnv(string(raw), getenv))))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("reading config %s: %w", path, err)
	}
	base := filepath.Dir(path)
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	cfg.Run.DB, cfg.Run.Out = rel(cfg.Run.DB), rel(cfg.Run.Out)
	var files []string
	for _, f := range cfg.Input.Files {
		f = rel(f)
		matches, err := filepath.Glob(f)
		if err != nil || len(matches) == 0 {
			files = append(files, f) // reported as missing when opened
			continue
		}
		files = append(files, matches...)
	}
	cfg.Input.Files = files
	for i := range cfg.Export {
		cfg.Export[i].Out = rel(cfg.Export[i].Out)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return &cfg, nil
}

func (c *config) validate() error {
	if c.Run.DB == "" {
		return fmt.Errorf("run.db: required (the run file)")
	}
	if len(c.Export) > 0 && c.Run.Out == "" {
		for _, x := range c.Export {
			if x.Out == "" {
				return fmt.Errorf("run.out: required when an export has no out path")
			}
		}
	}
	for i, x := range c.Export {
		if _, err := exportKind(x.What, x.Format); err != nil {
			return fmt.Errorf("export[%d]: %w", i, err)
		}
	}
	if c.Stages.Curate != nil && len(c.Stages.Curate.Strategies) == 0 {
		return fmt.Errorf("stages.curate.strategies: list at least one strategy")
	}
	return nil
}

func (c *config) filterSettings() filterSettings {
	f := c.Input.Filter
	return filterSettings{
		Languages: f.Language, UnknownLanguage: f.UnknownLanguage,
		MinUserTurns: f.UserTurns.Min, MaxUserTurns: f.UserTurns.Max,
		Domains: f.Domains, DropToxic: f.DropToxic, DropRedacted: f.DropRedacted,
		Dedupe: f.Dedupe, MaxMessageBytes: f.MaxMessageBytes,
	}
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandEnv replaces ${VAR} and ${VAR:-default}. A bare $ is left alone, so
// prices and regexes in the file are not mangled.
func expandEnv(s string, getenv func(string) string) string {
	return envRef.ReplaceAllStringFunc(s, func(m string) string {
		sub := envRef.FindStringSubmatch(m)
		if v := getenv(sub[1]); v != "" {
			return v
		}
		return sub[3]
	})
}

func defaultOut(cfg *config, x exportSpec) string {
	if x.Out != "" {
		return x.Out
	}
	ext := x.Format
	if ext == "jsonl-zst" {
		ext = "jsonl.zst"
	}
	return filepath.Join(cfg.Run.Out, strings.ReplaceAll(x.What, " ", "_")+"."+ext)
}
