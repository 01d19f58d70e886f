package ledger

import (
	"context"
	"fmt"
	"sync"
)

// groupCommit commits the one-row writes that many goroutines make at the
// same moment (an answer for the cache, a row per model call) together, in
// one transaction, and returns to each caller only once its own row is
// committed: durability per call is unchanged, but writes that arrive while
// a commit (or the engine's batch) holds the connection wait for it and then
// share the next commit instead of taking one each.
//
// The first writer to arrive while no commit is under way leads: it takes
// every queued write, commits them, hands each its result, and passes the
// lead to the oldest write queued meanwhile, if any. So no goroutine commits
// for others indefinitely, and no extra goroutine outlives the ledger.
type groupCommit struct {
	l       *Ledger
	mu      sync.Mutex
	queue   []*groupWrite
	leading bool
}

// groupWrite is one statement waiting for a group commit.
type groupWrite struct {
	query string
	args  []any
	// after runs once the row is committed, while the commit still holds
	// spendMu (the recorder adds the call's cost to the running total).
	after func()
	done  chan error    // the commit's outcome for this write
	lead  chan struct{} // this write's goroutine is to commit the queue
}

// exec queues one statement and returns once it is committed or has failed.
// ctx is not consulted: the writes it takes record calls already paid for.
func (g *groupCommit) exec(ctx context.Context, query string, args []any, after func()) error {
	w := &groupWrite{query: query, args: args, after: after, done: make(chan error, 1), lead: make(chan struct{}, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, w)
	if !g.leading {
		g.leading = true
		w.lead <- struct{}{}
	}
	g.mu.Unlock()
	for {
		select {
		case err := <-w.done:
			return err
		case <-w.lead:
			g.flush(context.WithoutCancel(ctx))
		}
	}
}

// flush commits what is queued, then passes the lead on.
func (g *groupCommit) flush(ctx context.Context) {
	g.mu.Lock()
	batch := g.queue
	g.queue = nil
	g.mu.Unlock()

	if err := g.commit(ctx, batch); err != nil {
		// One transaction for all failed: commit each alone, so a write
		// fails only for its own reason (the disk being full fails them all
		// again, with the same error each).
		for _, w := range batch {
			w.done <- g.commit(ctx, []*groupWrite{w})
		}
	} else {
		for _, w := range batch {
			w.done <- nil
		}
	}

	g.mu.Lock()
	if len(g.queue) > 0 {
		g.queue[0].lead <- struct{}{}
	} else {
		g.leading = false
	}
	g.mu.Unlock()
}

// commit writes batch in one transaction and runs the writes' after hooks
// once it is committed. It holds spendMu throughout, so a SpendUSD that sums
// llm_calls never sees a committed call whose cost the running total lacks,
// nor the reverse.
func (g *groupCommit) commit(ctx context.Context, batch []*groupWrite) (err error) {
	if err := g.l.checkWAL(ctx); err != nil {
		return err
	}
	g.l.spendMu.Lock()
	defer g.l.spendMu.Unlock()
	tx, err := g.l.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	for _, w := range batch {
		if _, err := tx.ExecContext(ctx, w.query, w.args...); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing: %w", err)
	}
	for _, w := range batch {
		if w.after != nil {
			w.after()
		}
	}
	return g.l.checkWAL(ctx)
}
