package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
)

// Unit and task statuses as stored.
const (
	Done   = "done"
	Failed = "failed"
)

// UnitKey is the deterministic key of a unit of work: the same stage,
// conversation, turn, variant and version give the same key in every run.
func UnitKey(stage, convID string, turn int, variant, version string) string {
	h := sha256.New()
	for _, s := range []string{stage, convID, strconv.Itoa(turn), variant, version} {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// TaskID names one stage variant over one conversation.
type TaskID struct {
	Stage   string
	Variant string
	Version string
	ConvSeq int64
}

// UnitResult is the outcome of one unit (one turn) of a task.
type UnitResult struct {
	Turn     int
	Status   string // Done or Failed
	Attempts int
	Error    string
	Raw      string // a model's raw answer, kept when parsing it failed
	Output   []byte
	Tokens   int64
}

// TaskResult is the outcome of a task with every unit it produced.
type TaskResult struct {
	TaskID
	ConvID   string
	Status   string // Done when every unit is done, else Failed
	Attempts int
	Error    string
	Units    []UnitResult
}

// Size is about how many bytes the result holds: its units' outputs, raw
// answers and errors.
func (r *TaskResult) Size() int {
	n := len(r.Error)
	for _, u := range r.Units {
		n += len(u.Output) + len(u.Raw) + len(u.Error)
	}
	return n
}

// CommitTasks stores finished tasks and their units in one transaction. A
// task stored again replaces its earlier row and units, which is how a failed
// task that is retried ends up done.
func (l *Ledger) CommitTasks(ctx context.Context, results []TaskResult) (err error) {
	defer l.classify(&err)
	if len(results) == 0 {
		return nil
	}
	if err := l.checkWAL(ctx); err != nil {
		return err
	}
	tx, err := l.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("committing %d tasks: %w", len(results), err)
	}
	defer tx.Rollback()
	taskStmt, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO tasks (stage, variant, version, conv_seq, status, attempts, error, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer taskStmt.Close()
	unitStmt, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO units (key, stage, conversation_id, conv_seq, turn, variant, version, status, attempts, error, raw, output, tokens, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer unitStmt.Close()
	now := time.Now().UTC().Format(time.RFC3339)
	for _, t := range results {
		if _, err := taskStmt.ExecContext(ctx, t.Stage, t.Variant, t.Version, t.ConvSeq, t.Status, t.Attempts, t.Error, now); err != nil {
			return fmt.Errorf("storing task %s/%s of %s: %w", t.Stage, t.Variant, t.ConvID, err)
		}
		for _, u := range t.Units {
			key := UnitKey(t.Stage, t.ConvID, u.Turn, t.Variant, t.Version)
			reason := ""
			if u.Status == Failed {
				reason = FailureReason(u.Error)
			}
			if _, err := unitStmt.ExecContext(ctx, key, t.Stage, t.ConvID, t.ConvSeq, u.Turn, t.Variant, t.Version, u.Status, u.Attempts, u.Error, u.Raw, u.Output, u.Tokens, reason); err != nil {
				return fmt.Errorf("storing unit %s/%s of %s turn %d: %w", t.Stage, t.Variant, t.ConvID, u.Turn, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing %d tasks: %w", len(results), err)
	}
	return l.checkWAL(ctx)
}

// Variant is one configured variant of a stage and its current version.
type Variant struct {
	Name    string
	Version string
}

// TaskStates returns the stored status of every task of stage among variants
// for conversations with after < seq <= upto. Tasks of other versions are
// ignored: a changed setting makes its tasks pending again.
//
// It asks once per variant, so each query is a range of the tasks' primary
// key: one query with the variants OR-ed together makes SQLite scan every
// task of the stage, for every page the planner reads.
func (l *Ledger) TaskStates(ctx context.Context, stage string, variants []Variant, after, upto int64) (_ map[TaskID]string, err error) {
	defer l.classify(&err)
	out := map[TaskID]string{}
	for _, v := range variants {
		if err := l.taskStates(ctx, stage, v, after, upto, func(seq int64, st string) {
			out[TaskID{Stage: stage, Variant: v.Name, Version: v.Version, ConvSeq: seq}] = st
		}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (l *Ledger) taskStates(ctx context.Context, stage string, v Variant, after, upto int64, fn func(seq int64, status string)) error {
	rows, err := l.r.QueryContext(ctx, `SELECT conv_seq, status FROM tasks WHERE stage = ? AND variant = ? AND version = ? AND conv_seq > ? AND conv_seq <= ?`, stage, v.Name, v.Version, after, upto)
	if err != nil {
		return fmt.Errorf("reading %s/%s task states: %w", stage, v.Name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var st string
		if err := rows.Scan(&seq, &st); err != nil {
			return fmt.Errorf("reading %s/%s task states: %w", stage, v.Name, err)
		}
		fn(seq, st)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading %s/%s task states: %w", stage, v.Name, err)
	}
	return nil
}

// TaskCounts reports done and failed tasks of one stage variant version,
// over conversations of every origin.
func (l *Ledger) TaskCounts(ctx context.Context, stage string, v Variant) (done, failed int64, err error) {
	return l.In(AllOrigins).TaskCounts(ctx, stage, v)
}

// Unit is a stored unit.
type Unit struct {
	Key     string
	ConvID  string
	ConvSeq int64
	Turn    int
	Variant string
	Version string
	Status  string
	Error   string
	Raw     string
	Output  []byte
	Tokens  int64
}

// Units calls fn for every unit of stage among variants whose conversation has
// after < seq <= upto, ordered by conversation, turn and variant name, so an
// export is the same bytes whatever order the work was done in.
func (l *Ledger) Units(ctx context.Context, stage string, variants []Variant, after, upto int64, fn func(Unit) error) error {
	return l.In(AllOrigins).Units(ctx, stage, variants, after, upto, fn)
}

// ConversationUnits returns the units of stage for one conversation and turn
// (turn 0 means every turn), across all versions, newest version first is not
// implied: callers filter by the variants they want.
func (l *Ledger) ConversationUnits(ctx context.Context, stage, convID string, turn int) (_ []Unit, err error) {
	defer l.classify(&err)
	q := `SELECT key, conversation_id, conv_seq, turn, variant, version, status, error, raw, output, tokens FROM units WHERE stage = ? AND conversation_id = ?`
	args := []any{stage, convID}
	if turn > 0 {
		q += ` AND turn = ?`
		args = append(args, turn)
	}
	rows, err := l.r.QueryContext(ctx, q+` ORDER BY turn, variant`, args...)
	if err != nil {
		return nil, fmt.Errorf("reading units of %s: %w", convID, err)
	}
	defer rows.Close()
	var out []Unit
	for rows.Next() {
		var u Unit
		if err := rows.Scan(&u.Key, &u.ConvID, &u.ConvSeq, &u.Turn, &u.Variant, &u.Version, &u.Status, &u.Error, &u.Raw, &u.Output, &u.Tokens); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// Requeue forgets failed tasks (and their units) so the next run does them
// again. An empty stage means every stage. It reports how many tasks it freed.
func (l *Ledger) Requeue(ctx context.Context, stage string) (_ int64, err error) {
	defer l.classify(&err)
	tx, err := l.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("re-queueing failed work: %w", err)
	}
	defer tx.Rollback()
	cond, args := `status = 'failed'`, []any{}
	if stage != "" {
		cond += ` AND stage = ?`
		args = append(args, stage)
	}
	// Units of a failed task may be done; only the failed ones are dropped,
	// and the task row goes so the whole task is planned again.
	if _, err := tx.ExecContext(ctx, `DELETE FROM units WHERE `+cond, args...); err != nil {
		return 0, fmt.Errorf("re-queueing failed units: %w", err)
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM tasks WHERE `+cond, args...)
	if err != nil {
		return 0, fmt.Errorf("re-queueing failed tasks: %w", err)
	}
	n, _ := res.RowsAffected()
	// Count the re-queue per stage so stages can ask models afresh (see
	// RetryGeneration); stage "" bumps every stage that had failures.
	if n > 0 {
		if _, err := tx.ExecContext(ctx, `INSERT INTO run_meta (key, value) VALUES ('retry.' || ?, '1') ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1`, stage); err != nil {
			return 0, fmt.Errorf("counting the re-queue: %w", err)
		}
	}
	return n, tx.Commit()
}

// RetryGeneration reports how many times failed work of stage was re-queued
// (by a call for that stage or for all stages).
func (l *Ledger) RetryGeneration(ctx context.Context, stage string) (_ int, err error) {
	defer l.classify(&err)
	var n int
	err = l.r.QueryRowContext(ctx, `SELECT coalesce(sum(CAST(value AS INTEGER)), 0) FROM run_meta WHERE key IN ('retry.' || ?, 'retry.')`, stage).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("reading retry count of %s: %w", stage, err)
	}
	return n, nil
}
