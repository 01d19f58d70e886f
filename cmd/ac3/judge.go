package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/judge/report"
	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/respond"
)

// respondConfig is stages.respond.
type respondConfig struct {
	Strategies  []string `yaml:"strategies"`
	Respondents []string `yaml:"respondents"` // roles; default [respondent]
	Samples     int      `yaml:"samples"`     // default: roles.<respondent>.samples, else 1
	Parallel    int      `yaml:"parallel"`
}

// judgeConfig is stages.judge.
type judgeConfig struct {
	Pairs      []string `yaml:"pairs"`
	Dimensions []string `yaml:"dimensions"`
	Order      string   `yaml:"order"`
	Context    string   `yaml:"context"`
	Role       string   `yaml:"role"`
	Parallel   int      `yaml:"parallel"`
}

// reportConfig is the report section.
type reportConfig struct {
	Formats   []string `yaml:"formats"`
	Level     float64  `yaml:"level"`
	MinN      int      `yaml:"min_n"`
	MinConvs  int      `yaml:"min_conversations"`
	Bootstrap struct {
		Resamples int    `yaml:"resamples"`
		Cluster   string `yaml:"cluster"`
	} `yaml:"bootstrap"`
}

// sectionNode returns a config section's node, nil when the section is
// absent. It accepts the node by value or by pointer, so it keeps working
// whichever way config.go declares the stage sections.
func sectionNode(v any) *yaml.Node {
	switch n := v.(type) {
	case *yaml.Node:
		return n
	case yaml.Node:
		if n.Kind == 0 {
			return nil
		}
		return &n
	}
	return nil
}

func decodeNode[T any](n *yaml.Node, field string) (T, error) {
	var v T
	if n == nil {
		return v, nil
	}
	if err := n.Decode(&v); err != nil {
		return v, fmt.Errorf("reading %s: %w", field, err)
	}
	return v, nil
}

func (cfg *config) respondSection() (*respondConfig, error) {
	n := sectionNode(cfg.Stages.Respond)
	if n == nil {
		return nil, nil
	}
	rc, err := decodeNode[respondConfig](n, "stages.respond")
	return &rc, err
}

func (cfg *config) judgeSection() (*judgeConfig, error) {
	n := sectionNode(cfg.Stages.Judge)
	if n == nil {
		return nil, nil
	}
	jc, err := decodeNode[judgeConfig](n, "stages.judge")
	if err == nil {
		for _, d := range jc.Dimensions {
			if d != judge.Quality && d != judge.OnTopic {
				return nil, fmt.Errorf("stages.judge.dimensions: %q is not one of quality, on_topic", d)
			}
		}
	}
	return &jc, err
}

func (cfg *config) reportSection() (*reportConfig, error) {
	if cfg.Report == nil {
		return nil, nil
	}
	b, err := yaml.Marshal(cfg.Report)
	if err != nil {
		return nil, fmt.Errorf("reading report: %w", err)
	}
	var rc reportConfig
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&rc); err != nil {
		return nil, fmt.Errorf("reading report: %w", err)
	}
	if rc.Bootstrap.Cluster != "" && rc.Bootstrap.Cluster != "conversation" {
		return nil, fmt.Errorf("report.bootstrap.cluster: only %q is supported (turns of one conversation are correlated)", "conversation")
	}
	return &rc, nil
}

// roleSettings describes the model and parameters bound to a role, for unit
// versions: the model entry and the parameters, never the endpoint's URL or
// key.
func roleSettings(cfg *config, getenv func(string) string, role string) string {
	if cfg != nil {
		if r, ok := cfg.Roles[role]; ok {
			b, _ := json.Marshal(r.params())
			m := cfg.Models[r.Model]
			return r.Model + "=" + cmpOr(m.Name, r.Model) + string(b)
		}
	}
	if ep, ok := llm.DefaultFromEnv(getenv); ok {
		return ep.Model
	}
	return "default"
}

type respondArgs struct {
	strategies  []string
	respondents []string
	samples     int
	parallel    int
	workers     int
}

type judgeArgs struct {
	pairs    []string
	order    string
	context  string
	role     string
	seed     int64
	parallel int
	workers  int
}

func respondCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "respond",
		Usage: "generate the next assistant turn from each curated context",
		Description: `For every curated context (conversation, turn, strategy) the respondent role
writes the next assistant turn, seeing exactly the curated messages. --samples N
draws N answers per context (each cached on its own). Reasoning traces are kept
apart from the answer. Several respondents (roles bound to different models)
can run at once: their variants are named strategy@role.

A rejected request or an answer that stays empty fails its unit (error and raw
answer kept; 'ac3 retry' re-queues it). Run it again after a stop: it continues.

Examples:
   ac3 respond --db run.db --config run.yaml --strategies fc,ao
   ac3 respond --db run.db --strategies fc,ao --samples 3 --budget-usd 20
   ac3 respond --db run.db --config run.yaml --dry-run`,
		Flags: append(llmFlags(), dbFlag,
			&cli.StringSliceFlag{Name: "strategies", Usage: "curated strategies to answer (default: stages.respond, else every curated strategy)"},
			&cli.StringSliceFlag{Name: "respondents", Usage: "roles that answer (default: respondent)"},
			&cli.IntFlag{Name: "samples", Usage: "answers per context (default: the role's samples, else 1)"},
			&cli.IntFlag{Name: "parallel", Value: 4, Usage: "calls in flight per conversation"},
			&cli.IntFlag{Name: "workers", Value: 2, Usage: "conversations in parallel"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the plan and the estimated cost, call nothing"},
		),
		Action: func(c *cli.Context) error {
			s, err := llmSettingsFrom(c, e)
			if err != nil {
				return err
			}
			a := respondArgs{strategies: splitList(c.StringSlice("strategies")), respondents: splitList(c.StringSlice("respondents")), samples: c.Int("samples"), parallel: c.Int("parallel"), workers: c.Int("workers")}
			if s.cfg != nil {
				rc, err := s.cfg.respondSection()
				if err != nil {
					return err
				}
				a = a.withConfig(rc)
			}
			l, err := openRun(c.Context, c, c.Bool("dry-run"))
			if err != nil {
				return err
			}
			defer l.Close()
			if c.Bool("dry-run") {
				return dryRunRespondJudgeArgs(c.Context, e.stdout, l, s.cfg, e.getenv, &a, nil)
			}
			_, err = runRespond(c.Context, e, l, s, a)
			return err
		},
	}
}

func (a respondArgs) withConfig(rc *respondConfig) respondArgs {
	if rc == nil {
		return a
	}
	if len(a.strategies) == 0 {
		a.strategies = rc.Strategies
	}
	if len(a.respondents) == 0 {
		a.respondents = rc.Respondents
	}
	if a.samples == 0 {
		a.samples = rc.Samples
	}
	if rc.Parallel > 0 {
		a.parallel = rc.Parallel
	}
	return a
}

func judgeCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "judge",
		Usage: "compare the answers of two strategies pairwise with an LLM judge",
		Description: `For every pair A:B (respond variants, e.g. gated-reset:ao) and every turn both
answered, the judge role says which answer is better on quality (handles the
latest user message clearly and correctly) and on_topic (stays on the
conversation's thread): A, B or tie, with a one-sentence justification and a
confidence.

--order both   judge each comparison in both orders; a win counts only when it
               wins in both, otherwise it is a tie (default)
--order random show A first or second as drawn from --seed (recorded per verdict)
--context      full (the dataset's own history), user_only (system and user
               turns only) or final_answer_only (reasoning traces stripped)

Identical answers are a tie without a call. A verdict that stays malformed
fails its unit with the raw answer kept.

Examples:
   ac3 judge --db run.db --config run.yaml --pairs gated-reset:ao,fc:ao
   ac3 judge --db run.db --pairs fc:ao --order random --seed 7 --context user_only`,
		Flags: append(llmFlags(), dbFlag,
			&cli.StringSliceFlag{Name: "pairs", Usage: "A:B pairs of respond variants (default: stages.judge.pairs)"},
			&cli.StringFlag{Name: "order", Usage: "both | random (default both)"},
			&cli.StringFlag{Name: "context", Usage: "full | user_only | final_answer_only (default full)"},
			&cli.StringFlag{Name: "role", Usage: "the judging role (default judge)"},
			&cli.Int64Flag{Name: "seed", Usage: "seed for random order (default: run.seed)"},
			&cli.IntFlag{Name: "parallel", Value: 4, Usage: "calls in flight per conversation"},
			&cli.IntFlag{Name: "workers", Value: 2, Usage: "conversations in parallel"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the plan and the estimated cost, call nothing"},
		),
		Action: func(c *cli.Context) error {
			s, err := llmSettingsFrom(c, e)
			if err != nil {
				return err
			}
			a := judgeArgs{pairs: splitList(c.StringSlice("pairs")), order: c.String("order"), context: c.String("context"), role: c.String("role"), seed: c.Int64("seed"), parallel: c.Int("parallel"), workers: c.Int("workers")}
			if s.cfg != nil {
				jc, err := s.cfg.judgeSection()
				if err != nil {
					return err
				}
				a = a.withConfig(jc)
				if !c.IsSet("seed") {
					a.seed = s.cfg.Run.Seed
				}
			}
			if len(a.pairs) == 0 {
				return errors.New("no pairs: pass --pairs A:B,... or give a config with stages.judge.pairs")
			}
			l, err := openRun(c.Context, c, c.Bool("dry-run"))
			if err != nil {
				return err
			}
			defer l.Close()
			if c.Bool("dry-run") {
				return dryRunRespondJudgeArgs(c.Context, e.stdout, l, s.cfg, e.getenv, nil, &a)
			}
			_, err = runJudge(c.Context, e, l, s, a)
			return err
		},
	}
}

