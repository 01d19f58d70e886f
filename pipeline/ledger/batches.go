package ledger

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ac3/ac3/pipeline/llm"
)

// Batch request states (batch_requests.state).
const (
	ReqQueued    = "queued"
	ReqSubmitted = "submitted"
	ReqDone      = "done"
	ReqOnline    = "online"
	ReqFailed    = "failed"
)

// Batch states (batches.state): each is recorded before the step that
// follows it acts.
const (
	BatchPrepared  = "prepared"  // requests assigned, file not yet uploaded
	BatchUploaded  = "uploaded"  // input file id recorded, batch not yet created
	BatchSubmitted = "submitted" // remote batch id recorded, not over
	BatchEnded     = "ended"     // the endpoint says it is over; lines being imported
	BatchImported  = "imported"  // every line settled
)

// Batch is one batch of requests sent to an endpoint's batch API.
type Batch struct {
	ID                    int64
	Endpoint              string
	State                 string
	RemoteStatus          string // as the endpoint last reported it
	InputFile, RemoteID   string
	OutputFile, ErrorFile string
	Requests              int64
	Completed, Failed     int64 // as the endpoint last reported them
	Imported              int64 // answers imported into the cache
	Fallback              string
	Errors                string // why the batch failed, as the endpoint said
	Created, Updated      time.Time
}

// Live reports whether the batch still needs the driver (not imported).
func (b Batch) Live() bool { return b.State != BatchImported }

// BatchRequest is one request of a batch.
type BatchRequest struct {
	Key, Endpoint, Role, Stage, State string
	BatchID                           int64
	Submits                           int
	Status                            int
	Error                             string
}

// BatchQueue returns the run's queue of batch-mode requests, for
// llm.Options.Deferrer.
func (l *Ledger) BatchQueue() llm.Deferrer { return batchQueue{l} }

type batchQueue struct{ l *Ledger }

