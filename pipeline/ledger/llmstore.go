package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ac3/ac3/pipeline/llm"
)

// LLMCache returns the run's model-answer cache. Put commits before it
// returns, so an answer that was paid for is on disk before the caller uses
// it: after a crash the same request is answered from here, never re-sent.
func (l *Ledger) LLMCache() llm.Cache { return llmCache{l} }

type llmCache struct{ l *Ledger }

func (c llmCache) Get(ctx context.Context, key string) (_ llm.CachedResponse, _ bool, err error) {
	defer c.l.classify(&err)
	var b []byte
	err = c.l.r.QueryRowContext(ctx, `SELECT response FROM llm_cache WHERE key = ?`, key).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return llm.CachedResponse{}, false, nil
	}
	if err != nil {
		return llm.CachedResponse{}, false, fmt.Errorf("reading cached answer: %w", err)
	}
	var r llm.CachedResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return llm.CachedResponse{}, false, c.l.damaged("decoding cached answer %s: %w", key, err)
	}
	return r, true, nil
}

func (c llmCache) Put(ctx context.Context, key string, r llm.CachedResponse) (err error) {
	defer c.l.classify(&err)
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	// Committed with the other answers and call rows arriving at the same
	// moment, and not cancellable: the call is paid for, so its answer must
	// be kept even if the run is being stopped.
	err = c.l.group.exec(ctx, `INSERT OR REPLACE INTO llm_cache (key, response, created) VALUES (?, ?, ?)`,
		[]any{key, b, time.Now().UTC().Format(time.RFC3339)}, nil)
	if err != nil {
		return fmt.Errorf("storing answer in the cache: %w", err)
	}
	return nil
}

// LLMRecorder returns a recorder that stores one row per model call, which
// status and the report sum by role, model and stage.
func (l *Ledger) LLMRecorder() llm.Recorder { return llmRecorder{l} }

type llmRecorder struct{ l *Ledger }

func (r llmRecorder) Record(ctx context.Context, c llm.CallRecord) (err error) {
	defer r.l.classify(&err)
	// The group commit holds spendMu from before the row is written until
	// after the running total has its cost, so the two never disagree with
	// a SpendUSD summing at the same moment.
	err = r.l.group.exec(ctx, `INSERT INTO llm_calls (role, stage, endpoint, model, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_usd, latency_ms, attempts, status, error, from_cache, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		[]any{c.Role, c.Stage, c.Endpoint, c.Model, c.Usage.Prompt, c.Usage.Completion, c.Usage.CachedPrompt, c.Usage.Reasoning, c.CostUSD, c.Latency.Milliseconds(), c.Attempts, c.Status, c.Error, c.FromCache, c.Time.UTC().Format(time.RFC3339Nano)},
		func() {
			if r.l.spendKnown { // otherwise the first SpendUSD sums the table, this row included
				r.l.spend += c.CostUSD
			}
		})
	if err != nil {
		return fmt.Errorf("recording model call: %w", err)
	}
	return nil
}

// SpendUSD is what the run's model calls have cost so far, for seeding a
// budget when a run resumes.
func (l *Ledger) SpendUSD(ctx context.Context) (_ float64, err error) {
	defer l.classify(&err)
	l.spendMu.Lock()
	defer l.spendMu.Unlock()
	if !l.spendKnown {
		// Summed once per open run; Record keeps it current from then on.
		if err := l.r.QueryRowContext(ctx, `SELECT coalesce(sum(cost_usd), 0) FROM llm_calls`).Scan(&l.spend); err != nil {
			return 0, fmt.Errorf("summing spend: %w", err)
		}
		l.spendKnown = true
	}
	return l.spend, nil
}
