package memgov

import (
	"context"
	"fmt"
	"time"
)

// The ceilings of the commands' governors: each command's working set
// measured at ten thousand conversations, with the room the collector
// needs. A ceiling must sit above what a command reaches by itself: one
// below it makes the command pay in collections for as long as it runs,
// which is why `just bench-scale` measures every command against
// --memory-limit off.
const (
	// Readers fold over a run in pages (export, report, status, inspect,
	// the dry run): one page of conversations and one Parquet row group,
	// whose columns are compressed side by side. The Parquet exports of
	// conversations and contexts reach about 240 MB by themselves; the
	// others stay far below.
	Readers int64 = 320 << 20
	// Writers are every other command that writes a run: a page of
	// conversations, a commit batch bounded by count and bytes, the
	// tokenizer's tables.
	Writers int64 = 112 << 20
	// Ingest holds the input's decompression window, the JSON reader and
	// one commit batch.
	Ingest int64 = 64 << 20
	// Convert holds the decoders' batches in flight on every core, the
	// Parquet row group being filled and the one being encoded, whose
	// columns are compressed side by side (about 215 MB of RSS by itself on
	// two cores; the row groups' large text buffers, a few tens of MB, are
	// mapped outside the Go heap, so this limit does not count them: see
	// io/parquetio's chunks.go).
	Convert int64 = 320 << 20
)

// Interval is how often a command's governor samples the process.
const Interval = time.Second

// Usage describes the setting for a command's --help, naming the ceilings
// above.
var Usage = fmt.Sprintf("soft limit on the Go heap, e.g. 512MiB or 2GiB, held for the whole command; 'off' for none. "+
	"Default: governed, i.e. a quarter above what the command needed in its first seconds (15 s and ten collections) "+
	"and raised when the collector starts to cost CPU, never above %dMiB for the commands that read a run in pages "+
	"(export, report, status, inspect, run --dry-run), %dMiB for ingest, %dMiB for convert, %dMiB for the others; "+
	"GOMEMLIMIT, when set, wins", Readers>>20, Ingest>>20, Convert>>20, Writers>>20)

// Start applies a command's memory setting through set (the runtime's
// debug.SetMemoryLimit in a real process). setting is what the user gave
// (--memory-limit or AC3_MEMORY_LIMIT): a fixed limit is set for the whole
// command, "off" sets none, and "" starts a governor under the writers'
// ceiling, sampling every interval until ctx ends (interval 0: the caller
// drives it; set nil: nothing is set). goMemLimit is GOMEMLIMIT from the environment: the runtime's
// own setting wins over all of this. The governor returned, when there is
// one, takes a command's own ceiling through SetCeiling.
func Start(ctx context.Context, setting, goMemLimit string, set func(int64), interval time.Duration) (*Governor, error) {
	if goMemLimit != "" {
		return nil, nil
	}
	if setting != "" {
		n, err := ParseLimit(setting)
		if err != nil {
			return nil, fmt.Errorf("--memory-limit %q: %w", setting, err)
		}
		if n > 0 && set != nil {
			set(n)
		}
		return nil, nil
	}
	if set == nil {
		return nil, nil
	}
	g := New(DefaultPolicy(Writers), set)
	if interval > 0 {
		go g.Run(ctx, interval)
	}
	return g, nil
}
