package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// FailureGroup counts the failed units of one stage variant that share a
// reason, with one of them as an example.
type FailureGroup struct {
	Reason  string     `json:"reason"`
	Units   int64      `json:"units"`
	Example FailedUnit `json:"example"`
}

// FailedUnit is one failed unit, shown as an example of its reason: the
// first in ingest and turn order.
type FailedUnit struct {
	ConvID  string `json:"conversation_id"`
	ConvSeq int64  `json:"conv_seq"`
	Turn    int    `json:"turn"`
	Error   string `json:"error"`
}

// maxReason bounds a reason's length in runes.
const maxReason = 160

// FailureReason reduces a unit's error to the reason it shares with other
// units that failed the same way: quoted text becomes …, each run of digits
// becomes N, a leading "turn N: " is dropped, white space is collapsed, and
// the result is cut at 160 characters. An empty error gives "unknown".
//
// So "parsing model answer (3 tries): invalid character 'x' at offset 17"
// and the same with 'y' at offset 4 share one reason.
func FailureReason(errText string) string {
	var b strings.Builder
	var quote rune
	prevDigit, prevSpace := false, true
	for _, r := range errText {
		if quote != 0 {
			if r == quote {
				quote = 0
			}
			continue
		}
		digit, space := unicode.IsDigit(r), unicode.IsSpace(r)
		switch {
		case r == '\'' || r == '"' || r == '`':
			b.WriteString("…")
			quote = r
		case digit:
			if !prevDigit {
				b.WriteByte('N')
			}
		case space:
			if !prevSpace {
				b.WriteByte(' ')
			}
		default:
			b.WriteRune(r)
		}
		prevDigit, prevSpace = digit, space
	}
	s := strings.TrimSpace(b.String())
	s = strings.TrimPrefix(s, "turn N: ")
	if utf8.RuneCountInString(s) > maxReason {
		s = string([]rune(s)[:maxReason]) + "…"
	}
	if s == "" {
		return "unknown"
	}
	return s
}

// Progress says where every planned stage variant stands (the plans stages
// recorded with SetPlan, in stage then plan order): tasks done, failed and
// never attempted, units done and failed, and the failed units grouped by
// reason with an example of each. A stage with a recorded scope (SetScope)
// is counted over the conversations of its scope only.
//
// Everything is counted by SQLite from indexes; no unit is held in memory,
// so it costs the same whatever the run's size allows (see
// BenchmarkProgress and BenchmarkProgressScoped).
func (l *Ledger) Progress(ctx context.Context) (_ []StageStatus, err error) {
	defer l.classify(&err)
	convs, err := l.countAll(ctx)
	if err != nil {
		return nil, err
	}
	return l.progress(ctx, convs)
}

// progress is Progress with the run's count of conversations (of every
// origin) already read.
func (l *Ledger) progress(ctx context.Context, convs int64) ([]StageStatus, error) {
	plans, err := l.Plans(ctx)
	if err != nil {
		return nil, err
	}
	scopes, err := l.Scopes(ctx)
	if err != nil {
		return nil, err
	}
	stages := make([]string, 0, len(plans))
	for s := range plans {
		stages = append(stages, s)
	}
	sort.Strings(stages)
	out := []StageStatus{}
	counts := map[string]int64{} // conversations per scope, by Scope.String
	for _, s := range stages {
		sp, n, err := l.scopeCount(ctx, scopes[s], convs, counts)
		if err != nil {
			return nil, err
		}
		for _, v := range plans[s] {
			ss, err := l.stageProgress(ctx, s, v, sp, n)
			if err != nil {
				return nil, err
			}
			out = append(out, ss)
		}
	}
	return out, nil
}

// scopeCount splits the run by scope s and counts its conversations, once
// per scope: all is the run's whole count.
func (l *Ledger) scopeCount(ctx context.Context, s Scope, all int64, counts map[string]int64) (split, int64, error) {
	sp, err := l.split(ctx, s)
	if err != nil || sp.all {
		return sp, all, err
	}
	n, ok := counts[s.String()]
	if !ok {
		if n, err = l.countIn(ctx, sp); err != nil {
			return sp, 0, err
		}
		counts[s.String()] = n
	}
	return sp, n, nil
}

// StageProgress says where one stage variant stands, as Progress does for
// every planned one.
func (l *Ledger) StageProgress(ctx context.Context, stage string, v Variant) (_ StageStatus, err error) {
	defer l.classify(&err)
	scope, err := l.StageScope(ctx, stage)
	if err != nil {
		return StageStatus{}, err
	}
	convs, err := l.countAll(ctx)
	if err != nil {
		return StageStatus{}, err
	}
	sp, n, err := l.scopeCount(ctx, scope, convs, map[string]int64{})
	if err != nil {
		return StageStatus{}, err
	}
	return l.stageProgress(ctx, stage, v, sp, n)
}