// Defer queues a request not seen before; a request queued or in a live
// batch is left where it is; a leftover the fallback sends online goes
// online; a leftover that failed fails its call as it would online.
func (q batchQueue) Defer(ctx context.Context, r llm.DeferredRequest) (_ llm.Decision, err error) {
	l := q.l
	defer l.classify(&err)
	now := time.Now().UTC().Format(time.RFC3339)
	ctx = context.WithoutCancel(ctx)
	res, err := l.w.ExecContext(ctx, `INSERT INTO batch_requests (key, endpoint, role, stage, body, est_usd, state, queued) VALUES (?, ?, ?, ?, ?, ?, 'queued', ?) ON CONFLICT (key) DO NOTHING`,
		r.Key, r.Endpoint, r.Role, r.Stage, []byte(r.Body), r.EstimateUSD, now)
	if err != nil {
		return 0, fmt.Errorf("queueing a batch request: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return llm.Deferred, nil
	}
	var state, msg string
	var status int
	if err := l.w.QueryRowContext(ctx, `SELECT state, status, error FROM batch_requests WHERE key = ?`, r.Key).Scan(&state, &status, &msg); err != nil {
		return 0, fmt.Errorf("reading a batch request: %w", err)
	}
	switch state {
	case ReqQueued, ReqSubmitted:
		return llm.Waiting, nil
	case ReqOnline:
		return llm.SendOnline, nil
	case ReqFailed:
		if status == 0 {
			status = http.StatusGatewayTimeout
		}
		return 0, &llm.CallError{Endpoint: r.Endpoint, Status: status, Message: "in a batch: " + msg, Retryable: status >= 500}
	}
	// Done, yet the cache did not answer (the run was made without a
	// cache, or the answer was removed): ask again.
	if _, err := l.w.ExecContext(ctx, `UPDATE batch_requests SET state = 'queued', batch_id = NULL, body = ?, est_usd = ?, submits = 0, status = 0, error = '', queued = ? WHERE key = ?`,
		[]byte(r.Body), r.EstimateUSD, now, r.Key); err != nil {
		return 0, fmt.Errorf("queueing a batch request again: %w", err)
	}
	return llm.Deferred, nil
}

// RunID returns the run's id (made on first use), which batches carry in
// their metadata.
func (l *Ledger) RunID(ctx context.Context) (string, error) {
	id, ok, err := l.Meta(ctx, "run.id")
	if err != nil || ok {
		return id, err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	id = hex.EncodeToString(b[:])
	return id, l.SetMeta(ctx, "run.id", id)
}

// QueuedEndpoints lists the endpoints with queued requests, sorted.
func (l *Ledger) QueuedEndpoints(ctx context.Context) (_ []string, err error) {
	defer l.classify(&err)
	rows, err := l.w.QueryContext(ctx, `SELECT DISTINCT endpoint FROM batch_requests WHERE state = 'queued' ORDER BY endpoint`)
	if err != nil {
		return nil, fmt.Errorf("listing queued batch requests: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// NewBatch assigns queued requests of endpoint, in key order, to a new
// batch in state prepared: as many as fit in maxRequests and in maxBytes
// of input lines, each line's size given by lineSize. It reports false
// when nothing is queued. The batch and its requests are recorded in one
// transaction before anything is sent.
func (l *Ledger) NewBatch(ctx context.Context, endpoint string, maxRequests int, maxBytes int64, fallback string, lineSize func(key string, bodyLen int) int64) (_ Batch, _ bool, err error) {
	defer l.classify(&err)
	tx, err := l.w.BeginTx(ctx, nil)
	if err != nil {
		return Batch{}, false, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT key, length(body) FROM batch_requests WHERE state = 'queued' AND endpoint = ? ORDER BY key LIMIT ?`, endpoint, maxRequests)
	if err != nil {
		return Batch{}, false, fmt.Errorf("choosing requests for a batch: %w", err)
	}
	var keys []string
	var size int64
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			rows.Close()
			return Batch{}, false, err
		}
		s := lineSize(k, n)
		if len(keys) > 0 && size+s > maxBytes {
			break
		}
		keys = append(keys, k)
		size += s
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Batch{}, false, err
	}
	if len(keys) == 0 {
		return Batch{}, false, nil
	}
	now := time.Now().UTC()
	res, err := tx.ExecContext(ctx, `INSERT INTO batches (endpoint, state, requests, fallback, created, updated) VALUES (?, 'prepared', ?, ?, ?, ?)`,
		endpoint, len(keys), fallback, now.Format(time.RFC3339), now.Format(time.RFC3339))
	if err != nil {
		return Batch{}, false, fmt.Errorf("recording a batch: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return Batch{}, false, err
	}
	st, err := tx.PrepareContext(ctx, `UPDATE batch_requests SET state = 'submitted', batch_id = ?, submits = submits + 1 WHERE key = ?`)
	if err != nil {
		return Batch{}, false, err
	}
	defer st.Close()
	for _, k := range keys {
		if _, err := st.ExecContext(ctx, id, k); err != nil {
			return Batch{}, false, fmt.Errorf("assigning requests to batch %d: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return Batch{}, false, fmt.Errorf("recording batch %d: %w", id, err)
	}
	return Batch{ID: id, Endpoint: endpoint, State: BatchPrepared, Requests: int64(len(keys)), Fallback: fallback, Created: now, Updated: now}, true, nil
}

// BatchLines calls fn for each request of batch id, in key order, with its
// body.
func (l *Ledger) BatchLines(ctx context.Context, id int64, fn func(key string, body []byte) error) (err error) {
	defer l.classify(&err)
	rows, err := l.r.QueryContext(ctx, `SELECT key, body FROM batch_requests WHERE batch_id = ? AND state = 'submitted' ORDER BY key`, id)
	if err != nil {
		return fmt.Errorf("reading the requests of batch %d: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var b []byte
		if err := rows.Scan(&k, &b); err != nil {
			return err
		}
		if err := fn(k, b); err != nil {
			return err
		}
	}
	return rows.Err()
}

// QueuedRequests calls fn for each queued request of stage (every stage
// when stage is ""), in key order, with its body: what `ac3 batch export`
// writes.
func (l *Ledger) QueuedRequests(ctx context.Context, stage string, fn func(r BatchRequest, body []byte) error) (err error) {
	defer l.classify(&err)
	rows, err := l.r.QueryContext(ctx, `SELECT key, endpoint, role, stage, body FROM batch_requests WHERE state = 'queued' AND (? = '' OR stage = ?) ORDER BY key`, stage, stage)
	if err != nil {
		return fmt.Errorf("reading queued batch requests: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		r := BatchRequest{State: ReqQueued}
		var b []byte
		if err := rows.Scan(&r.Key, &r.Endpoint, &r.Role, &r.Stage, &b); err != nil {
			return err
		}
		if err := fn(r, b); err != nil {
			return err
		}
	}
	return rows.Err()
}

const batchCols = `id, endpoint, state, remote_status, input_file, remote_id, output_file, error_file, requests, completed, failed, imported, fallback, errors, created, updated`

func scanBatch(s rowScanner) (Batch, error) {
	var b Batch
	var created, updated string
	err := s.Scan(&b.ID, &b.Endpoint, &b.State, &b.RemoteStatus, &b.InputFile, &b.RemoteID, &b.OutputFile, &b.ErrorFile,
		&b.Requests, &b.Completed, &b.Failed, &b.Imported, &b.Fallback, &b.Errors, &created, &updated)
	b.Created, _ = time.Parse(time.RFC3339, created)
	b.Updated, _ = time.Parse(time.RFC3339, updated)
	return b, err
}

// Batches returns the run's batches, oldest first; only those not yet
// imported when live. A run file made before batches existed has none.
func (l *Ledger) Batches(ctx context.Context, live bool) (_ []Batch, err error) {
	defer l.classify(&err)
	var n int
	if err := l.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'batches'`).Scan(&n); err != nil || n == 0 {
		return nil, err
	}
	q := `SELECT ` + batchCols + ` FROM batches`
	if live {
		q += ` WHERE state != 'imported'`
	}
	var out []Batch
	err = l.query(ctx, func(s rowScanner) error {
		b, err := scanBatch(s)
		out = append(out, b)
		return err
	}, q+` ORDER BY id`)
	return out, err
}

// UpdateBatch records what is known of a batch: its state, file ids,
// remote id and status, counts and errors.
func (l *Ledger) UpdateBatch(ctx context.Context, b Batch) (err error) {
	defer l.classify(&err)
	_, err = l.w.ExecContext(context.WithoutCancel(ctx), `UPDATE batches SET state = ?, remote_status = ?, input_file = ?, remote_id = ?, output_file = ?, error_file = ?, completed = ?, failed = ?, errors = ?, updated = ? WHERE id = ?`,
		b.State, b.RemoteStatus, b.InputFile, b.RemoteID, b.OutputFile, b.ErrorFile, b.Completed, b.Failed, b.Errors, time.Now().UTC().Format(time.RFC3339), b.ID)
	if err != nil {
		return fmt.Errorf("recording batch %d: %w", b.ID, err)
	}
	return nil
}

// LookupBatchRequest returns the request with key, if the run asked for it.
func (l *Ledger) LookupBatchRequest(ctx context.Context, key string) (_ BatchRequest, _ bool, err error) {
	defer l.classify(&err)
	r := BatchRequest{Key: key}
	var bid sql.NullInt64
	err = l.w.QueryRowContext(ctx, `SELECT endpoint, role, stage, state, batch_id, submits, status, error FROM batch_requests WHERE key = ?`, key).
		Scan(&r.Endpoint, &r.Role, &r.Stage, &r.State, &bid, &r.Submits, &r.Status, &r.Error)
	if errors.Is(err, sql.ErrNoRows) {
		return BatchRequest{}, false, nil
	}
	if err != nil {
		return BatchRequest{}, false, fmt.Errorf("reading batch request %s: %w", key, err)
	}
	r.BatchID = bid.Int64
	return r, true, nil
}

// ImportAnswer stores the answer to a batch request in the cache and
// records its call, in one transaction, exactly once: only a request still
// waiting for it (submitted in batch batchID; or, with batchID 0, queued or
// submitted in any batch, as a results file imported by hand is) is
// settled, and it reports false for any other (already imported, or no
// longer waiting).
func (l *Ledger) ImportAnswer(ctx context.Context, batchID int64, key string, cr llm.CachedResponse, rec llm.CallRecord) (_ bool, err error) {
	defer l.classify(&err)
	ctx = context.WithoutCancel(ctx)
	b, err := json.Marshal(cr)
	if err != nil {
		return false, err
	}
	l.spendMu.Lock()
	defer l.spendMu.Unlock()
	tx, err := l.w.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	var res sql.Result
	if batchID > 0 {
		res, err = tx.ExecContext(ctx, `UPDATE batch_requests SET state = 'done', body = x'', status = 0, error = '' WHERE key = ? AND batch_id = ? AND state = 'submitted'`, key, batchID)
	} else {
		res, err = tx.ExecContext(ctx, `UPDATE batch_requests SET state = 'done', body = x'', status = 0, error = '' WHERE key = ? AND state IN ('queued', 'submitted')`, key)
	}
	if err != nil {
		return false, fmt.Errorf("settling batch request %s: %w", key, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	now := time.Now().UTC()
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO llm_cache (key, response, created) VALUES (?, ?, ?)`, key, b, now.Format(time.RFC3339)); err != nil {
		return false, fmt.Errorf("storing a batch answer in the cache: %w", err)
	}
	c := rec
	if _, err := tx.ExecContext(ctx, `INSERT INTO llm_calls (role, stage, endpoint, model, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_usd, latency_ms, attempts, status, error, from_cache, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.Role, c.Stage, c.Endpoint, c.Model, c.Usage.Prompt, c.Usage.Completion, c.Usage.CachedPrompt, c.Usage.Reasoning, c.CostUSD, c.Latency.Milliseconds(), c.Attempts, c.Status, c.Error, c.FromCache, c.Time.UTC().Format(time.RFC3339Nano)); err != nil {
		return false, fmt.Errorf("recording a batch answer: %w", err)
	}
	if batchID > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE batches SET imported = imported + 1 WHERE id = ?`, batchID); err != nil {
			return false, err
		}
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("importing batch answer %s: %w", key, err)
	}
	if l.spendKnown {
		l.spend += c.CostUSD
	}
	return true, nil
}

// SettleRequest moves a request of batch batchID that is still submitted
// to state (queued, online or failed) with the HTTP status and error its
// line gave. It reports false when the request was not waiting in that
// batch (settled already, or never part of it).
func (l *Ledger) SettleRequest(ctx context.Context, batchID int64, key, state string, status int, msg string) (_ bool, err error) {
	defer l.classify(&err)
	res, err := l.w.ExecContext(context.WithoutCancel(ctx), `UPDATE batch_requests SET state = ?, batch_id = CASE WHEN ? = 'queued' THEN NULL ELSE batch_id END, status = ?, error = ? WHERE key = ? AND batch_id = ? AND state = 'submitted'`,
		state, state, status, msg, key, batchID)
	if err != nil {
		return false, fmt.Errorf("settling batch request %s: %w", key, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// Unsettled calls fn for the requests of batch batchID still submitted
// (no line of its output or error file answered them), in key order.
func (l *Ledger) Unsettled(ctx context.Context, batchID int64, fn func(r BatchRequest) error) (err error) {
	defer l.classify(&err)
	var reqs []BatchRequest
	err = l.query(ctx, func(s rowScanner) error {
		r := BatchRequest{BatchID: batchID, State: ReqSubmitted}
		if err := s.Scan(&r.Key, &r.Endpoint, &r.Role, &r.Stage, &r.Submits); err != nil {
			return err
		}
		reqs = append(reqs, r)
		return nil
	}, `SELECT key, endpoint, role, stage, submits FROM batch_requests WHERE batch_id = ? AND state = 'submitted' ORDER BY key`, batchID)
	if err != nil {
		return fmt.Errorf("reading unsettled requests of batch %d: %w", batchID, err)
	}
	for _, r := range reqs {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// BatchRequestCounts counts the run's batch requests by state.
func (l *Ledger) BatchRequestCounts(ctx context.Context) (_ map[string]int64, err error) {
	defer l.classify(&err)
	out := map[string]int64{}
	var n int
	if err := l.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'batch_requests'`).Scan(&n); err != nil || n == 0 {
		return out, err
	}
	err = l.query(ctx, func(s rowScanner) error {
		var st string
		var c int64
		if err := s.Scan(&st, &c); err != nil {
			return err
		}
		out[st] = c
		return nil
	}, `SELECT state, count(*) FROM batch_requests GROUP BY state`)
	return out, err
}

// WaitingBatchUSD sums the estimated cost of the requests queued or in a
// live batch: spend a resumed run's budget holds for them.
func (l *Ledger) WaitingBatchUSD(ctx context.Context) (_ float64, err error) {
	defer l.classify(&err)
	var v float64
	err = l.r.QueryRowContext(ctx, `SELECT coalesce(sum(est_usd), 0) FROM batch_requests WHERE state IN ('queued', 'submitted')`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("summing waiting batch requests: %w", err)
	}
	return v, nil
}