func (a judgeArgs) withConfig(jc *judgeConfig) judgeArgs {
	if jc == nil {
		return a
	}
	if len(a.pairs) == 0 {
		a.pairs = jc.Pairs
	}
	if a.order == "" {
		a.order = jc.Order
	}
	if a.context == "" {
		a.context = jc.Context
	}
	if a.role == "" {
		a.role = jc.Role
	}
	if jc.Parallel > 0 {
		a.parallel = jc.Parallel
	}
	return a
}

func reportCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "report",
		Usage: "write report.html, report.md and report.json for a run",
		Description: `Reads the run and writes, into --out:

   report.json  every number with its n, interval, test, bootstrap seed, prompt
                versions, models and endpoint names (never keys)
   report.md    the same tables in Markdown, for a paper or a pull request
   report.html  one self-contained page with charts (inline SVG, opens offline):
                win rates with interval bars per pair, turn type and round;
                context tokens per strategy by round; gate-open rates; cost by role

Win rate = (wins + ties/2) / n for strategy A of each pair. Intervals resample
whole conversations (turns of one conversation are correlated); Wilson is given
for reference; the sign test is exact. Small samples are flagged next to the
number, never hidden. The bootstrap seed defaults to the seed the judge ran with.

Examples:
   ac3 report --db run.db --out runs/report/
   ac3 report --db run.db --out out/ --formats md,json --resamples 5000`,
		Flags: []cli.Flag{
			dbFlag,
			&cli.StringFlag{Name: "out", Required: true, Usage: "folder for the report files"},
			&cli.StringSliceFlag{Name: "formats", Usage: "html, md, json (default all)"},
			&cli.IntFlag{Name: "resamples", Usage: "bootstrap resamples (default 2000)"},
			&cli.Uint64Flag{Name: "seed", Usage: "bootstrap seed (default: the run's judge seed)"},
			&cli.Float64Flag{Name: "level", Usage: "confidence level (default 0.95)"},
		},
		Action: func(c *cli.Context) error {
			l, err := openRun(c.Context, c, true)
			if err != nil {
				return err
			}
			defer l.Close()
			opts := report.Options{Resamples: c.Int("resamples"), Level: c.Float64("level")}
			if c.IsSet("seed") {
				opts.Seed = c.Uint64("seed")
			} else if opts.Seed, err = runSeed(c.Context, l); err != nil {
				return err
			}
			return writeReport(c.Context, e, l, c.String("out"), splitList(c.StringSlice("formats")), opts)
		},
	}
}

const seedMeta = "run.seed"

// runSeed is the seed the run's judge recorded (0 when none).
func runSeed(ctx context.Context, l *ledger.Ledger) (uint64, error) {
	v, ok, err := l.Meta(ctx, seedMeta)
	if err != nil || !ok {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("reading the run seed %q: %w", v, err)
	}
	return uint64(n), nil
}

