package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/tokens"
)

// llmFlags are shared by every command that may call a model.
func llmFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "config file with endpoints, models and roles (default: OPENAI_BASE_URL / OPENAI_API_KEY / OPENAI_MODEL for every role)"},
		&cli.BoolFlag{Name: "no-cache", Usage: "neither read nor write the run's answer cache (every call is paid again)"},
		&cli.Float64Flag{Name: "budget-usd", Usage: "stop taking new work before spend (so far plus in flight) would pass this many dollars"},
	}
}

// llmSettings is what a model-backed command needs to build its client.
type llmSettings struct {
	cfg       *config // nil: environment only
	noCache   bool
	budgetUSD float64
}

func llmSettingsFrom(c *cli.Context, e *env) (llmSettings, error) {
	s := llmSettings{noCache: c.Bool("no-cache"), budgetUSD: c.Float64("budget-usd")}
	if p := c.String("config"); p != "" {
		cfg, err := loadConfig(p, e.getenv)
		if err != nil {
			return s, err
		}
		s.cfg = cfg
		if s.budgetUSD == 0 {
			s.budgetUSD = cfg.Run.BudgetUSD
		}
	}
	return s, nil
}

// ErrNoEndpoint means no model endpoint is configured; model-backed stages
// are then skipped with one line saying what to set.
var ErrNoEndpoint = errors.New("no model endpoint configured: set OPENAI_BASE_URL and OPENAI_API_KEY (and OPENAI_MODEL), or give --config with endpoints, models and roles")

// llmOptions turns the config (or the environment) into client options
// without cache, recorder or budget.
func llmOptions(cfg *config, getenv func(string) string) (llm.Options, error) {
	var opts llm.Options
	if cfg == nil || len(cfg.Models) == 0 {
		ep, ok := llm.DefaultFromEnv(getenv)
		if !ok {
			return opts, ErrNoEndpoint
		}
		opts.Endpoints = []llm.Endpoint{ep}
		if cfg != nil {
			opts.Roles = map[string]llm.RoleBinding{}
			for name, r := range cfg.Roles {
				opts.Roles[name] = llm.RoleBinding{Endpoint: ep.Name, Params: r.params()}
			}
		}
		return opts, nil
	}
	names := make([]string, 0, len(cfg.Models))
	for n := range cfg.Models {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		m := cfg.Models[name]
		ec := cfg.Endpoints[m.Endpoint]
		ep := llm.Endpoint{
			Name: name, BaseURL: ec.BaseURL, APIKeyEnv: ec.APIKeyEnv, APIKeyHeader: ec.APIKeyHeader,
			Headers: ec.Headers, Query: ec.Query, Model: m.Name, MaxTokensField: ec.MaxTokensField,
			JSONMode: llm.JSONMode(ec.JSONMode), MaxAttempts: ec.MaxAttempts,
			Limits: llm.Limits{Concurrency: ec.Limits.Concurrency, RPM: ec.Limits.RPM, TPM: ec.Limits.TPM},
			Price:  llm.Price{Input: m.Price.Input, CachedInput: m.Price.Cached, Output: m.Price.Output},
		}
		if ep.Model == "" {
			ep.Model = name
		}
		if m.Limits != nil {
			ep.Limits = llm.Limits{Concurrency: m.Limits.Concurrency, RPM: m.Limits.RPM, TPM: m.Limits.TPM}
		}
		if ec.APIKeyEnv != "" {
			ep.APIKey = llm.Secret(getenv(ec.APIKeyEnv))
		}
		if ec.Timeout != "" {
			ep.Timeout, _ = time.ParseDuration(ec.Timeout) // validated at load
		}
		opts.Endpoints = append(opts.Endpoints, ep)
	}
	opts.Roles = map[string]llm.RoleBinding{}
	for name, r := range cfg.Roles {
		opts.Roles[name] = llm.RoleBinding{Endpoint: r.Model, Params: r.params()}
	}
	return opts, nil
}

func (r roleConfig) params() llm.Params {
	return llm.Params{Temperature: r.Temperature, TopP: r.TopP, MaxTokens: r.MaxTokens, Seed: r.Seed, Stop: r.Stop, ReasoningEffort: r.ReasoningEffort, Extra: r.Extra}
}

