package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
)

// DropNearDuplicate is the drop reason of a conversation whose user turns
// nearly repeat those of a conversation kept before it.
const DropNearDuplicate = "near_duplicate"

// NearDedupe tells CommitIngest how to drop near duplicates. The index it
// searches is in the run file (migration 0009): each kept conversation's
// signature and its band keys, written in the batch's transaction, so the
// memory it takes does not grow with the run and a batch's decisions are
// committed, or lost, with the batch.
//
// Each conversation is compared, in batch order, with the kept
// conversations that share a band key with it (earlier batches' and this
// batch's alike), so which conversations are kept depends on the input
// order only, not on batch sizes or on where an ingest was interrupted.
type NearDedupe struct {
	// Sketch returns a conversation's signature and band keys; ok false
	// means it has nothing to compare (no user text): it is kept and not
	// indexed.
	Sketch func(c *conv.Conversation) (sig []byte, bands []int64, ok bool)
	// Similarity estimates the similarity of two signatures from Sketch;
	// an error means a stored one is damaged.
	Similarity func(a, b []byte) (float64, error)
	// Threshold is the similarity at or above which a conversation is
	// dropped.
	Threshold float64
}

// nearPerBand bounds how many kept conversations of one band are compared
// with a new one (the newest first). A band shared by thousands of kept
// conversations, all below the threshold with each other (prompts from one
// template), would otherwise make every look-up read all of them: the
// work per conversation, and so a run's speed, would grow with the run.
const nearPerBand = 64

// nearIndex is the near-duplicate index within one ingest transaction.
// A conversation's look-up is one statement and its indexing one more,
// whatever its number of bands: a statement per band would pay a round
// trip into SQLite (cgo, bind, reset) per band for searches that mostly
// find nothing.
type nearIndex struct {
	nd             *NearDedupe
	tx             *sql.Tx
	addSig, record *sql.Stmt
	// By number of bands (one number per run in practice).
	lookUp, addBands map[int]*sql.Stmt
	args             []any
}

func prepareNear(ctx context.Context, tx *sql.Tx, nd *NearDedupe) (*nearIndex, error) {
	x := &nearIndex{nd: nd, tx: tx, lookUp: map[int]*sql.Stmt{}, addBands: map[int]*sql.Stmt{}}
	var err error
	if x.addSig, err = tx.PrepareContext(ctx, `INSERT INTO near_signatures (conv_seq, sig) VALUES (?, ?)`); err != nil {
		return nil, fmt.Errorf("preparing the near-duplicate index: %w", err)
	}
	if x.record, err = tx.PrepareContext(ctx, `INSERT INTO near_duplicates (input_id, source_line, source_row, dropped_id, kept_seq, similarity) VALUES (?, ?, ?, ?, ?, ?)`); err != nil {
		x.close()
		return nil, fmt.Errorf("preparing the near-duplicate index: %w", err)
	}
	return x, nil
}

func (x *nearIndex) close() {
	for _, s := range []*sql.Stmt{x.addSig, x.record} {
		if s != nil {
			s.Close()
		}
	}
	for _, m := range []map[int]*sql.Stmt{x.lookUp, x.addBands} {
		for _, s := range m {
			s.Close()
		}
	}
}

// stmt returns the statement of cache for n bands, preparing it with q(n)
// the first time.
func (x *nearIndex) stmt(ctx context.Context, cache map[int]*sql.Stmt, n int, q func(int) string) (*sql.Stmt, error) {
	if st, ok := cache[n]; ok {
		return st, nil
	}
	st, err := x.tx.PrepareContext(ctx, q(n))
	if err != nil {
		return nil, fmt.Errorf("preparing the near-duplicate index: %w", err)
	}
	cache[n] = st
	return st, nil
}

// lookUpSQL selects the signature of every kept conversation among the
// newest nearPerBand of each of n bands, each once.
func lookUpSQL(n int) string {
	var b strings.Builder
	b.WriteString(`SELECT c.conv_seq, s.sig FROM (`)
	for i := range n {
		if i > 0 {
			b.WriteString(` UNION `)
		}
		fmt.Fprintf(&b, `SELECT conv_seq FROM (SELECT conv_seq FROM near_bands WHERE band_key = ? ORDER BY conv_seq DESC LIMIT %d)`, nearPerBand)
	}
	b.WriteString(`) c JOIN near_signatures s ON s.conv_seq = c.conv_seq`)
	return b.String()
}

// addBandsSQL inserts n band keys of one conversation.
func addBandsSQL(n int) string {
	return `INSERT OR IGNORE INTO near_bands (band_key, conv_seq) VALUES ` + strings.TrimSuffix(strings.Repeat(`(?, ?), `, n), `, `)
}

// nearSketch is one conversation's signature and band keys.
type nearSketch struct {
	sig   []byte
	bands []int64
	ok    bool
}