func writeReport(ctx context.Context, e *env, l *ledger.Ledger, out string, formats []string, opts report.Options) error {
	r, err := report.Build(ctx, l, opts)
	if err != nil {
		return fmt.Errorf("building report: %w", err)
	}
	paths, err := report.Write(out, r, formats)
	if err != nil {
		return err
	}
	for _, p := range paths {
		fmt.Fprintf(e.stdout, "wrote %s\n", p)
	}
	return nil
}

// curatedVersions is the curate stage's current plan: strategy → version.
func planVersions(ctx context.Context, l *ledger.Ledger, stage string) (map[string]string, []string, error) {
	plans, err := l.Plans(ctx)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]string{}
	var names []string
	for _, v := range plans[stage] {
		out[v.Name] = v.Version
		names = append(names, v.Name)
	}
	return out, names, nil
}

func respondStage(ctx context.Context, l *ledger.Ledger, client *llm.Client, s llmSettings, getenv func(string) string, a respondArgs) (*respond.Stage, error) {
	cv, curated, err := planVersions(ctx, l, curate.StageName)
	if err != nil {
		return nil, err
	}
	strategies := a.strategies
	if len(strategies) == 0 {
		strategies = curated
	}
	if len(strategies) == 0 {
		return nil, errors.New("nothing curated in this run yet: run 'ac3 curate' first")
	}
	roles := a.respondents
	if len(roles) == 0 {
		roles = []string{respond.DefaultRole}
	}
	samples := a.samples
	var rs []respond.Respondent
	for _, role := range roles {
		r := respond.Respondent{Role: role, Settings: roleSettings(s.cfg, getenv, role)}
		if len(roles) > 1 || role != respond.DefaultRole {
			r.Label = role
		}
		if samples == 0 && s.cfg != nil {
			samples = s.cfg.Roles[role].Samples
		}
		rs = append(rs, r)
	}
	return respond.New(client, l, respond.Options{Strategies: strategies, CurateVersions: cv, Respondents: rs, Samples: samples, Parallel: a.parallel})
}

func judgeStage(ctx context.Context, l *ledger.Ledger, client *llm.Client, s llmSettings, getenv func(string) string, a judgeArgs) (*judge.Stage, error) {
	rv, _, err := planVersions(ctx, l, respond.StageName)
	if err != nil {
		return nil, err
	}
	var pairs []judge.Pair
	for _, p := range a.pairs {
		pr, err := judge.ParsePair(p)
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, pr)
	}
	role := cmpOr(a.role, judge.DefaultRole)
	return judge.New(client, l, judge.Options{
		Pairs: pairs, Context: a.context, Order: a.order, Seed: a.seed, RespondVersions: rv,
		Role: role, Settings: roleSettings(s.cfg, getenv, role), Parallel: a.parallel,
	})
}

func runRespond(ctx context.Context, e *env, l *ledger.Ledger, s llmSettings, a respondArgs) (bool, error) {
	lr, err := newLLM(ctx, e, l, s, nil)
	if errors.Is(err, ErrNoEndpoint) {
		fmt.Fprintf(e.stdout, "respond: skipped, it needs a model: %v\n", err)
		return true, nil
	}
	if err != nil {
		return false, err
	}
	st, err := respondStage(ctx, l, lr.client, s, e.getenv, a)
	if err != nil {
		return false, err
	}
	return runStage(ctx, e, l, st.Name(), st, a.workers, false)
}

func runJudge(ctx context.Context, e *env, l *ledger.Ledger, s llmSettings, a judgeArgs) (bool, error) {
	lr, err := newLLM(ctx, e, l, s, nil)
	if errors.Is(err, ErrNoEndpoint) {
		fmt.Fprintf(e.stdout, "judge: skipped, it needs a model: %v\n", err)
		return true, nil
	}
	if err != nil {
		return false, err
	}
	st, err := judgeStage(ctx, l, lr.client, s, e.getenv, a)
	if err != nil {
		return false, err
	}
	if err := l.SetMeta(ctx, seedMeta, strconv.FormatInt(a.seed, 10)); err != nil {
		return false, err
	}
	return runStage(ctx, e, l, st.Name(), st, a.workers, false)
}

