package run

import (
	"context"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/lic/replay"
)

// Requeue forgets the failed work of stage ("" for every stage) so the
// next run does it again: failed units (ledger.Requeue), and for the LiC
// memory arm (replay.MemoryStage) each chain from its first failed step
// on. It returns the failed tasks and steps it re-queued.
func Requeue(ctx context.Context, l *ledger.Ledger, stage string) (int64, error) {
	var n int64
	if stage != replay.MemoryStage {
		var err error
		if n, err = l.Requeue(ctx, stage); err != nil {
			return n, err
		}
	}
	if stage == "" || stage == replay.MemoryStage {
		k, err := replay.RequeueFailed(ctx, l)
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