// stageProgress counts one stage variant over the conversations of sp, of
// which there are convs.
//
// Work stored for conversations outside the scope (done before the scope
// was narrowed) stays in the run but is not counted. Whether there is any
// is seen by comparing the scope's task counts with the variant's whole;
// only then are units counted and failures grouped the slower way, per
// conversation of the scope.
func (l *Ledger) stageProgress(ctx context.Context, stage string, v Variant, sp split, convs int64) (StageStatus, error) {
	ss := StageStatus{Stage: stage, Variant: v.Name, Version: v.Version, Failures: []FailureGroup{}}
	var err error
	if ss.Done, ss.Failed, err = l.taskCountsIn(ctx, sp, stage, v); err != nil {
		return ss, err
	}
	ss.Pending = max(convs-ss.Done-ss.Failed, 0)
	outside := false
	if !sp.all {
		d, f, err := l.taskCountsIn(ctx, split{all: true}, stage, v)
		if err != nil {
			return ss, err
		}
		outside = d+f != ss.Done+ss.Failed
	}
	if outside {
		if ss.UnitsDone, ss.UnitsFailed, err = l.unitCountsIn(ctx, sp, stage, v); err != nil {
			return ss, err
		}
		if ss.UnitsFailed > 0 {
			ss.Failures, err = l.failureGroupsIn(ctx, sp, stage, v)
		}
		return ss, err
	}
	if ss.UnitsDone, ss.UnitsFailed, err = l.unitCountsIn(ctx, split{all: true}, stage, v); err != nil {
		return ss, err
	}
	if ss.UnitsFailed == 0 {
		return ss, nil
	}
	if ss.Failures, err = l.failureGroups(ctx, stage, v); err != nil {
		return ss, err
	}
	return ss, nil
}

// failureGroupsIn groups the failed units of a variant whose conversations
// are in sp, streaming the failed units (few, by the partial index) and
// keeping those whose conversation the origin index places in the scope.
func (l *Ledger) failureGroupsIn(ctx context.Context, sp split, stage string, v Variant) ([]FailureGroup, error) {
	byReason := map[string]*FailureGroup{}
	if len(sp.in) > 0 {
		marks := strings.TrimSuffix(strings.Repeat("?, ", len(sp.in)), ", ")
		args := []any{stage, v.Name, v.Version}
		for _, o := range sp.in {
			args = append(args, o)
		}
		err := l.query(ctx, func(rows rowScanner) error {
			var ex FailedUnit
			var reason string
			if err := rows.Scan(&ex.ConvID, &ex.ConvSeq, &ex.Turn, &ex.Error, &reason); err != nil {
				return err
			}
			if reason == "" {
				reason = FailureReason(ex.Error)
			}
			addFailure(byReason, reason, 1, ex)
			return nil
		}, `SELECT u.conversation_id, u.conv_seq, u.turn, u.error, `+l.reasonCol("u")+` FROM units AS u
			WHERE u.stage = ? AND u.variant = ? AND u.version = ? AND u.status = 'failed'
			AND EXISTS (SELECT 1 FROM conversations AS c INDEXED BY conversations_by_origin WHERE c.origin IN (`+marks+`) AND c.seq = u.conv_seq)`, args...)
		if err != nil {
			return nil, fmt.Errorf("grouping failed %s/%s units: %w", stage, v.Name, err)
		}
	}
	return sortedGroups(byReason), nil
}

// reasonCol selects a unit's stored failure reason, empty for a run file from
// before reasons were kept.
func (l *Ledger) reasonCol(table string) string {
	if l.hasReasons {
		return table + ".reason"
	}
	return "''"
}

