package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
)

// Emit stores one conversation a deriving step made, naming the seq of the
// conversation it was made from (0 for none). It returns an error only when
// storing failed; the step should return it.
type Emit func(parent int64, c *conv.Conversation) error

// Visit is one deriving step's work on one parent conversation: it emits
// what it makes of it, now or later (a fold may hold state and emit once
// several parents are in, e.g. a long context stitched from several
// conversations).
type Visit func(ctx context.Context, s ledger.Stored, emit Emit) error

// Each adapts a step that makes conversations from one parent at a time,
// with nothing carried between parents, to a Visit: what fn returns is
// emitted in order, with the visited conversation as parent.
func Each(fn func(ctx context.Context, s ledger.Stored) ([]*conv.Conversation, error)) Visit {
	return func(ctx context.Context, s ledger.Stored, emit Emit) error {
		out, err := fn(ctx, s)
		if err != nil {
			return err
		}
		for _, c := range out {
			if err := emit(s.Seq, c); err != nil {
				return err
			}
		}
		return nil
	}
}

// DeriveOptions tune Derive.
type DeriveOptions struct {
	// Finish, when set, is called once after the last parent, with the same
	// emit: a fold's last, incomplete piece (the context being stitched
	// when the parents ran out) is emitted or dropped there.
	Finish func(ctx context.Context, emit Emit) error
	// PageSize is how many parents are read at a time (default 512).
	PageSize int
	// BatchSize and BatchBytes bound what waits to be stored: at most
	// BatchSize conversations (default 64) of at most BatchBytes (their
	// Size, default 16 MiB), so stitched 100K-token instances do
	// not pile up in memory.
	BatchSize  int
	BatchBytes int
	// Stop, when closed, stops the walk after the parent being visited; what
	// was emitted is stored, and the derivation is left unfinished.
	Stop <-chan struct{}
}

// DeriveSummary says what Derive did.
type DeriveSummary struct {
	Parents  int64 // parents visited
	Added    int64 // conversations stored
	Existing int64 // conversations already stored (a resumed derivation): skipped
	Stopped  bool  // Stop ended the walk before the last parent
}

// Derive walks the conversations of scope in seq order, calls visit on each,
// and stores what it emits as conversations of origin (ledger.AddDerived),
// in emission order; then it calls opts.Finish and records the origin as
// finished (ledger.FinishDerived). Derived conversations are then planned,
// curated, answered, judged and exported like ingested ones, by every stage
// whose scope includes origin.
//
// The rule that makes it deterministic: the seqs derived conversations get
// follow the order they are emitted in, so a run derives the same seqs
// every time only if visit and Finish are deterministic functions of the
// parents they see (no clock, no unseeded randomness, no map order) and of
// finished upstream work. A step that reads another stage's results per
// parent (trajectories a simulator wrote) must therefore run after that
// stage's Barrier, never on a partial result: a parent whose results come
// later would otherwise be stored out of order. Nothing else may add
// conversations to the run while a derivation is unfinished.
//
// Resuming is re-walking: a derivation cut short (Stop, a cancelled ctx, a
// crash) keeps the batches it stored; running it again visits every parent
// again from the first, AddDerived skips the conversations already stored
// (identical ones; a changed one is an ledger.ErrDerivedConflict), and the
// rest get the seqs an uninterrupted run would have given them. Parents
// are read a page at a time and emitted conversations stored in small
// batches, so memory does not grow with the run.
func Derive(ctx context.Context, l *ledger.Ledger, origin string, scope ledger.Scope, visit Visit, opts DeriveOptions) (DeriveSummary, error) {
	var sum DeriveSummary
	if err := ledger.ValidOrigin(origin); err != nil {
		return sum, fmt.Errorf("deriving: %w", err)
	}
	if origin == ledger.OriginSource {
		return sum, fmt.Errorf("deriving: origin %q is for ingested conversations", origin)
	}
	if scope.Has(origin) {
		// Visiting its own output would feed the walk while it runs.
		return sum, fmt.Errorf("deriving %s: its parents' scope (%s) includes the conversations it makes", origin, scope)
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 512
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 64
	}
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = 16 << 20
	}
	type item struct {
		parent int64
		c      *conv.Conversation
	}
	var batch []item
	bytes := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		res, err := l.AddDerived(ctx, origin, func(yield func(int64, *conv.Conversation) bool) {
			for _, it := range batch {
				if !yield(it.parent, it.c) {
					return
				}
			}
		})
		sum.Added += res.Added
		sum.Existing += res.Existing
		if err != nil {
			return fmt.Errorf("deriving %s: %w", origin, err)
		}
		clear(batch)
		batch, bytes = batch[:0], 0
		return nil
	}
	emit := func(parent int64, c *conv.Conversation) error {
		if c == nil {
			return fmt.Errorf("deriving %s from seq %d: emitted no conversation", origin, parent)
		}
		batch = append(batch, item{parent, c})
		bytes += c.Size()
		if len(batch) >= opts.BatchSize || bytes >= opts.BatchBytes {
			return flush()
		}
		return nil
	}
	errStop := errors.New("stopped")
	err := l.In(scope).EachPage(ctx, opts.PageSize, func(page []ledger.Stored, _, _ int64) error {
		for _, s := range page {
			if closed(opts.Stop) {
				return errStop
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := catch(func() error { return visit(ctx, s, emit) }); err != nil {
				return fmt.Errorf("deriving %s from conversation %s: %w", origin, s.Conv.ID, err)
			}
			sum.Parents++
		}
		return nil
	})
	if errors.Is(err, errStop) {
		sum.Stopped = true
		return sum, flush()
	}
	if err != nil {
		// What was emitted before the failure is kept; a resumed walk finds
		// it stored.
		if ferr := flush(); ferr != nil && ctx.Err() == nil {
			err = errors.Join(err, ferr)
		}
		return sum, err
	}
	if opts.Finish != nil {
		if err := catch(func() error { return opts.Finish(ctx, emit) }); err != nil {
			return sum, fmt.Errorf("deriving %s: finishing: %w", origin, err)
		}
	}
	if err := flush(); err != nil {
		return sum, err
	}
	if err := l.FinishDerived(ctx, origin); err != nil {
		return sum, fmt.Errorf("deriving %s: %w", origin, err)
	}
	return sum, nil
}
