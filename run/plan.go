package run

import (
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/pipeline/shard"
	"github.com/ac3/ac3/run/export"
	"github.com/ac3/ac3/run/report"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/filter"
)

// Plan is a whole run, or any part of it: what to read, which stages to run
// with which settings, what to report and export. A nil section is a step
// the plan leaves out. The command line builds a Plan from its config file
// or flags; tests and shard workers build one directly.
type Plan struct {
	DB   string // the run file; created by the first step that writes
	Seed int64  // the run seed (judge orders, report bootstrap)

	Model Model // how to reach the models, for the steps that need one

	Ingest   *Ingest
	Annotate *Annotate
	Curate   *Curate
	Respond  *Respond
	Replies  *ReviewReplies // pollution of the generated replies, after respond
	LiC      *LiC           // the LiC replay experiment (lic.go)
	Judge    *Judge
	CompInt  *CompInt
	Report   *Report
	Exports  []Export

	// Shard, when enabled, makes this run one shard of a sharded run: DB
	// is the shard's own file (Shard.Path of the configured one), ingest
	// keeps only the conversations the shard owns, and the report and
	// exports are left to the merged run (see shard.go).
	Shard shard.Spec
	// ShardLimits is how a shard treats the endpoints' limits and the
	// budget: ShardLimitsDivide (the default, "") splits them among the
	// shards, ShardLimitsWhole gives each shard all of them.
	ShardLimits string
}

// writes reports whether the plan changes the run file (and so needs it
// open for writing, creating it if missing).
func (p Plan) writes() bool {
	return p.Ingest != nil || p.Annotate != nil || p.Curate != nil || p.Respond != nil || p.Replies != nil || p.Judge != nil || p.LiC != nil || p.CompInt != nil
}

// Model says how to reach the models.
type Model struct {
	// Options are the endpoints and role bindings; nil when none is
	// configured, in which case stages that need a model are skipped with
	// one line saying so (see ErrNoEndpoint).
	Options *llm.Options
	// NoCache neither reads nor writes the run's answer cache.
	NoCache bool
	// BudgetUSD stops taking new work before spend would pass it; 0 means
	// no cap.
	BudgetUSD float64
	// EnvModel is the model the environment names (OPENAI_MODEL) when it
	// configures an endpoint; the unit versions of roles the Options do not
	// bind name it.
	EnvModel string
	// Batch configures batch mode; nil for the defaults.
	Batch *Batch
}

// Ingest reads input files into the run.
type Ingest struct {
	Files        []string
	Format       string // auto, or a format name (see Formats)
	MaxLineBytes int    // longer input lines are quarantined
	Filter       Filter
}

// Filter is the ingest filters in the canonical form stored in the run: a
// run keeps the filters it was started with, and this form is what is
// compared. The field tags are that stored form and must not change.
type Filter struct {
	Languages       []string `json:"languages,omitempty"`
	UnknownLanguage string   `json:"unknown_language,omitempty"`
	MinUserTurns    int      `json:"min_user_turns,omitempty"`
	MaxUserTurns    int      `json:"max_user_turns,omitempty"`
	Domains         []string `json:"domains,omitempty"`
	DropToxic       bool     `json:"drop_toxic,omitempty"`
	DropRedacted    bool     `json:"drop_redacted,omitempty"`
	Dedupe          bool     `json:"dedupe,omitempty"`
	// Near also drops near duplicates over the user turns (--dedupe near),
	// after the exact ones; nil for none.
	Near            *NearDedupe `json:"near,omitempty"`
	MaxMessageBytes int         `json:"max_message_bytes,omitempty"`
	// IdentifyLanguage is filter.Options.IdentifyLanguage; the default
	// (auto) is stored as "", so runs from before it existed compare
	// equal.
	IdentifyLanguage string `json:"identify_language,omitempty"`
}

// Options are the filter package's options for f.
func (f Filter) Options() filter.Options {
	return filter.Options{
		Languages: f.Languages, UnknownLanguage: f.UnknownLanguage,
		MinUserTurns: f.MinUserTurns, MaxUserTurns: f.MaxUserTurns,
		Domains: f.Domains, DropToxic: f.DropToxic, DropRedacted: f.DropRedacted,
		MaxMessageBytes: f.MaxMessageBytes, IdentifyLanguage: f.IdentifyLanguage,
	}
}