// llmRun is a client wired to a run: answers cached in the ledger, every call
// recorded, spend capped, events counted for the progress line.
type llmRun struct {
	client  *llm.Client
	budget  *llm.Budget
	retries atomic.Int64
	limited atomic.Int64
}

// newLLM builds the client for a run. It returns ErrNoEndpoint when nothing
// is configured.
func newLLM(ctx context.Context, e *env, l *ledger.Ledger, s llmSettings, counter *tokens.Counter) (*llmRun, error) {
	opts, err := llmOptions(s.cfg, e.getenv)
	if err != nil {
		return nil, err
	}
	r := &llmRun{}
	if l != nil {
		opts.Cache, opts.Recorder = l.LLMCache(), l.LLMRecorder()
		spent, err := l.SpendUSD(ctx)
		if err != nil {
			return nil, err
		}
		if s.budgetUSD > 0 {
			r.budget = llm.NewBudget(s.budgetUSD, spent)
			opts.Budget = r.budget
		}
	}
	opts.NoCache = s.noCache
	if counter != nil {
		opts.Estimate = counter.Count
	}
	opts.OnEvent = func(ev llm.Event) {
		switch ev.Kind {
		case llm.EventRetry:
			r.retries.Add(1)
		case llm.EventRateLimited:
			r.limited.Add(1)
		case llm.EventBreakerOpen, llm.EventFatal:
			fmt.Fprintf(e.stderr, "\n%s: %s %s\n", ev.Endpoint, ev.Kind, ev.Err)
		}
	}
	r.client, err = llm.New(opts)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func llmCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "llm",
		Usage: "check model endpoints",
		Subcommands: []*cli.Command{{
			Name:  "ping",
			Usage: "send one tiny request for a role and show latency, model, usage and rate-limit headers",
			Description: `Sends one short chat request through the same limits and retries as a run
(never from the cache) and prints what came back. Use it to check a key, a model
name and the limits a provider reports before starting a long job.

Examples:
   OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_MODEL=qwen3-8b ac3 llm ping
   ac3 llm ping --config run.yaml --role judge`,
			Flags: append(llmFlags(), &cli.StringFlag{Name: "role", Value: "judge", Usage: "annotator | analyzer | respondent | judge"}),
			Action: func(c *cli.Context) error {
				s, err := llmSettingsFrom(c, e)
				if err != nil {
					return err
				}
				r, err := newLLM(c.Context, e, nil, s, nil)
				if err != nil {
					return err
				}
				res, err := r.client.Ping(c.Context, c.String("role"))
				if err != nil {
					return fmt.Errorf("pinging role %s: %w", c.String("role"), err)
				}
				printPing(e, c.String("role"), res)
				return nil
			},
		}},
	}
}

func printPing(e *env, role string, res llm.PingResult) {
	w := e.stdout
	fmt.Fprintf(w, "role %s → %s\n", role, res.Endpoint)
	fmt.Fprintf(w, "model:    %s\n", res.Model)
	fmt.Fprintf(w, "latency:  %s (%d attempt(s))\n", res.Latency.Round(time.Millisecond), res.Attempts)
	fmt.Fprintf(w, "usage:    %d prompt + %d completion tokens", res.Usage.Prompt, res.Usage.Completion)
	if res.Usage.CachedPrompt > 0 || res.Usage.Reasoning > 0 {
		fmt.Fprintf(w, " (%d cached, %d reasoning)", res.Usage.CachedPrompt, res.Usage.Reasoning)
	}
	fmt.Fprintf(w, ", $%.6f\n", res.CostUSD)
	fmt.Fprintf(w, "answer:   %q\n", clip(res.Text, 120))
	keys := make([]string, 0, len(res.Headers))
	for k := range res.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		fmt.Fprintln(w, "rate-limit headers: none returned")
		return
	}
	fmt.Fprintln(w, "rate-limit headers:")
	for _, k := range keys {
		fmt.Fprintf(w, "  %s: %s\n", strings.ToLower(k), strings.Join(http.Header(res.Headers).Values(k), ", "))
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