// check sketches c and looks for the kept conversation it is most similar
// to, at or above the threshold (ties go to the earlier one). When there is
// one it records the pair and reports drop.
func (x *nearIndex) check(ctx context.Context, l *Ledger, inputID int64, c *conv.Conversation) (sk nearSketch, drop bool, err error) {
	sk.sig, sk.bands, sk.ok = x.nd.Sketch(c)
	if !sk.ok || len(sk.bands) == 0 {
		sk.ok = false
		return sk, false, nil
	}
	st, err := x.stmt(ctx, x.lookUp, len(sk.bands), lookUpSQL)
	if err != nil {
		return sk, false, err
	}
	x.args = x.args[:0]
	for _, key := range sk.bands {
		x.args = append(x.args, key)
	}
	rows, err := st.QueryContext(ctx, x.args...)
	if err != nil {
		return sk, false, fmt.Errorf("looking up near duplicates of %s: %w", c.ID, err)
	}
	defer rows.Close()
	best, bestSim := int64(0), -1.0
	for rows.Next() {
		var seq int64
		var sig []byte
		if err := rows.Scan(&seq, &sig); err != nil {
			return sk, false, fmt.Errorf("looking up near duplicates of %s: %w", c.ID, err)
		}
		sim, err := x.nd.Similarity(sk.sig, sig)
		if err != nil {
			return sk, false, l.damaged("comparing %s with kept conversation seq %d: %w", c.ID, seq, err)
		}
		if sim >= x.nd.Threshold && (sim > bestSim || sim == bestSim && seq < best) {
			best, bestSim = seq, sim
		}
	}
	if err := rows.Err(); err != nil {
		return sk, false, fmt.Errorf("looking up near duplicates of %s: %w", c.ID, err)
	}
	rows.Close()
	if bestSim < 0 {
		return sk, false, nil
	}
	if _, err := x.record.ExecContext(ctx, inputID, c.Source.Line, c.Source.Row, c.ID, best, bestSim); err != nil {
		return sk, false, fmt.Errorf("recording %s as a near duplicate: %w", c.ID, err)
	}
	return sk, true, nil
}

// add indexes the kept conversation seq.
func (x *nearIndex) add(ctx context.Context, seq int64, sk nearSketch) error {
	if !sk.ok {
		return nil
	}
	if _, err := x.addSig.ExecContext(ctx, seq, sk.sig); err != nil {
		return fmt.Errorf("indexing conversation seq %d for near duplicates: %w", seq, err)
	}
	st, err := x.stmt(ctx, x.addBands, len(sk.bands), addBandsSQL)
	if err != nil {
		return err
	}
	x.args = x.args[:0]
	for _, key := range sk.bands {
		x.args = append(x.args, key, seq)
	}
	if _, err := st.ExecContext(ctx, x.args...); err != nil {
		return fmt.Errorf("indexing conversation seq %d for near duplicates: %w", seq, err)
	}
	return nil
}

// statusNearPairs is how many near-duplicate pairs Status shows.
const statusNearPairs = 3

// NearPair is a conversation dropped as a near duplicate and the kept
// conversation it matched.
type NearPair struct {
	// ID is the pair's number, in the order the drops were decided.
	ID int64 `json:"id"`
	// DroppedID is the dropped conversation's id; File, Line and Row say
	// where it was read (Line for text formats, Row for columnar ones).
	DroppedID string `json:"dropped_id"`
	File      string `json:"file"`
	Line      int64  `json:"line"`
	Row       int64  `json:"row"`
	// KeptID and KeptSeq name the kept conversation.
	KeptID  string `json:"kept_id"`
	KeptSeq int64  `json:"kept_seq"`
	// Similarity is the estimated Jaccard similarity of their user turns.
	Similarity float64 `json:"similarity"`
}

// NearDuplicatePage returns up to limit near-duplicate pairs with ID >
// after, in the order the drops were decided; none for a run made before
// near-duplicate detection existed. Callers page with the last ID they
// saw, so no read transaction stays open while they work.
func (l *Ledger) NearDuplicatePage(ctx context.Context, after int64, limit int) (_ []NearPair, err error) {
	defer l.classify(&err)
	if ok, err := l.hasTable(ctx, "near_duplicates"); err != nil || !ok {
		return nil, err
	}
	rows, err := l.r.QueryContext(ctx, `SELECT n.id, n.dropped_id, i.path, n.source_line, n.source_row, c.id, n.kept_seq, n.similarity
		FROM near_duplicates n JOIN inputs i ON i.id = n.input_id JOIN conversations c ON c.seq = n.kept_seq
		WHERE n.id > ? ORDER BY n.id LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("reading near duplicates: %w", err)
	}
	defer rows.Close()
	var out []NearPair
	for rows.Next() {
		var p NearPair
		if err := rows.Scan(&p.ID, &p.DroppedID, &p.File, &p.Line, &p.Row, &p.KeptID, &p.KeptSeq, &p.Similarity); err != nil {
			return nil, fmt.Errorf("reading near duplicates: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading near duplicates: %w", err)
	}
	return out, nil
}

// EachNearDuplicate calls fn for every near-duplicate pair in the order the
// drops were decided, a page at a time. It stops at the first error fn
// returns.
func (l *Ledger) EachNearDuplicate(ctx context.Context, fn func(NearPair) error) error {
	const page = 1000
	after := int64(0)
	for {
		ps, err := l.NearDuplicatePage(ctx, after, page)
		if err != nil {
			return err
		}
		for _, p := range ps {
			if err := fn(p); err != nil {
				return err
			}
		}
		if len(ps) < page {
			return nil
		}
		after = ps[len(ps)-1].ID
	}
}

// hasTable reports whether the run file has table name: a run opened
// read-only is not migrated and may predate it.
func (l *Ledger) hasTable(ctx context.Context, name string) (bool, error) {
	var n int
	if err := l.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&n); err != nil {
		return false, fmt.Errorf("looking for table %s: %w", name, err)
	}
	return n > 0, nil
}
