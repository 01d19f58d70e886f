package ledger

import (
	"context"
	"errors"
)

// MergeOptions tune Merge.
type MergeOptions struct {
	// Force replaces an existing output file.
	Force bool
}

// MergeReport says what Merge built.
type MergeReport struct {
	Shards                      int
	Conversations, Units, Calls int64
}

// Merge builds one run file at out from the run files of every shard of a
// sharded run.
func Merge(ctx context.Context, out string, shards []string, opts MergeOptions) (MergeReport, error) {
	return MergeReport{}, errors.New("merge: not implemented yet")
}