// Canonical is the stored form of f: lists sorted, JSON.
func (f Filter) Canonical() string {
	f.Languages = slices.Clone(f.Languages)
	f.Domains = slices.Clone(f.Domains)
	sort.Strings(f.Languages)
	sort.Strings(f.Domains)
	f.Near = f.Near.resolved()
	if p := strings.ToLower(strings.TrimSpace(f.IdentifyLanguage)); p == filter.IdentifyAuto {
		f.IdentifyLanguage = ""
	} else {
		f.IdentifyLanguage = p
	}
	b, _ := json.Marshal(f)
	return string(b)
}

// The annotators of classify and constraints.
const (
	Heuristic = "heuristic"
	LLM       = "llm"
)

// Annotate runs the annotation stages in order classify → constraints →
// pollution.
type Annotate struct {
	Classify    string // "" (not run), Heuristic or LLM; refs come with classify
	Constraints string // "" (not run), Heuristic or LLM
	// ConstraintsRegistry is the llm constraints annotator's form
	// (constraints.Options.Registry): sequential, parallel, or "" to
	// follow the annotator role's mode.
	ConstraintsRegistry string
	Pollution           bool // review the dataset's replies (model only)
	Workers             int  // conversations a heuristic annotator labels at once (CPU)
	// Prompts replace the model annotators' prompts, by prompt name
	// (classify, constraints, pollution): users' templates, checked with
	// prompt.ParseFile against the stage's PromptSpec.
	Prompts map[string]*prompt.Template
}

// How much runs at once has two settings, one per resource. Workers, in
// Annotate and Curate, bounds the CPU-bound stages (rules, heuristics): one
// per core keeps the cores busy. Model calls are paced by each endpoint's
// limits (concurrency, RPM, TPM, in Model): a model-backed stage keeps
// twice its endpoints' concurrency of tasks open (pipeline.DefaultWindow),
// so a request is always waiting when the endpoint can take one. Each open
// task holds one conversation, so both bound memory.

// Curate builds the curated contexts.
type Curate struct {
	Strategies []string // strategy names, with +constraints overlays
	FromTurn   int      // first user turn curated (curate.DefaultFrom when 0)
	Encoding   string   // tokenizer encoding (tokens.DefaultEncoding when "")
	// On narrows the conversations curated to these origins ("source" for
	// ingested ones, "compint" for CompInt instances); empty: every origin.
	On []string
	// LastTurns curates only the last K user turns of each conversation
	// (1 for CompInt's probe turn); 0 curates every turn from FromTurn on.
	LastTurns int
	Workers   int // conversations curated at once by rule-based strategies (CPU)
	AC3       AC3
}

// The regimes of the AC3 memory.
const (
	MemoryOff     = "off"
	MemoryOffline = "offline" // the frozen cheatsheet LearnMemory stored
	MemoryOnline  = "online"  // a cheatsheet updated after every conversation, in ingest order
)

// MemoryRegimes lists the memory regimes.
func MemoryRegimes() []string { return []string{MemoryOff, MemoryOffline, MemoryOnline} }

