// Package config reads ac3's config file — one YAML file for a whole run:
// the run file, inputs and filters, endpoints, models and roles, each
// stage's settings, the report and the exports — and turns it into a
// run.Plan. Defaults come first, then the file, then ${VAR} and
// ${VAR:-default} from the environment (secrets and paths), then checks
// whose errors name the key. The file format lives here, not in the run
// library, which takes plain option structs.
package config

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/run/report"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
)

// File is a whole run in one file. See fixtures/configs/ for examples and
// ac3.example.yaml in the design notes for the full shape.
type File struct {
	Run struct {
		DB        string  `yaml:"db"`
		Out       string  `yaml:"out"`
		Seed      int64   `yaml:"seed"`
		BudgetUSD float64 `yaml:"budget_usd"`
		Workers   int     `yaml:"workers"`
		// Window is a setting that is gone (see checkRun).
		Window *int `yaml:"window"`
		// ShardLimits is how shards share the endpoints' limits and the
		// budget: divide (the default) or whole (see run.ShardLimitsDivide).
		ShardLimits string `yaml:"shard_limits"`
	} `yaml:"run"`
	Input struct {
		Files        []string `yaml:"files"`
		Format       string   `yaml:"format"`
		MaxLineBytes int      `yaml:"max_line_bytes"`
		Filter       struct {
			Language         []string `yaml:"language"`
			UnknownLanguage  string   `yaml:"unknown_language"`
			IdentifyLanguage string   `yaml:"identify_language"`
			UserTurns        struct {
				Min int `yaml:"min"`
				Max int `yaml:"max"`
			} `yaml:"user_turns"`
			Domains         []string `yaml:"domains"`
			DropToxic       bool     `yaml:"drop_toxic"`
			DropRedacted    bool     `yaml:"drop_redacted"`
			Dedupe          dedupe   `yaml:"dedupe"` // true (exact), near or false
			NearThreshold   float64  `yaml:"near_threshold"`
			NearShingle     int      `yaml:"near_shingle"`
			MaxMessageBytes int      `yaml:"max_message_bytes"`
		} `yaml:"filter"`
	} `yaml:"input"`
	Endpoints     map[string]endpointConfig `yaml:"endpoints"`
	Models        map[string]modelConfig    `yaml:"models"`
	Roles         map[string]roleConfig     `yaml:"roles"`
	Stages        stagesConfig              `yaml:"stages"`
	ReportSection yaml.Node                 `yaml:"report"`
	Export        []exportSpec              `yaml:"export"`
	Batch         batchConfig               `yaml:"batch"`
	// LiCSection is the LiC replay experiment (lic.go); base is the
	// config file's folder, for its relative paths.
	LiCSection yaml.Node `yaml:"lic"`
	base       string
	path       string // the file, named in errors found after Load
	// prompts are the users' templates the stage sections' "prompts:"
	// maps name, checked at load (prompts.go), by section and name.
	prompts map[string]map[string]*prompt.Template
}

// inFile names the config file in an error found in one of its sections.
func (c *File) inFile(err error) error {
	if err == nil || c.path == "" {
		return err
	}
	return fmt.Errorf("config %s: %w", c.path, err)
}

// stagesConfig holds each stage's settings; a stage runs in `ac3 run` when
// its section is present. A zero yaml.Node (Kind 0) is an absent section;
// each is decoded when used (yaml.v3 fills Node values, not pointers).
type stagesConfig struct {
	Curate      *curateConfig `yaml:"curate"`
	Classify    yaml.Node     `yaml:"classify"`
	Refs        yaml.Node     `yaml:"refs"`
	Constraints yaml.Node     `yaml:"constraints"`
	Pollution   yaml.Node     `yaml:"pollution"`
	Respond     yaml.Node     `yaml:"respond"`
	Judge       yaml.Node     `yaml:"judge"`
	CompInt     yaml.Node     `yaml:"compint"`
}

type curateConfig struct {
	FromTurn   int                  `yaml:"from_turn"`
	Strategies []string             `yaml:"strategies"`
	Encoding   string               `yaml:"encoding"`
	On         []string             `yaml:"on"`         // origins curated (source, compint, …); empty: all
	LastTurns  int                  `yaml:"last_turns"` // curate only the last K user turns; 0: all
	Extra      map[string]yaml.Node `yaml:",inline"`    // AC3 operator settings (ac3Config)
}

