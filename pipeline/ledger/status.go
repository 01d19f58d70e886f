package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Status is where a run stands. Its JSON form is what `ac3 status --json`
// prints; fields are only ever added, never renamed or removed.
type Status struct {
	Path string `json:"path"`
	// Shard is the run's shard identity: which of how many shards this run
	// file holds, or (index -1) how many it was merged from; absent for a
	// run of its own.
	Shard         *ShardInfo    `json:"shard,omitempty"`
	Inputs        []InputStatus `json:"inputs"`
	Conversations int64         `json:"conversations"`
	// Origins counts the conversations per origin: "source" for ingested
	// ones, and one entry per step that derived conversations.
	Origins      map[string]int64 `json:"origins"`
	Dropped      map[string]int64 `json:"dropped"`
	DroppedTotal int64            `json:"dropped_total"`
	Quarantined  map[string]int64 `json:"quarantined"`
	QuarantTotal int64            `json:"quarantined_total"`
	Stages       []StageStatus    `json:"stages"`
	LLM          []LLMUsage       `json:"llm"`
	SpendUSD     float64          `json:"spend_usd"`
	// Batches groups the run's batches by state; BatchRequests counts the
	// requests of roles in batch mode by state (queued, submitted, done,
	// online, failed). Both are absent for a run that never used batches.
	Batches       []BatchGroup     `json:"batches,omitempty"`
	BatchRequests map[string]int64 `json:"batch_requests,omitempty"`
	// Languages counts the conversations by language, and how many had
	// it identified rather than from their input (see Languages).
	Languages []LanguageCount `json:"languages,omitempty"`

	// NearDuplicates is the first few pairs of conversations dropped as
	// near duplicates (dropped["near_duplicate"] counts them all).
	NearDuplicates []NearPair `json:"near_duplicates,omitempty"`
}

// BatchGroup sums the batches in one state (and endpoint status).
type BatchGroup struct {
	State        string    `json:"state"`
	RemoteStatus string    `json:"remote_status"`
	Fallback     string    `json:"fallback"`
	Batches      int64     `json:"batches"`
	Requests     int64     `json:"requests"`
	Completed    int64     `json:"completed"`
	Failed       int64     `json:"failed"`
	Imported     int64     `json:"imported"`
	Oldest       time.Time `json:"oldest"` // when the oldest was created
}

// InputStatus is one input file's progress.
type InputStatus struct {
	Path     string `json:"path"`
	Format   string `json:"format"`
	Records  int64  `json:"records"`
	Finished bool   `json:"finished"`
}

// StageStatus counts the tasks and units of one stage variant at its current
// version. Pending is the number of conversations with no recorded task
// (never attempted); Failures groups the failed units by reason, most
// frequent first.
type StageStatus struct {
	Stage       string         `json:"stage"`
	Variant     string         `json:"variant"`
	Version     string         `json:"version"`
	Done        int64          `json:"done"`
	Failed      int64          `json:"failed"`
	Pending     int64          `json:"pending"`
	UnitsDone   int64          `json:"units_done"`
	UnitsFailed int64          `json:"units_failed"`
	Failures    []FailureGroup `json:"failures"`
}

// LLMUsage sums model calls per role, model and stage.
type LLMUsage struct {
	Role             string  `json:"role"`
	Model            string  `json:"model"`
	Stage            string  `json:"stage"`
	Calls            int64   `json:"calls"`
	CacheHits        int64   `json:"cache_hits"`
	Failed           int64   `json:"failed"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	CachedTokens     int64   `json:"cached_tokens"`
	ReasoningTokens  int64   `json:"reasoning_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	// SentPromptTokens are the prompt tokens of the calls sent to the
	// endpoint (not answered from the run's answer cache), and
	// SentCachedTokens the part of them the endpoint's prompt cache served:
	// what the provider billed, and at which price.
	SentPromptTokens int64 `json:"sent_prompt_tokens"`
	SentCachedTokens int64 `json:"sent_cached_tokens"`
}

// CachedShare is the share of the prompt tokens sent to the endpoint that
// its prompt cache served (0 when none were sent).
func (u LLMUsage) CachedShare() float64 {
	if u.SentPromptTokens <= 0 {
		return 0
	}
	return float64(u.SentCachedTokens) / float64(u.SentPromptTokens)
}

const planKey = "plan."

// SetPlan records the variants a stage was last asked to run, so status can
// count what is pending even for variants that have no task yet.
func (l *Ledger) SetPlan(ctx context.Context, stage string, variants []Variant) (err error) {
	defer l.classify(&err)
	b, err := json.Marshal(variants)
	if err != nil {
		return err
	}
	return l.SetMeta(ctx, planKey+stage, string(b))
}