// AC3 holds the settings of the AC3 operators and the other model-backed
// strategies.
type AC3 struct {
	// Restate is the line gated-reset's rebuilt contexts add after u_t
	// (set by the LiC replay for actions, lic.restate_calls); zero for none.
	Restate  curate.Restate
	Gates    map[string]curate.Gate // by operator; others keep curate.DefaultGate
	Ablation analyze.Ablation
	Adaptive curate.AdaptiveOptions
	Memory   string // MemoryOff (also ""), MemoryOffline or MemoryOnline
	// ConstraintsVariant and ClassifyVariant pick the upstream variant the
	// +constraints overlay and adaptive read; "" prefers llm, then
	// heuristic, from the stage's current plan.
	ConstraintsVariant, ClassifyVariant string
	Retries                             int // analyzer re-asks after a malformed answer
	// AO is ao's placeholder and system note (adaptive's too); the zero
	// value gives ours, curate.HuangAO() Huang et al.'s.
	AO curate.AOOptions
	// ResetTemplate is the form reset and gated-reset give the history
	// they replace (curate.ResetAC3 when "", or curate.ResetWildChat).
	ResetTemplate curate.ResetTemplate
	// Rewrite is the rewrite operator's prompt (analyze.RewriteAC3 when
	// "", or analyze.RewritePaper).
	Rewrite analyze.RewriteVariant
	// Sum is sum's form (curate.SumAC3 when "", or curate.SumPaper).
	Sum curate.SumForm
	// Replay is how the operators that remove content build later turns
	// (curate.ReplayContinue when "", or curate.ReplayPrefix).
	Replay curate.Replay
	// IncludeLearning keeps, with the offline memory, the conversations the
	// cheatsheet was learned on in curation and the report (by default
	// they are left out: results on them would flatter the memory).
	IncludeLearning bool
	// OutcomePair is the judge pair whose verdicts LearnMemory shows the
	// reflections as outcomes ("": the first judged pair of an AC3
	// operator).
	OutcomePair string
	// Prompts replace the analyzer's prompts, by name (analyze.PromptSpecs):
	// users' templates, checked with prompt.ParseFile.
	Prompts map[string]*prompt.Template
	// Texts replace the operators' fixed texts (curate.TextSpecs).
	Texts curate.Texts
	// Compact configures the compactors (recent-n, llm-compact,
	// extract-sc, plugin=NAME); its Cache is set by the run.
	Compact curate.CompactOptions
	// Filler gives the filler strategy corpora (zero: ac3's sentences).
	Filler curate.FillerOptions
}

// strategyOptions are the strategies' settings a's keys give; the stage
// that builds them adds what it owns (the analyzer, the units, caches).
func (a AC3) strategyOptions() curate.Options {
	return curate.Options{
		Gates: a.Gates, Adaptive: a.Adaptive, AO: a.AO,
		ResetTemplate: a.ResetTemplate, Rewrite: a.Rewrite, Replay: a.Replay, Texts: a.Texts,
		Compact: a.Compact, Filler: a.Filler, Sum: a.Sum, Restate: a.Restate,
	}
}

// Respond generates the next assistant turn from curated contexts.
type Respond struct {
	Strategies  []string // curate strategies to answer (default: every curated one)
	Respondents []string // roles (default: respondent)
	Samples     int      // answers per context (default 1)
}

// Judge compares the answers of two strategies.
type Judge struct {
	Pairs   []string // "A:B"
	Order   string   // judge.OrderRandom (default) or judge.OrderBoth (stricter)
	Context string   // judge context (judge.ContextFull by default)
	Role    string   // judge role (judge.DefaultRole by default)
	// Prompt replaces the pairwise prompt with a user's template, checked
	// with prompt.ParseFile against judge.PromptSpec; nil keeps ours.
	Prompt *prompt.Template
}

// Report writes the report files.
type Report struct {
	Out     string   // the folder
	Formats []string // html, md, json (default all)
	Options report.Options
	// SeedFromRun takes the bootstrap seed from the seed the run's judge
	// recorded instead of Options.Seed.
	SeedFromRun bool
}

// Export writes one export file.
type Export struct {
	What        string                   `json:"what"`   // one of export.Kinds()
	Format      string                   `json:"format"` // parquet, jsonl, sft
	Out         string                   `json:"out"`
	Preferences export.PreferenceOptions `json:"-"` // preferences and winners only
	Curated     export.CuratedOptions    `json:"-"` // curated only
	Partial     bool                     `json:"-"` // export although the work read is unfinished
}

// Options are the export options x carries.
func (x Export) Options() export.Options {
	return export.Options{Preferences: x.Preferences, Curated: x.Curated, Partial: x.Partial}
}

// check refuses an export that cannot be written, before the run file is
// opened: its options (named by the export command's flags, the only way
// to set them), then its kind and format.
func (x Export) check() error {
	if x.Curated.TrainOn != "" && x.Format != string(export.SFT) {
		return errors.New("--train-on applies to --format sft only")
	}
	if err := x.Options().Check(x.What); err != nil {
		return err
	}
	_, err := ExportFormat(x.What, x.Format)
	return err
}