// endpointConfig is one OpenAI-compatible server. The key is never in the
// file: api_key_env names the variable that holds it, and a command that
// calls the endpoint refuses to start while that variable is unset or
// empty. An endpoint without api_key_env needs no key (see keys.go).
type endpointConfig struct {
	BaseURL        string            `yaml:"base_url"`
	APIKeyEnv      string            `yaml:"api_key_env"`
	keyLine        int               // the line of api_key_env, for errors; 0 when unknown
	APIKeyHeader   string            `yaml:"api_key_header"`
	Headers        map[string]string `yaml:"headers"`
	Query          map[string]string `yaml:"query"`
	MaxTokensField string            `yaml:"max_tokens_field"`
	JSONMode       string            `yaml:"json_mode"` // "", json_object, json_schema
	Kind           string            `yaml:"kind"`      // openai, azure, vllm, llamacpp, ollama, openrouter, other (see output.go)
	Output         string            `yaml:"output"`    // tags | json_schema; default from kind
	Timeout        string            `yaml:"timeout"`   // per attempt, e.g. 120s
	MaxAttempts    int               `yaml:"max_attempts"`
	Limits         limitsConfig      `yaml:"limits"`
	Mode           string            `yaml:"mode"` // online (default) or batch
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
		Batch  float64 `yaml:"batch"` // share of the price a batch request pays; default 0.5
	} `yaml:"price"`
	Limits *limitsConfig `yaml:"limits"`
	Output string        `yaml:"output"` // tags | json_schema; default: the endpoint's
}

// roleConfig binds a role (annotator, analyzer, respondent, judge) to a model
// with sampling parameters. The embedder role (llm.EmbedderRole) binds an
// embedding model served at /v1/embeddings; of the sampling keys only extra
// is sent (e.g. dimensions), and inputs is how many texts one request
// carries.
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
	Mode            string         `yaml:"mode"`   // online or batch; default the endpoint's
	Inputs          int            `yaml:"inputs"` // embedder only: texts per request (default llm.DefaultEmbedInputs)
}

type exportSpec struct {
	What   string `yaml:"what"`
	Format string `yaml:"format"`
	Out    string `yaml:"out"`
}

// Load reads a config file: defaults, then the file, then ${VAR} and
// ${VAR:-default} expansion from the environment (for secrets and paths),
// then validation. Relative paths are taken from the config file's folder.
func Load(path string, getenv func(string) string) (*File, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return load(raw, path, getenv)
}

// load is Load on a file's bytes.
func load(raw []byte, path string, getenv func(string) string) (*File, error) {
	var cfg File
	cfg.Input.Format = "auto"
	cfg.Input.MaxLineBytes = 64 << 20
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(expandEnv(string(raw), getenv)), &doc); err != nil {
		return nil, fmt.Errorf("reading config %s: %w", path, err)
	}
	if doc.Kind == 0 {
		return nil, fmt.Errorf("reading config %s: the file is empty", path)
	}
	if err := decode(&doc, &cfg, ""); err != nil {
		return nil, fmt.Errorf("reading config %s: %w", path, err)
	}
	if err := checkBudget(&doc, cfg.Run.BudgetUSD); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	base := filepath.Dir(path)
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	cfg.Run.DB, cfg.Run.Out = rel(cfg.Run.DB), rel(cfg.Run.Out)
	cfg.base, cfg.path = base, path
	var files []string
	for _, f := range cfg.Input.Files {
		matches, err := filepath.Glob(rel(f))
		if err != nil || len(matches) == 0 {
			files = append(files, rel(f)) // reported as missing when opened
			continue
		}
		files = append(files, matches...)
	}
	cfg.Input.Files = files
	cfg.keyLines(&doc)
	for i := range cfg.Export {
		cfg.Export[i].Out = rel(cfg.Export[i].Out)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if err := cfg.loadPrompts(); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return &cfg, nil
}

