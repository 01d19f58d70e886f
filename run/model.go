package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/tokens"
)

// ErrNoEndpoint means no model endpoint is configured; model-backed stages
// are then skipped with one line saying what to set.
var ErrNoEndpoint = errors.New("no model endpoint configured: set OPENAI_BASE_URL and OPENAI_API_KEY (and OPENAI_MODEL), or give --config with endpoints, models and roles")

// client builds the model client for one step of a run: answers cached in
// the run, every call recorded, spend capped at the plan's budget, breaker
// and fatal events and the early warning of a stage whose answers do not
// parse written to the progress stream. It returns ErrNoEndpoint
// when nothing is configured. l may be nil (a client for a dry run or a
// ping: no cache, no records, no budget).
func (m Model) client(ctx context.Context, l *ledger.Ledger, counter *tokens.Counter, events io.Writer) (*llm.Client, error) {
	if m.Options == nil {
		return nil, ErrNoEndpoint
	}
	opts := *m.Options
	m.batchOptions(&opts)
	batch := m.batchOn() && l != nil
	if l != nil {
		opts.Cache, opts.Recorder = l.LLMCache(), l.LLMRecorder()
		if batch {
			opts.Deferrer = l.BatchQueue()
		}
		if m.BudgetUSD > 0 {
			spent, err := l.SpendUSD(ctx)
			if err != nil {
				return nil, err
			}
			if batch {
				// Requests waiting for a batch hold their estimate.
				waiting, err := l.WaitingBatchUSD(ctx)
				if err != nil {
					return nil, err
				}
				spent += waiting
			}
			opts.Budget = llm.NewBudget(m.BudgetUSD, spent)
		}
	}
	opts.NoCache = m.NoCache
	if counter != nil {
		opts.Estimate = counter.Count
	}
	if events != nil {
		opts.OnEvent = func(ev llm.Event) {
			switch ev.Kind {
			case llm.EventBreakerOpen, llm.EventFatal:
				fmt.Fprintf(events, "\n%s: %s %s\n", ev.Endpoint, ev.Kind, ev.Err)
			case llm.EventUnreachable:
				fmt.Fprintf(events, "\n%s: unreachable (%s); the command stops unless a call succeeds within %s\n", ev.Endpoint, ev.Err, ev.Wait)
			case llm.EventParseFailures:
				fmt.Fprintf(events, "\nwarning: stage %s (role %s, model %s): %d of its first %d answers did not parse (%s); "+
					"check the model and its output setting (tags | json_schema). One answer began: %q\n",
					ev.Stage, ev.Role, ev.Endpoint, ev.Failures, ev.Answers, ev.Err, ev.Example)
			}
		}
	}
	return llm.New(opts)
}

// checkBudget refuses a budget that caps nothing a run could spend.
func (m Model) checkBudget() error {
	if b := m.BudgetUSD; b < 0 || math.IsNaN(b) {
		return fmt.Errorf("budget %v USD (--budget-usd or run.budget_usd): want 0 (no cap) or a positive number of dollars", b)
	}
	return nil
}

// Client builds a client for the plan's models, without the run's cache,
// records or budget (for `ac3 llm ping`).
func (m Model) Client() (*llm.Client, error) { return m.client(context.Background(), nil, nil, nil) }

// roleSettings describes the model and parameters bound to role, for unit
// versions: the model entry, the model's name and the parameters, never an
// endpoint's URL or key. Changing them makes the role's work pending again.
func (m Model) roleSettings(role string) string {
	if m.Options != nil {
		if b, ok := m.Options.Roles[role]; ok {
			for _, ep := range m.Options.Endpoints {
				if ep.Name == b.Endpoint {
					p, _ := json.Marshal(b.Params)
					return b.Endpoint + "=" + ep.Model + string(p)
				}
			}
		}
	}
	if m.EnvModel != "" {
		return m.EnvModel
	}
	return "default"
}

// maxTokens is the max_tokens bound to role, 0 when none.
func (m Model) maxTokens(role string) int {
	if m.Options == nil {
		return 0
	}
	if b, ok := m.Options.Roles[role]; ok && b.Params.MaxTokens != nil {
		return *b.Params.MaxTokens
	}
	return 0
}
