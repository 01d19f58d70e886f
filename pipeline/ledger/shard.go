package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ShardInfo is the shard identity a run file records (migration
// 0007_shard.sql). Index is MergedIndex in a run merged from Count shards.
type ShardInfo struct {
	Index  int    `json:"index"`
	Count  int    `json:"count"`
	Scheme string `json:"scheme"`
}

// MergedIndex is the Index of a run merged from shards.
const MergedIndex = -1

// Merged reports whether s is a run merged from shards.
func (s ShardInfo) Merged() bool { return s.Index == MergedIndex }

// Shard returns the shard identity the run records; ok is false for a run
// that is neither a shard nor merged from shards.
func (l *Ledger) Shard(ctx context.Context) (_ ShardInfo, ok bool, err error) {
	defer l.classify(&err)
	var s ShardInfo
	if !l.hasShard {
		return s, false, nil
	}
	err = l.r.QueryRowContext(ctx, `SELECT shard_index, shard_count, scheme FROM shard WHERE id = 1`).Scan(&s.Index, &s.Count, &s.Scheme)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return s, false, nil
	case err != nil:
		return s, false, fmt.Errorf("reading the run's shard: %w", err)
	}
	return s, true, nil
}

// SetShard records the run's shard identity. It refuses to change one
// already recorded.
func (l *Ledger) SetShard(ctx context.Context, s ShardInfo) (err error) {
	defer l.classify(&err)
	_, err = l.w.ExecContext(ctx, `INSERT INTO shard (id, shard_index, shard_count, scheme, created) VALUES (1, ?, ?, ?, ?)`,
		s.Index, s.Count, s.Scheme, time.Now().UTC().Format(time.RFC3339))
	if err != nil {
		return fmt.Errorf("recording the run's shard: %w", err)
	}
	return nil
}

// SetShardStep records the fingerprint of the settings a step ran with.
func (l *Ledger) SetShardStep(ctx context.Context, step, fingerprint string) (err error) {
	defer l.classify(&err)
	_, err = l.w.ExecContext(ctx, `INSERT INTO shard_steps (step, fingerprint) VALUES (?, ?) ON CONFLICT (step) DO UPDATE SET fingerprint = excluded.fingerprint`, step, fingerprint)
	if err != nil {
		return fmt.Errorf("recording the settings of step %s: %w", step, err)
	}
	return nil
}

// ShardSteps returns the fingerprint of each step the shard ran.
func (l *Ledger) ShardSteps(ctx context.Context) (_ map[string]string, err error) {
	defer l.classify(&err)
	out := map[string]string{}
	rows, err := l.r.QueryContext(ctx, `SELECT step, fingerprint FROM shard_steps`)
	if err != nil {
		return nil, fmt.Errorf("reading the steps' settings: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}