// runRespondJudgeFromConfig runs respond and judge as a config lists them.
// It reports false when the run was stopped before the end.
func runRespondJudgeFromConfig(ctx context.Context, e *env, l *ledger.Ledger, cfg *config) (bool, error) {
	rc, err := cfg.respondSection()
	if err != nil {
		return false, err
	}
	jc, err := cfg.judgeSection()
	if err != nil {
		return false, err
	}
	s := llmSettings{cfg: cfg, budgetUSD: cfg.Run.BudgetUSD}
	if rc != nil {
		a := respondArgs{workers: cfg.Run.Workers}.withConfig(rc)
		fmt.Fprintf(e.stdout, "== respond (%s)\n", strings.Join(a.strategies, ","))
		if done, err := runRespond(ctx, e, l, s, a); err != nil || !done {
			return false, err
		}
	}
	if jc != nil {
		a := judgeArgs{workers: cfg.Run.Workers, seed: cfg.Run.Seed}.withConfig(jc)
		fmt.Fprintf(e.stdout, "== judge (%s, order %s)\n", strings.Join(a.pairs, ","), cmpOr(a.order, judge.OrderBoth))
		if done, err := runJudge(ctx, e, l, s, a); err != nil || !done {
			return false, err
		}
	}
	return true, nil
}