// failureGroups groups failed units by reason from the units_failed index
// and reads one example row per group. Failed units without a recorded
// reason (a run file from before reasons were kept, opened read-only, or a
// backfill cut short) are streamed and grouped here by FailureReason; the
// groups are as many as the distinct reasons, never as many as the units.
func (l *Ledger) failureGroups(ctx context.Context, stage string, v Variant) ([]FailureGroup, error) {
	const turnSpan = 1 << 20 // turns per conversation, far above any real one
	byReason := map[string]*FailureGroup{}
	add := func(reason string, n int64, ex FailedUnit) { addFailure(byReason, reason, n, ex) }
	unreasoned := !l.hasReasons
	if l.hasReasons {
		type group struct {
			reason string
			n      int64
			first  int64 // conv_seq and turn of the example, packed
		}
		var groups []group
		err := l.query(ctx, func(rows rowScanner) error {
			var g group
			if err := rows.Scan(&g.reason, &g.n, &g.first); err != nil {
				return err
			}
			groups = append(groups, g)
			return nil
		}, `SELECT reason, count(*), min(conv_seq * ? + turn) FROM units
			WHERE stage = ? AND variant = ? AND version = ? AND status = 'failed' GROUP BY reason`, turnSpan, stage, v.Name, v.Version)
		if err != nil {
			return nil, fmt.Errorf("grouping failed %s/%s units: %w", stage, v.Name, err)
		}
		for _, g := range groups {
			if g.reason == "" {
				unreasoned = true
				continue
			}
			ex := FailedUnit{ConvSeq: g.first / turnSpan, Turn: int(g.first % turnSpan)}
			if err := l.r.QueryRowContext(ctx, `SELECT conversation_id, error FROM units
				WHERE stage = ? AND variant = ? AND version = ? AND status = 'failed' AND reason = ? AND conv_seq = ? AND turn = ? LIMIT 1`,
				stage, v.Name, v.Version, g.reason, ex.ConvSeq, ex.Turn).Scan(&ex.ConvID, &ex.Error); err != nil {
				return nil, fmt.Errorf("reading an example of failed %s/%s units: %w", stage, v.Name, err)
			}
			add(g.reason, g.n, ex)
		}
	}
	if unreasoned {
		q := `SELECT conversation_id, conv_seq, turn, error FROM units WHERE stage = ? AND variant = ? AND version = ? AND status = 'failed'`
		if l.hasReasons {
			q += ` AND reason = ''`
		}
		err := l.query(ctx, func(rows rowScanner) error {
			var ex FailedUnit
			if err := rows.Scan(&ex.ConvID, &ex.ConvSeq, &ex.Turn, &ex.Error); err != nil {
				return err
			}
			add(FailureReason(ex.Error), 1, ex)
			return nil
		}, q, stage, v.Name, v.Version)
		if err != nil {
			return nil, fmt.Errorf("grouping failed %s/%s units: %w", stage, v.Name, err)
		}
	}
	return sortedGroups(byReason), nil
}

// addFailure counts n failed units of reason, keeping the earliest example.
func addFailure(byReason map[string]*FailureGroup, reason string, n int64, ex FailedUnit) {
	g, ok := byReason[reason]
	if !ok {
		byReason[reason] = &FailureGroup{Reason: reason, Units: n, Example: ex}
		return
	}
	g.Units += n
	if less(ex, g.Example) {
		g.Example = ex
	}
}

// sortedGroups lists the groups most frequent first, then by reason.
func sortedGroups(byReason map[string]*FailureGroup) []FailureGroup {
	out := make([]FailureGroup, 0, len(byReason))
	for _, g := range byReason {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Units != out[j].Units {
			return out[i].Units > out[j].Units
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}

// rowScanner is the part of *sql.Rows a row callback needs.
type rowScanner interface{ Scan(dest ...any) error }

// query runs q on the readers and calls fn for each row, closing the rows
// before it returns.
func (l *Ledger) query(ctx context.Context, fn func(rowScanner) error, q string, args ...any) error {
	return eachRow(ctx, l.r, func(rows *sql.Rows) error { return fn(rows) }, q, args...)
}

func less(a, b FailedUnit) bool {
	if a.ConvSeq != b.ConvSeq {
		return a.ConvSeq < b.ConvSeq
	}
	return a.Turn < b.Turn
}

// backfillReasons gives failed units stored before migration 0003 their
// reason, in batches, so every failure is grouped the same way. It reads
// only failed units (through the partial index) and is a no-op once done.
func (l *Ledger) backfillReasons(ctx context.Context) error {
	for {
		rows, err := l.w.QueryContext(ctx, `SELECT id, error FROM units WHERE status = 'failed' AND reason = '' LIMIT 1000`)
		if err != nil {
			return fmt.Errorf("finding failed units without a reason: %w", err)
		}
		type kr struct {
			id     int64
			reason string
		}
		var batch []kr
		for rows.Next() {
			var k int64
			var e string
			if err := rows.Scan(&k, &e); err != nil {
				rows.Close()
				return fmt.Errorf("finding failed units without a reason: %w", err)
			}
			batch = append(batch, kr{k, FailureReason(e)})
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("finding failed units without a reason: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		tx, err := l.w.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("recording failure reasons: %w", err)
		}
		for _, b := range batch {
			if _, err := tx.ExecContext(ctx, `UPDATE units SET reason = ? WHERE id = ?`, b.reason, b.id); err != nil {
				tx.Rollback()
				return fmt.Errorf("recording failure reasons: %w", err)
			}
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("recording failure reasons: %w", err)
		}
	}
}