func (c *File) validate() error {
	if c.Run.DB == "" {
		return fmt.Errorf("run.db: required (the run file)")
	}
	for i, x := range c.Export {
		if x.Out == "" && c.Run.Out == "" {
			return fmt.Errorf("run.out: required when an export has no out path")
		}
		if _, err := run.ExportFormat(x.What, x.Format); err != nil {
			return fmt.Errorf("export[%d]: %w", i, err)
		}
	}
	if err := c.checkRun(); err != nil {
		return err
	}
	if err := c.checkNear(); err != nil {
		return err
	}
	if err := run.ValidShardLimits(c.Run.ShardLimits); err != nil {
		return fmt.Errorf("run.%w", err)
	}
	if c.Stages.Curate != nil && len(c.Stages.Curate.Strategies) == 0 {
		return fmt.Errorf("stages.curate.strategies: list at least one strategy")
	}
	for name, m := range c.Models {
		if _, ok := c.Endpoints[m.Endpoint]; !ok {
			return fmt.Errorf("models.%s.endpoint: no endpoint named %q", name, m.Endpoint)
		}
		if m.Limits != nil {
			if err := m.Limits.check("models." + name + ".limits"); err != nil {
				return err
			}
		}
	}
	for name, r := range c.Roles {
		if _, ok := c.Models[r.Model]; !ok {
			return fmt.Errorf("roles.%s.model: no model named %q under models", name, r.Model)
		}
		if err := checkEmbedder(name, r, c.Roles); err != nil {
			return err
		}
	}
	if err := c.validateBatch(); err != nil {
		return err
	}
	for name, ep := range c.Endpoints {
		if ep.BaseURL == "" {
			return fmt.Errorf("endpoints.%s.base_url: required", name)
		}
		if err := ep.checkKeyVar(name); err != nil {
			return err
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
		if err := ep.Limits.check("endpoints." + name + ".limits"); err != nil {
			return err
		}
	}
	return c.checkOutputs()
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

// FilterKeys names the filter options (filter.FieldError.Field) as the
// config file spells them, for run.FilterError.
var FilterKeys = map[string]string{
	"Languages": "input.filter.language", "UnknownLanguage": "input.filter.unknown_language",
	"MinUserTurns": "input.filter.user_turns.min", "MaxUserTurns": "input.filter.user_turns.max",
	"Domains": "input.filter.domains", "MaxMessageBytes": "input.filter.max_message_bytes",
	"NearThreshold": "input.filter.near_threshold", "NearShingleWords": "input.filter.near_shingle",
	"IdentifyLanguage": "input.filter.identify_language",
}

func (c *File) filter() run.Filter {
	f := c.Input.Filter
	return run.Filter{
		Languages: f.Language, UnknownLanguage: f.UnknownLanguage,
		MinUserTurns: f.UserTurns.Min, MaxUserTurns: f.UserTurns.Max,
		Domains: f.Domains, DropToxic: f.DropToxic, DropRedacted: f.DropRedacted,
		Dedupe: f.Dedupe != dedupeOff, Near: c.near(), MaxMessageBytes: f.MaxMessageBytes,
		IdentifyLanguage: f.IdentifyLanguage,
	}
}

// decodeSection decodes a stage section into T; ok is false when the
// section is absent.
func decodeSection[T any](n yaml.Node, path string) (v T, ok bool, err error) {
	if n.Kind == 0 {
		return v, false, nil
	}
	return v, true, decode(&n, &v, path)
}

// annotatorOf reads stages.<name>.annotator: heuristic (the default, needs
// no model) or llm.
func annotatorOf(n yaml.Node, path string) (string, error) {
	s, ok, err := decodeSection[struct {
		Annotator string            `yaml:"annotator"`
		Prompts   map[string]string `yaml:"prompts"` // read by loadPrompts
	}](n, path)
	switch {
	case err != nil || !ok:
		return "", err
	case s.Annotator == "":
		return run.Heuristic, nil
	case s.Annotator == run.Heuristic || s.Annotator == run.LLM:
		return s.Annotator, nil
	}
	return "", fmt.Errorf("%s.annotator: %q, want llm or heuristic", path, s.Annotator)
}

// Annotate reads stages.classify, refs, constraints and pollution. Refs
// share the classify call, so a refs section alone runs classify, and one
// beside classify must name the same annotator. notes are lines to show.
func (c *File) Annotate() (a run.Annotate, notes []string, err error) {
	a.Workers = c.Run.Workers
	st := c.Stages
	if a.Classify, err = annotatorOf(st.Classify, "stages.classify"); err != nil {
		return a, nil, err
	}
	refs, err := annotatorOf(st.Refs, "stages.refs")
	if err != nil {
		return a, nil, err
	}
	a.Prompts = c.annotatePrompts()
	if refs != "" && a.Classify != "" && a.Classify != refs {
		return a, nil, fmt.Errorf("stages.refs.annotator: %q, but refs come from the classify call, which uses %q; make them the same", refs, a.Classify)
	}
	a.Classify = cmp.Or(a.Classify, refs)
	var registry string
	if a.Constraints, registry, err = constraintsOf(st.Constraints); err != nil {
		return a, nil, err
	}
	if a.Constraints == run.LLM {
		a.ConstraintsRegistry = registry
		if a.Prompts, err = withConstraintsForm(a.Prompts, registry); err != nil {
			return a, nil, err
		}
	}
	p, ok, err := c.pollutionSection()
	if err != nil || !ok {
		return a, nil, err
	}
	a.Pollution = p.dataset
	return a, notes, nil
}

// Respond reads stages.respond (nil when absent). Samples default to the
// first respondent role that sets them.
func (c *File) Respond() (*run.Respond, error) {
	rc, ok, err := decodeSection[struct {
		Strategies  []string `yaml:"strategies"`
		Respondents []string `yaml:"respondents"`
		Samples     int      `yaml:"samples"`
		Parallel    *int     `yaml:"parallel"`
	}](c.Stages.Respond, "stages.respond")
	if err != nil || !ok {
		return nil, err
	}
	if rc.Parallel != nil {
		return nil, gone("stages.respond.parallel")
	}
	return &run.Respond{Strategies: rc.Strategies, Respondents: rc.Respondents, Samples: rc.Samples}, nil
}

// Samples is the answers per context for roles when none is set: the
// first role whose config sets samples.
func (c *File) Samples(roles []string) int {
	if len(roles) == 0 {
		roles = []string{"respondent"}
	}
	for _, r := range roles {
		if n := c.Roles[r].Samples; n > 0 {
			return n
		}
	}
	return 0
}

// WithRespond fills what the command line left unset in a from
// stages.respond (its parallel wins) and the roles' samples. c may be nil.
func (c *File) WithRespond(a run.Respond) (run.Respond, error) {
	if c == nil {
		return a, nil
	}
	rc, err := c.Respond()
	if err != nil {
		return a, c.inFile(err)
	}
	if rc != nil {
		a.Strategies = orList(a.Strategies, rc.Strategies)
		a.Respondents = orList(a.Respondents, rc.Respondents)
		a.Samples = cmp.Or(a.Samples, rc.Samples)
	}
	a.Samples = cmp.Or(a.Samples, c.Samples(a.Respondents))
	return a, nil
}

// WithJudge fills what the command line left unset in a from
// stages.judge (its parallel wins). c may be nil.
func (c *File) WithJudge(a run.Judge) (run.Judge, error) {
	if c == nil {
		return a, nil
	}
	jc, err := c.Judge()
	if err != nil || jc == nil {
		return a, c.inFile(err)
	}
	a.Pairs, a.Order, a.Context, a.Role = orList(a.Pairs, jc.Pairs), cmp.Or(a.Order, jc.Order), cmp.Or(a.Context, jc.Context), cmp.Or(a.Role, jc.Role)
	if a.Prompt == nil {
		a.Prompt = jc.Prompt
	}
	return a, nil
}

func orList(v, def []string) []string {
	if len(v) == 0 {
		return def
	}
	return v
}

// Judge reads stages.judge (nil when absent).
func (c *File) Judge() (*run.Judge, error) {
	jc, ok, err := decodeSection[struct {
		Pairs      []string `yaml:"pairs"`
		Dimensions []string `yaml:"dimensions"`
		Order      string   `yaml:"order"`
		Context    string   `yaml:"context"`
		Role       string   `yaml:"role"`
		Parallel   *int     `yaml:"parallel"`
		// Prompts is read by loadPrompts.
		Prompts map[string]string `yaml:"prompts"`
	}](c.Stages.Judge, "stages.judge")
	if err != nil || !ok {
		return nil, err
	}
	if jc.Parallel != nil {
		return nil, gone("stages.judge.parallel")
	}
	for _, d := range jc.Dimensions {
		if !slices.Contains(judge.Dimensions(), d) {
			return nil, fmt.Errorf("stages.judge.dimensions: %q is not one of %s", d, strings.Join(judge.Dimensions(), ", "))
		}
	}
	return &run.Judge{Pairs: jc.Pairs, Order: jc.Order, Context: jc.Context, Role: jc.Role,
		Prompt: c.prompts["judge"]["pairwise"]}, nil
}

// Report reads the report section (nil when absent).
func (c *File) Report() (*run.Report, error) {
	if c.ReportSection.Kind == 0 {
		return nil, nil
	}
	var rc struct {
		Formats  []string `yaml:"formats"`
		Level    float64  `yaml:"level"`
		MinN     int      `yaml:"min_n"`
		MinConvs int      `yaml:"min_conversations"`
		// ViewBase is where report.html's links into 'ac3 view' point.
		ViewBase  string `yaml:"view_base"`
		Bootstrap struct {
			Resamples int    `yaml:"resamples"`
			Cluster   string `yaml:"cluster"`
		} `yaml:"bootstrap"`
	}
	if err := decode(&c.ReportSection, &rc, "report"); err != nil {
		return nil, err
	}
	if rc.Bootstrap.Cluster != "" && rc.Bootstrap.Cluster != "conversation" {
		return nil, fmt.Errorf("report.bootstrap.cluster: only %q is supported (turns of one conversation are correlated)", "conversation")
	}
	if c.Run.Out == "" {
		return nil, fmt.Errorf("report: set run.out, the folder the report is written to")
	}
	return &run.Report{Out: c.Run.Out, Formats: rc.Formats, Options: report.Options{
		Seed: uint64(c.Run.Seed), Resamples: rc.Bootstrap.Resamples, Level: rc.Level, MinN: rc.MinN, MinConversations: rc.MinConvs,
		ViewBase: rc.ViewBase,
	}}, nil
}

// Plan is the whole config as a run plan; notes are lines to show first.
func (c *File) Plan(getenv func(string) string) (run.Plan, []string, error) {
	p, notes, err := c.plan(getenv)
	return p, notes, c.inFile(err)
}

func (c *File) plan(getenv func(string) string) (run.Plan, []string, error) {
	p := run.Plan{DB: c.Run.DB, Seed: c.Run.Seed, Model: Model(c, getenv, false, c.Run.BudgetUSD), ShardLimits: c.Run.ShardLimits}
	if len(c.Input.Files) > 0 {
		p.Ingest = &run.Ingest{Files: c.Input.Files, Format: c.Input.Format, MaxLineBytes: c.Input.MaxLineBytes, Filter: c.filter()}
	}
	a, notes, err := c.Annotate()
	if err != nil {
		return p, nil, err
	}
	if !a.Empty() {
		p.Annotate = &a
	}
	if c.Stages.Curate != nil {
		cu, err := c.Curate()
		if err != nil {
			return p, nil, err
		}
		p.Curate = &cu
	}
	if p.Respond, err = c.Respond(); err != nil {
		return p, nil, err
	}
	if p.Respond != nil && p.Respond.Samples == 0 {
		p.Respond.Samples = c.Samples(p.Respond.Respondents)
	}
	if p.Replies, err = c.Replies(); err != nil {
		return p, nil, err
	}
	if p.LiC, err = c.LiC(c.base); err != nil {
		return p, nil, err
	}
	if p.Judge, err = c.Judge(); err != nil {
		return p, nil, err
	}
	if p.CompInt, err = c.CompInt(); err != nil {
		return p, nil, err
	}
	if p.Report, err = c.Report(); err != nil {
		return p, nil, err
	}
	if p.Report != nil && p.CompInt != nil {
		p.Report.Options.CompIntMinDenominator = p.CompInt.MinDenominator
	}
	for _, x := range c.Export {
		out := x.Out
		if out == "" {
			out = filepath.Join(c.Run.Out, run.ExportFileName(x.What, x.Format))
		}
		p.Exports = append(p.Exports, run.Export{What: x.What, Format: x.Format, Out: out})
	}
	return p, notes, nil
}

// ac3Config is the config file's form of run.AC3: the extra keys of
// stages.curate, e.g.
//
//	gated_reset: {floor: 2, cap: 3}
//	reset: {floor: 0}
//	rewrite: {floor: 3}
//	augment: {warmup: 3}
//	adaptive: {policy: scored, lambda: 0.1, tau: 0.5}
//	memory: {regime: offline}   # or online; off by default
//	memory: {regime: offline, include_learning: false, outcome_pair: gated-reset:ao}
//	constraints: {variant: llm}
//	classify: {variant: heuristic}
//	analyzer_retries: 2
//	ablation: contagious-extractor   # research only
//	ao: {placeholder: "[Response provided]", note: "..."}
//	reset_template: wildchat         # or ac3 (the default)
//	rewrite_variant: paper           # or ac3 (the default)
//	replay: prefix                   # or continue (the default)
//
// The last four are in fidelity.go; the compactors' keys (recent_n,
// llm_compact, plugins) are in compact.go.
type ac3Config struct {
	GatedReset, Reset, Rewrite *struct {
		Floor *int `yaml:"floor"`
		Cap   *int `yaml:"cap"`
	}
	Augment *struct {
		Warmup *int `yaml:"warmup"`
	}
	Adaptive *struct {
		Policy string   `yaml:"policy"`
		Lambda *float64 `yaml:"lambda"`
		Tau    *float64 `yaml:"tau"`
	}
	Memory *struct {
		Regime          string `yaml:"regime"`
		IncludeLearning bool   `yaml:"include_learning"`
		OutcomePair     string `yaml:"outcome_pair"`
	}
	Constraints, Classify *struct {
		Variant string `yaml:"variant"`
	}
	AnalyzerRetries int
	Ablation        string
	Prompts         map[string]string // read by loadPrompts
	fidelityConfig
	compactConfig
	fillerConfig
}

// AC3 reads stages.curate's AC3 keys (the defaults without a config).
func (cfg *File) AC3() (run.AC3, error) {
	s := run.AC3{Gates: map[string]curate.Gate{}, Memory: run.MemoryOff}
	if cfg == nil || cfg.Stages.Curate == nil {
		return s, nil
	}
	var ac ac3Config
	known := map[string]any{
		"gated_reset": &ac.GatedReset, "reset": &ac.Reset, "rewrite": &ac.Rewrite, "augment": &ac.Augment,
		"adaptive": &ac.Adaptive, "memory": &ac.Memory, "constraints": &ac.Constraints, "classify": &ac.Classify,
		"analyzer_retries": &ac.AnalyzerRetries, "ablation": &ac.Ablation, "prompts": &ac.Prompts,
	}
	ac.fidelityConfig.keys(known)
	ac.compactConfig.keys(known)
	ac.fillerConfig.keys(known)
	for _, k := range slices.Sorted(maps.Keys(cfg.Stages.Curate.Extra)) {
		node := cfg.Stages.Curate.Extra[k]
		dst, ok := known[k]
		if !ok {
			names, _ := yamlFields(reflect.TypeOf(curateConfig{}))
			all := slices.Concat(slices.Collect(maps.Keys(known)), slices.Collect(maps.Keys(names)))
			return s, fmt.Errorf("line %d: stages.curate.%s: unknown setting (known: %s)", node.Line, k, strings.Join(slices.Sorted(slices.Values(all)), ", "))
		}
		if err := decode(&node, dst, "stages.curate."+k); err != nil {
			return s, err
		}
	}
	for op, g := range map[string]*struct {
		Floor *int `yaml:"floor"`
		Cap   *int `yaml:"cap"`
	}{curated.OpGatedReset: ac.GatedReset, curated.OpReset: ac.Reset, curated.OpRewrite: ac.Rewrite} {
		if g == nil {
			continue
		}
		gate := curate.DefaultGate(op)
		gate.Floor, gate.Cap = deref(g.Floor, gate.Floor), deref(g.Cap, gate.Cap)
		s.Gates[op] = gate
	}
	if ac.Augment != nil && ac.Augment.Warmup != nil {
		s.Gates[curated.OpAugment] = curate.Gate{Floor: *ac.Augment.Warmup}
	}
	if a := ac.Adaptive; a != nil {
		s.Adaptive.Policy, s.Adaptive.Lambda, s.Adaptive.Tau = a.Policy, deref(a.Lambda, 0), deref(a.Tau, 0)
	}
	if ac.Memory != nil {
		s.Memory = cmp.Or(ac.Memory.Regime, s.Memory)
		s.IncludeLearning, s.OutcomePair = ac.Memory.IncludeLearning, ac.Memory.OutcomePair
	}
	if ac.Constraints != nil {
		s.ConstraintsVariant = ac.Constraints.Variant
	}
	if ac.Classify != nil {
		s.ClassifyVariant = ac.Classify.Variant
	}
	s.Retries = ac.AnalyzerRetries
	s.Prompts, s.Texts = cfg.analyzerPrompts("curate"), cfg.curateTexts("curate")
	ab, err := analyze.ParseAblation(ac.Ablation)
	if err != nil {
		return s, fmt.Errorf("stages.curate.ablation: %w", err)
	}
	s.Ablation = ab
	if err := ac.fidelityConfig.apply(&s); err != nil {
		return s, err
	}
	if err := ac.fillerConfig.apply(&s, cfg.base); err != nil {
		return s, err
	}
	if err := ac.compactConfig.apply(&s, cfg.base); err != nil {
		return s, err
	}
	return s, CheckMemory(s.Memory)
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// CheckMemory checks a memory regime's name.
func CheckMemory(regime string) error {
	for _, r := range append(run.MemoryRegimes(), "") {
		if regime == r {
			return nil
		}
	}
	return fmt.Errorf("memory regime %q: valid: %s", regime, strings.Join(run.MemoryRegimes(), ", "))
}

// Curate is stages.curate as a run step.
func (cfg *File) Curate() (run.Curate, error) {
	cu := cfg.Stages.Curate
	ac, err := cfg.AC3()
	if cu.LastTurns < 0 {
		return run.Curate{}, fmt.Errorf("stages.curate.last_turns: %d, want 0 (every turn) or more", cu.LastTurns)
	}
	return run.Curate{Strategies: cu.Strategies, FromTurn: cu.FromTurn, Encoding: cu.Encoding, On: cu.On, LastTurns: cu.LastTurns, Workers: cfg.Run.Workers, AC3: ac}, err
}

// Model turns the config's endpoints, models and roles (or, without
// models, OPENAI_BASE_URL / OPENAI_API_KEY / OPENAI_MODEL) into the run's
// model settings. Keys are read from the environment variables the config
// names; they never come from the file.
func Model(cfg *File, getenv func(string) string, noCache bool, budget float64) run.Model {
	m := run.Model{NoCache: noCache, BudgetUSD: budget}
	envEP, fromEnv := llm.DefaultFromEnv(getenv)
	if fromEnv {
		m.EnvModel = envEP.Model
	}
	if cfg == nil || len(cfg.Models) == 0 {
		if fromEnv {
			m.Options = &llm.Options{Endpoints: []llm.Endpoint{envEP}}
			if cfg != nil {
				m.Options.Roles = map[string]llm.RoleBinding{}
			}
		}
		return m
	}
	opts := &llm.Options{Roles: map[string]llm.RoleBinding{}}
	names := make([]string, 0, len(cfg.Models))
	for n := range cfg.Models {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		mc := cfg.Models[name]
		ec := cfg.Endpoints[mc.Endpoint]
		lim := ec.Limits
		if mc.Limits != nil {
			lim = *mc.Limits
		}
		ep := llm.Endpoint{
			Name: name, BaseURL: ec.BaseURL, APIKeyEnv: ec.APIKeyEnv, APIKeyHeader: ec.APIKeyHeader,
			Headers: ec.Headers, Query: ec.Query, Model: cmp.Or(mc.Name, name), MaxTokensField: ec.MaxTokensField,
			JSONMode: llm.JSONMode(ec.JSONMode), MaxAttempts: ec.MaxAttempts,
			Kind: ec.Kind, Output: modelOutput(ec, mc),
			Limits: lim.llm(),
			Price:  llm.Price{Input: mc.Price.Input, CachedInput: mc.Price.Cached, Output: mc.Price.Output, Batch: mc.Price.Batch},
			Mode:   mode(ec.Mode),
		}
		if ec.APIKeyEnv != "" {
			ep.APIKey = llm.Secret(getenv(ec.APIKeyEnv))
			ep.APIKeyFrom = cfg.keyFrom(mc.Endpoint, ec)
		}
		ep.Timeout, _ = time.ParseDuration(ec.Timeout) // validated at load
		opts.Endpoints = append(opts.Endpoints, ep)
	}
	for name, r := range cfg.Roles {
		opts.Roles[name] = llm.RoleBinding{Endpoint: r.Model, Params: llm.Params{
			Temperature: r.Temperature, TopP: r.TopP, MaxTokens: r.MaxTokens, Seed: r.Seed,
			Stop: r.Stop, ReasoningEffort: r.ReasoningEffort, Extra: r.Extra,
		}, Mode: mode(r.Mode), Inputs: r.Inputs}
	}
	m.Options = opts
	m.Batch = cfg.Batch.settings()
	return m
}