// Plans returns every stage's last recorded plan, by stage name.
func (l *Ledger) Plans(ctx context.Context) (_ map[string][]Variant, err error) {
	defer l.classify(&err)
	rows, err := l.r.QueryContext(ctx, `SELECT key, value FROM run_meta WHERE key LIKE 'plan.%' ORDER BY key`)
	if err != nil {
		return nil, fmt.Errorf("reading plans: %w", err)
	}
	defer rows.Close()
	out := map[string][]Variant{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		var vs []Variant
		if err := json.Unmarshal([]byte(v), &vs); err != nil {
			return nil, l.damaged("reading plan %s: %w", k, err)
		}
		out[k[len(planKey):]] = vs
	}
	return out, rows.Err()
}

// Status reads where the run stands.
func (l *Ledger) Status(ctx context.Context) (_ Status, err error) {
	defer l.classify(&err)
	st := Status{Path: l.path, Dropped: map[string]int64{}, Quarantined: map[string]int64{}, Inputs: []InputStatus{}, Stages: []StageStatus{}, LLM: []LLMUsage{}}
	ins, err := l.Inputs(ctx)
	if err != nil {
		return st, err
	}
	for _, in := range ins {
		st.Inputs = append(st.Inputs, InputStatus{Path: in.Path, Format: in.Format, Records: in.RecordsDone, Finished: in.Finished})
	}
	if sh, ok, err := l.Shard(ctx); err != nil {
		return st, err
	} else if ok {
		st.Shard = &sh
	}
	if st.Origins, err = l.OriginCounts(ctx); err != nil {
		return st, err
	}
	for _, n := range st.Origins {
		st.Conversations += n
	}
	if err := l.sumBy(ctx, `SELECT reason, sum(count) FROM drops GROUP BY reason`, st.Dropped, &st.DroppedTotal); err != nil {
		return st, fmt.Errorf("counting drops: %w", err)
	}
	if st.Dropped[DropNearDuplicate] > 0 {
		if st.NearDuplicates, err = l.NearDuplicatePage(ctx, 0, statusNearPairs); err != nil {
			return st, err
		}
	}
	if err := l.sumBy(ctx, `SELECT reason, count(*) FROM quarantine GROUP BY reason`, st.Quarantined, &st.QuarantTotal); err != nil {
		return st, fmt.Errorf("counting quarantine: %w", err)
	}
	if st.Stages, err = l.progress(ctx, st.Conversations); err != nil {
		return st, err
	}
	if st.Languages, err = l.Languages(ctx); err != nil {
		return st, err
	}
	rows, err := l.r.QueryContext(ctx, `SELECT role, model, stage, count(*), sum(from_cache), sum(status IN ('failed', 'fatal')), sum(prompt_tokens), sum(completion_tokens), sum(cached_tokens), sum(reasoning_tokens), sum(cost_usd), sum(CASE WHEN from_cache THEN 0 ELSE prompt_tokens END), sum(CASE WHEN from_cache THEN 0 ELSE cached_tokens END) FROM llm_calls GROUP BY role, model, stage ORDER BY role, model, stage`)
	if err != nil {
		return st, fmt.Errorf("summing model calls: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var u LLMUsage
		if err := rows.Scan(&u.Role, &u.Model, &u.Stage, &u.Calls, &u.CacheHits, &u.Failed, &u.PromptTokens, &u.CompletionTokens, &u.CachedTokens, &u.ReasoningTokens, &u.CostUSD, &u.SentPromptTokens, &u.SentCachedTokens); err != nil {
			return st, err
		}
		st.SpendUSD += u.CostUSD
		st.LLM = append(st.LLM, u)
	}
	if err := rows.Err(); err != nil {
		return st, err
	}
	return st, l.batchStatus(ctx, &st)
}

func (l *Ledger) batchStatus(ctx context.Context, st *Status) error {
	bs, err := l.Batches(ctx, false)
	if err != nil {
		return err
	}
	idx := map[[3]string]int{}
	for _, b := range bs {
		k := [3]string{b.State, b.RemoteStatus, b.Fallback}
		i, ok := idx[k]
		if !ok {
			i = len(st.Batches)
			idx[k] = i
			st.Batches = append(st.Batches, BatchGroup{State: b.State, RemoteStatus: b.RemoteStatus, Fallback: b.Fallback, Oldest: b.Created})
		}
		g := &st.Batches[i]
		g.Batches++
		g.Requests += b.Requests
		g.Completed += b.Completed
		g.Failed += b.Failed
		g.Imported += b.Imported
		if b.Created.Before(g.Oldest) {
			g.Oldest = b.Created
		}
	}
	counts, err := l.BatchRequestCounts(ctx)
	if err != nil {
		return err
	}
	if len(counts) > 0 {
		st.BatchRequests = counts
	}
	return nil
}

func (l *Ledger) sumBy(ctx context.Context, q string, into map[string]int64, total *int64) error {
	rows, err := l.r.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return err
		}
		into[k] = n
		*total += n
	}
	return rows.Err()
}