// runReportFromConfig writes the report when the config has a report section.
func runReportFromConfig(ctx context.Context, e *env, l *ledger.Ledger, cfg *config) error {
	rc, err := cfg.reportSection()
	if err != nil || rc == nil {
		return err
	}
	out := cfg.Run.Out
	if out == "" {
		return errors.New("report: set run.out, the folder the report is written to")
	}
	fmt.Fprintf(e.stdout, "== report (%s)\n", out)
	opts := report.Options{Seed: uint64(cfg.Run.Seed), Resamples: rc.Bootstrap.Resamples, Level: rc.Level, MinN: rc.MinN, MinConversations: rc.MinConvs}
	return writeReport(ctx, e, l, out, rc.Formats, opts)
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// dryRunRespondJudge prints the respond and judge plan of cfg with unit
// counts and a cost estimate, calling nothing and changing nothing. l may be
// nil (the run does not exist yet): the input files are then read to count
// turns and estimate context sizes.
func dryRunRespondJudge(ctx context.Context, w io.Writer, l *ledger.Ledger, cfg *config) error {
	rc, err := cfg.respondSection()
	if err != nil {
		return err
	}
	jc, err := cfg.judgeSection()
	if err != nil {
		return err
	}
	var ra *respondArgs
	var ja *judgeArgs
	if rc != nil {
		a := respondArgs{}.withConfig(rc)
		ra = &a
	}
	if jc != nil {
		a := judgeArgs{seed: cfg.Run.Seed}.withConfig(jc)
		ja = &a
	}
	if ra == nil && ja == nil {
		return nil
	}
	return dryRunRespondJudgeArgs(ctx, w, l, cfg, os.Getenv, ra, ja)
}

// turnKey names one user turn of one conversation.
type turnKey struct {
	conv string
	turn int
}

// Completion sizes assumed for the estimate when the role sets no
// max_tokens; judge verdicts are short.
const (
	assumedAnswerTokens  = 512
	assumedVerdictTokens = 300
	judgeTemplateTokens  = 450
)

func dryRunRespondJudgeArgs(ctx context.Context, w io.Writer, l *ledger.Ledger, cfg *config, getenv func(string) string, ra *respondArgs, ja *judgeArgs) error {
	counter, err := tokens.New(tokens.DefaultEncoding)
	if err != nil {
		return err
	}
	from := curate.DefaultFrom
	var curated []string
	if cfg != nil && cfg.Stages.Curate != nil {
		from = max(cfg.Stages.Curate.FromTurn, 1)
		curated = cfg.Stages.Curate.Strategies
	}
	// Full-context size of every turn: the upper bound for any strategy not
	// curated yet.
	fc, source, err := estimateFullContexts(ctx, l, cfg, counter, from)
	if err != nil {
		return err
	}
	exact := map[string]map[turnKey]int{}
	if l != nil {
		cv, _, err := planVersions(ctx, l, curate.StageName)
		if err != nil {
			return err
		}
		for name, ver := range cv {
			m := map[turnKey]int{}
			err := l.Units(ctx, curate.StageName, []ledger.Variant{{Name: name, Version: ver}}, 0, 1<<62, func(u ledger.Unit) error {
				if u.Status == ledger.Done {
					m[turnKey{u.ConvID, u.Turn}] = int(u.Tokens)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if len(m) > 0 {
				exact[name] = m
			}
		}
	}
	contexts := func(strategy string) (map[turnKey]int, bool) {
		if m, ok := exact[strategy]; ok {
			return m, true
		}
		return fc, false
	}
	s := llmSettings{cfg: cfg}
	price := func(role string) (llm.Price, string) {
		if cfg == nil {
			return llm.Price{}, "no config: price unknown"
		}
		r, ok := cfg.Roles[role]
		if !ok {
			return llm.Price{}, "role not configured: price unknown"
		}
		m := cfg.Models[r.Model]
		return llm.Price{Input: m.Price.Input, CachedInput: m.Price.Cached, Output: m.Price.Output}, r.Model
	}
	maxTokens := func(role string, def int) int {
		if cfg != nil {
			if r, ok := cfg.Roles[role]; ok && r.MaxTokens != nil && *r.MaxTokens > 0 {
				return *r.MaxTokens
			}
		}
		return def
	}
	fmt.Fprintf(w, "   (context sizes: %s)\n", source)
	var totalCalls int64
	var totalUSD float64
	samples := 1
	answerTk := assumedAnswerTokens
	if ra != nil {
		strategies := ra.strategies
		if len(strategies) == 0 {
			strategies = curated
		}
		roles := ra.respondents
		if len(roles) == 0 {
			roles = []string{respond.DefaultRole}
		}
		samples = max(ra.samples, 1)
		if ra.samples == 0 && cfg != nil {
			samples = max(cfg.Roles[roles[0]].Samples, 1)
		}
		done := map[string]map[turnKey]bool{}
		if l != nil {
			if st, err := respondStage(ctx, l, nil, s, getenv, *ra); err == nil {
				done = doneUnits(ctx, l, respond.StageName, st.Variants())
			}
		}
		fmt.Fprintf(w, "respond: strategies %s, %d sample(s), roles %s\n", strings.Join(strategies, ","), samples, strings.Join(roles, ","))
		for _, role := range roles {
			p, model := price(role)
			answerTk = maxTokens(role, assumedAnswerTokens)
			for _, stg := range strategies {
				name := stg
				if len(roles) > 1 || role != respond.DefaultRole {
					name = respond.VariantName(stg, role)
				}
				m, isExact := contexts(stg)
				var n, promptTk int64
				for k, t := range m {
					if done[name][k] {
						continue
					}
					n++
					promptTk += int64(t)
				}
				calls := n * int64(samples)
				usd := llm.EstimateCost(p, int(promptTk)*samples, int(calls)*answerTk)
				totalCalls += calls
				totalUSD += usd
				kind := "exact"
				if !isExact {
					kind = "upper bound, not curated yet"
				}
				fmt.Fprintf(w, "   %-16s %d contexts pending, %d done → %d calls, %d prompt tokens (%s), ≤%d completion tokens each, ~$%.4f (%s)\n",
					name, n, len(done[name]), calls, promptTk*int64(samples), kind, answerTk, usd, model)
			}
		}
	}
	if ja != nil {
		role := cmpOr(ja.role, judge.DefaultRole)
		order := cmpOr(ja.order, judge.OrderBoth)
		perCmp := int64(1)
		if order == judge.OrderBoth {
			perCmp = 2
		}
		p, model := price(role)
		verdictTk := maxTokens(role, assumedVerdictTokens)
		done := map[string]map[turnKey]bool{}
		if l != nil {
			if st, err := judgeStage(ctx, l, nil, s, getenv, *ja); err == nil {
				done = doneUnits(ctx, l, judge.StageName, st.Variants())
			}
		}
		fmt.Fprintf(w, "judge: pairs %s, order %s, context %s, role %s\n", strings.Join(ja.pairs, ","), order, cmpOr(ja.context, judge.ContextFull), role)
		for _, ps := range ja.pairs {
			pr, err := judge.ParsePair(ps)
			if err != nil {
				return err
			}
			ma, _ := contexts(strings.SplitN(pr.A, "@", 2)[0])
			mb, _ := contexts(strings.SplitN(pr.B, "@", 2)[0])
			name := judge.VariantName(pr, ja.context)
			var n, promptTk int64
			for k := range ma {
				if _, ok := mb[k]; !ok || done[name][k] {
					continue
				}
				n++
				promptTk += int64(fc[k] + 2*answerTk + judgeTemplateTokens)
			}
			calls := n * int64(samples) * perCmp
			usd := llm.EstimateCost(p, int(promptTk*int64(samples)*perCmp), int(calls)*verdictTk)
			totalCalls += calls
			totalUSD += usd
			fmt.Fprintf(w, "   %-24s %d turns pending, %d done → %d calls, ~%d prompt tokens, ~$%.4f (%s)\n", name, n, len(done[name]), calls, promptTk*int64(samples)*perCmp, usd, model)
		}
	}
	fmt.Fprintf(w, "   respond + judge: %d model calls, estimated cost $%.4f (completions counted at max_tokens or %d/%d tokens; cache hits would cost nothing)\n", totalCalls, totalUSD, assumedAnswerTokens, assumedVerdictTokens)
	return nil
}

// doneUnits lists the (conversation, turn) units recorded done per variant.
func doneUnits(ctx context.Context, l *ledger.Ledger, stage string, vs []pipeline.Variant) map[string]map[turnKey]bool {
	out := map[string]map[turnKey]bool{}
	for _, v := range vs {
		m := map[turnKey]bool{}
		_ = l.Units(ctx, stage, []ledger.Variant{ledger.Variant(v)}, 0, 1<<62, func(u ledger.Unit) error {
			if u.Status == ledger.Done {
				m[turnKey{u.ConvID, u.Turn}] = true
			}
			return nil
		})
		out[v.Name] = m
	}
	return out
}

// estimateFullContexts returns the full-context size of every turn from
// `from` on, from the run's conversations when it has any, else from the
// config's input files read through the same filters ingest uses.
func estimateFullContexts(ctx context.Context, l *ledger.Ledger, cfg *config, counter *tokens.Counter, from int) (map[turnKey]int, string, error) {
	out := map[turnKey]int{}
	add := func(c *conv.Conversation) {
		msgs := 3
		if c.System != "" {
			msgs += 4 + counter.Count(c.System)
		}
		sizes := make([]int, len(c.Messages))
		for i, m := range c.Messages {
			sizes[i] = 4 + counter.Count(m.Content)
		}
		for _, t := range c.Turns() {
			if t.Index < from {
				continue
			}
			n := msgs
			for i := 0; i <= t.User; i++ {
				n += sizes[i]
			}
			out[turnKey{c.ID, t.Index}] = n
		}
	}
	if l != nil {
		var after int64
		for {
			page, err := l.ConversationPage(ctx, after, 512)
			if err != nil {
				return nil, "", err
			}
			if len(page) == 0 {
				break
			}
			for _, s := range page {
				add(s.Conv)
			}
			after = page[len(page)-1].Seq
		}
		if len(out) > 0 {
			return out, "counted on the run's conversations; curated strategies use their recorded sizes", nil
		}
	}
	if cfg == nil || len(cfg.Input.Files) == 0 {
		return out, "no conversations yet", nil
	}
	keep, err := keepFunc(cfg.filterSettings())
	if err != nil {
		return nil, "", err
	}
	open := opener(cfg.Input.Format, cfg.Input.MaxLineBytes)
	seen := map[string]bool{}
	for _, f := range cfg.Input.Files {
		rd, _, err := open(ctx, f)
		if err != nil {
			return nil, "", fmt.Errorf("reading %s for the estimate: %w", f, err)
		}
		for {
			rec, err := rd.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rd.Close()
				return nil, "", fmt.Errorf("reading %s for the estimate: %w", f, err)
			}
			if rec.Conv == nil {
				continue
			}
			if ok, _ := keep(rec.Conv); !ok {
				continue
			}
			if cfg.Input.Filter.Dedupe {
				h := rec.Conv.ContentHash()
				if seen[h] {
					continue
				}
				seen[h] = true
			}
			add(rec.Conv)
		}
		rd.Close()
	}
	return out, "read from the input files with the config's filters; full-context size used for every strategy", nil
}
