package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

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
	Endpoints map[string]endpointConfig `yaml:"endpoints"`
	Models    map[string]modelConfig    `yaml:"models"`
	Roles     map[string]roleConfig     `yaml:"roles"`
	Stages    stagesConfig              `yaml:"stages"`
	Report    map[string]any            `yaml:"report"`
	Export    []exportSpec              `yaml:"export"`
}

// stagesConfig holds each stage's settings; a stage runs in `ac3 run` when
// its section is present. Sections for stages a later command owns are kept
// as YAML nodes and decoded there.
type stagesConfig struct {
	Curate *curateConfig `yaml:"curate"`
	// Model-backed stages decode their own sections; a zero Node (Kind 0)
	// means the section is absent. (yaml.v3 fills Node values, not pointers.)
	Classify    yaml.Node `yaml:"classify"`
	Refs        yaml.Node `yaml:"refs"`
	Constraints yaml.Node `yaml:"constraints"`
	Pollution   yaml.Node `yaml:"pollution"`
	Respond     yaml.Node `yaml:"respond"`
	Judge       yaml.Node `yaml:"judge"`
}

type curateConfig struct {
	FromTurn   int                  `yaml:"from_turn"`
	Strategies []string             `yaml:"strategies"`
	Encoding   string               `yaml:"encoding"`
	Extra      map[string]yaml.Node `yaml:",inline"` // AC3 operator settings, read by the AC3 strategies
}

// endpointConfig is one OpenAI-compatible server. The key is never in the
// file: api_key_env names the variable that holds it.
type endpointConfig struct {
	BaseURL        string            `yaml:"base_url"`
	APIKeyEnv      string            `yaml:"api_key_env"`
	APIKeyHeader   string            `yaml:"api_key_header"`
	Headers        map[string]string `yaml:"headers"`
	Query          map[string]string `yaml:"query"`
	MaxTokensField string            `yaml:"max_tokens_field"`
	JSONMode       string            `yaml:"json_mode"` // "", json_object, json_schema
	Timeout        string            `yaml:"timeout"`   // per attempt, e.g. 120s
	MaxAttempts    int               `yaml:"max_attempts"`
	Limits         struct {
		Concurrency int `yaml:"concurrency"`
		RPM         int `yaml:"rpm"`
		TPM         int `yaml:"tpm"`
	} `yaml:"limits"`
}

// modelConfig is a model served by an endpoint, with its price per million
// tokens. Limits apply per model entry, as providers enforce them per model.
type modelConfig struct {
	Endpoint string `yaml:"endpoint"`
	Name     string `yaml:"name"` // the model id sent to the server; the entry's key when empty
	Price    struct {
		Input  float64 `yaml:"input"`
		Cached float64 `yaml:"cached"`
		Output float64 `yaml:"output"`
	} `yaml:"price"`
	Limits *struct {
		Concurrency int `yaml:"concurrency"`
		RPM         int `yaml:"rpm"`
		TPM         int `yaml:"tpm"`
	} `yaml:"limits"`
}

// roleConfig binds a role (annotator, analyzer, respondent, judge) to a model
// with sampling parameters.
type roleConfig struct {
	Model           string         `yaml:"model"`
	Temperature     *float64       `yaml:"temperature"`
	TopP            *float64       `yaml:"top_p"`
	MaxTokens       *int           `yaml:"max_tokens"`
	Seed            *int64         `yaml:"seed"`
	Stop            []string       `yaml:"stop"`
	ReasoningEffort string         `yaml:"reasoning_effort"`
	Extra           map[string]any `yaml:"extra"`
	Samples         int            `yaml:"samples"`
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
	for name, m := range c.Models {
		if _, ok := c.Endpoints[m.Endpoint]; !ok {
			return fmt.Errorf("models.%s.endpoint: no endpoint named %q", name, m.Endpoint)
		}
	}
	for name, r := range c.Roles {
		if _, ok := c.Models[r.Model]; !ok {
			return fmt.Errorf("roles.%s.model: no model named %q under models", name, r.Model)
		}
	}
	for name, ep := range c.Endpoints {
		if ep.BaseURL == "" {
			return fmt.Errorf("endpoints.%s.base_url: required", name)
		}
		if ep.Timeout != "" {
			if _, err := time.ParseDuration(ep.Timeout); err != nil {
				return fmt.Errorf("endpoints.%s.timeout: %w", name, err)
			}
		}
		switch ep.JSONMode {
		case "", "json_object", "json_schema":
		default:
			return fmt.Errorf("endpoints.%s.json_mode: %q is not one of json_object, json_schema", name, ep.JSONMode)
		}
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
